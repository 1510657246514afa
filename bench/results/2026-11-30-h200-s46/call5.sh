#!/usr/bin/env bash
# Session 46, call 5: flash_attn_with_kvcache checks the attention before it appends (the general
# path through gpuattn::check_attention_args, the fast path's check of q). The Python suites that
# need torch (fast path, flash API, FP8) on CPU and CUDA with this tree's module, then
# bench/host_overhead.py A B A B (A: the commit before, its source carried as prev-src.tar.xz):
# the appending decode step's host time must not grow.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s46/call5.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p /tmp/prevsrc && tar xJf carry/prev-src.tar.xz -C /tmp/prevsrc || exit 1
cfg() { cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON > "$2.log" 2>&1 && cmake --build "$2" --target _C -j8 >> "$2.log" 2>&1; }
cfg . /tmp/build-B & pb=$!
cfg /tmp/prevsrc/old /tmp/build-A & pa=$!
wait $pb || { echo "B build failed"; tail -20 /tmp/build-B.log; exit 1; }
ts "B built"
PYTHONPATH=/tmp/build-B/python timeout 200 python3 -m pytest -q -rs tests/python/test_fast_path.py \
  tests/python/test_flash_api.py tests/python/test_fp8_attention.py > $OUT/pytest.txt 2>&1
ts "pytest rc $?"; tail -3 $OUT/pytest.txt; grep -E "^FAILED|refused" $OUT/pytest.txt | head
wait $pa || { echo "A build failed"; tail -20 /tmp/build-A.log; exit 1; }
ts "A built"
for side in A B A B; do
  PYTHONPATH=/tmp/build-$side/python timeout 60 python3 bench/host_overhead.py --rounds 5 \
    --json /tmp/ho-$side-$RANDOM.json > /tmp/ho-$side.txt 2>&1 || { echo "host_overhead $side failed"; tail -5 /tmp/ho-$side.txt; }
  ts "host_overhead $side"; grep -i -E "decode|append" /tmp/ho-$side.txt | head -6
done
cp /tmp/ho-*.json $OUT/ 2>/dev/null; cp /tmp/ho-A.txt $OUT/ho-A.txt; cp /tmp/ho-B.txt $OUT/ho-B.txt
