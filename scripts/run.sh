#!/usr/bin/env bash
# The main job: build, then check accuracy against the fp64 reference and benchmark.
# On a machine with a CUDA GPU this runs the CUDA kernels; otherwise the CPU backend at small sizes.
#   scripts/run.sh [--json-dir DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
json_dir=""
if [ "${1:-}" = "--json-dir" ]; then json_dir=$2; mkdir -p "$json_dir"; fi
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S . -B "$BUILD_DIR" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)" --target gpuattn_cli
"$BUILD_DIR"/tools/gpuattn verify ${json_dir:+--json "$json_dir/verify.json"}
"$BUILD_DIR"/tools/gpuattn bench ${json_dir:+--json "$json_dir/bench.json"}
