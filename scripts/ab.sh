#!/usr/bin/env bash
# A/B timing on the GPU machine: builds tree A (another version of this repository in a directory,
# e.g. `git archive <commit> | tar x -C .snap`, carried to the device as an ignored path) and this
# tree (Release, sm_90a, library + tools + Python module, no tests), then runs the same benchmarks
# A, B, A, B, ... ROUNDS times each, so that both sides see the same machine, clocks and thermal
# state (device runs land on different machines, up to 8% apart). bench/ab_summary.py prints, per
# case, the median over rounds of each side and B/A (time; < 1: B is faster).
#
#   OUT=dir scripts/ab.sh A_DIR [ROUNDS]      (ROUNDS default 3)
#   env: AB_SHAPES=default  gpuattn bench --shapes (quick, seed, sweep, ...; empty: skip)
#        AB_SPARSE=1        bench/sparse_bench.py --no-flex (ours only; 0: skip)
#        AB_PRECISION=standard  gpuattn bench --precision
set -euo pipefail
cd "$(dirname "$0")/.."
A_DIR=${1:?usage: scripts/ab.sh A_DIR [ROUNDS]}
ROUNDS=${2:-3}
[ -f "$A_DIR/CMakeLists.txt" ] || { echo "ab.sh: $A_DIR holds no CMakeLists.txt" >&2; exit 2; }
OUT_DIR=${OUT:-build-ab}/ab
mkdir -p "$OUT_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
SHAPES=${AB_SHAPES-default}
SPARSE=${AB_SPARSE:-1}

build() {  # build SRC_DIR BUILD_DIR
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DGPUATTN_CUDA=ON -DGPUATTN_BUILD_TESTS=OFF >"$OUT_DIR/configure-$(basename "$2").log"
  cmake --build "$2" -j"$(nproc)" >"$OUT_DIR/build-$(basename "$2").log"
}
A_BUILD=$PWD/build-ab-a
B_BUILD=$PWD/build-ab-b
build "$A_DIR" "$A_BUILD" &
a_pid=$!
build . "$B_BUILD"
wait "$a_pid" || { echo "ab.sh: building $A_DIR failed (see $OUT_DIR/build-build-ab-a.log)" >&2; exit 1; }

for ((r = 1; r <= ROUNDS; ++r)); do
  for side in a b; do
    bdir=$A_BUILD
    [ "$side" = b ] && bdir=$B_BUILD
    echo "== round $r, side $side"
    if [ -n "$SHAPES" ]; then
      "$bdir/tools/gpuattn" bench --device cuda --shapes "$SHAPES" \
        --precision "${AB_PRECISION:-standard}" --json "$OUT_DIR/bench-$side-$r.json" \
        >"$OUT_DIR/bench-$side-$r.log"
    fi
    if [ "$SPARSE" = 1 ]; then
      PYTHONPATH="$bdir/python" python3 bench/sparse_bench.py --no-flex \
        --json "$OUT_DIR/sparse-$side-$r.json" >"$OUT_DIR/sparse-$side-$r.log"
    fi
  done
done
python3 bench/ab_summary.py "$OUT_DIR" | tee "$OUT_DIR/summary.md"
# The device tool returns at most 8 files from $OUT: summary.md stays loose, the rest goes into
# one archive.
(
  cd "$OUT_DIR"
  files=$(ls | grep -v -e '^summary.md$' -e '^logs.tar.gz$' || true)
  if [ -n "$files" ]; then
    # shellcheck disable=SC2086
    tar czf logs.tar.gz $files && rm -f $files
  fi
)
