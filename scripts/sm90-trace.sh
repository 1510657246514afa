#!/usr/bin/env bash
# The sm_90a kernel's work-item timeline on the GPU machine: builds a diagnostic copy of the Python
# module with -DGPUATTN_SM90_TRACE=1 (clock64 stamps of CTA 0's producer and consumers at each
# work item's events, printed by the host after each launch; see fwd_sm90.cuh) in build-trace,
# runs each named case of bench/profile_cases.py on it and summarizes the stamps with
# bench/sm90_trace_summary.py.
#
#   OUT=/some/dir scripts/sm90-trace.sh window-1024 causal-short
#   env: SM90_TRACE_FLAGS="-DX=1 ..."  more CUDA flags for the build (e.g. an experiment's switch)
#        SM90_TRACE_BUILD=DIR           the build directory (default build-trace; one per flag set)
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: scripts/sm90-trace.sh CASE..." >&2; exit 2; }
BUILD=${SM90_TRACE_BUILD:-build-trace}
OUT_DIR=${OUT:-$BUILD/trace}
mkdir -p "$OUT_DIR"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON -DGPUATTN_BUILD_TESTS=OFF \
  "-DCMAKE_CUDA_FLAGS=-DGPUATTN_SM90_TRACE=1 ${SM90_TRACE_FLAGS:-}" >/dev/null
cmake --build "$BUILD" -j"$(nproc)" >/dev/null
for c in "$@"; do
  PYTHONPATH="$BUILD/python:bench" python3 bench/profile_cases.py "$c" > "$OUT_DIR/$c-trace.txt"
  echo "== $c"
  python3 bench/sm90_trace_summary.py "$OUT_DIR/$c-trace.txt" | tee "$OUT_DIR/$c-summary.txt"
done
