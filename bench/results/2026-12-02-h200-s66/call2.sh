#!/usr/bin/env bash
# Session 66, call 2 (the Python package built on the CPU machine at 7d1e5e4, carried; the CLI
# built here in the background meanwhile: the tree and both binaries exceed the carry limit):
#  1. cache_leftpad on CUDA: tests/python's leftpad, batch-index, rotary, flash-API and fast-path
#     files with torch on the GPU (the leftpad file's CUDA cases run the decode kernel on one-key
#     pages in place, and the gathered path at Sq 70).
#  2. The cuBLASLt baseline's single-column GEMMs: gpuattn verify --quick (its baseline cases now
#     end with B32 Hq32 Hkv8 Sq1 Sk4096 D128, which failed with INVALID_VALUE), and gpuattn bench
#     of two decode shapes with their baseline. Expectation: both pass / time.
#  3. bench/leftpad_decode.py: the one-key pages' cost against the same keys dense. Expectation:
#     decode 1.0-1.3x plain (per-key page lookups in the decode kernel), the Sq256 call more
#     (a gather first), the checked rows a host sync more.
#   OUT=$OUT bash bench/results/2026-12-02-h200-s66/call2.sh   (run with carry ["carry"])
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-s66-call2}
start=$(date +%s)
mkdir -p /tmp/s66py && tar xJf carry/s66py.tar.xz -C /tmp/s66py --strip-components 1
( cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DGPUATTN_CUDA=ON > $OUT/build.log 2>&1 && cmake --build build-gpu -j14 --target gpuattn_cli \
    >> $OUT/build.log 2>&1; echo "build rc $? at $(( $(date +%s) - start )) s" >> $OUT/build.log ) &
build=$!
export PYTHONPATH=/tmp/s66py:$PWD/tests/python
timeout 300 python3 -m pytest -q -p no:cacheprovider tests/python/test_cache_leftpad.py \
  tests/python/test_cache_batch_idx.py tests/python/test_rotary.py tests/python/test_flash_api.py \
  tests/python/test_fast_path.py > $OUT/pytest.log 2>&1
echo "pytest rc $?: $(tail -1 $OUT/pytest.log)"; grep -E '^FAILED|^ERROR' $OUT/pytest.log | head -20
python3 -m pytest -q -p no:cacheprovider tests/python/test_cache_leftpad.py -k cuda 2>&1 | tail -1
echo "pytest done after $(( $(date +%s) - start )) s"
wait $build; tail -1 $OUT/build.log
G=build-gpu/tools/gpuattn
timeout 200 $G verify --device cuda --quick > $OUT/verify.log 2>&1
echo "verify rc $?: $(tail -1 $OUT/verify.log)"; grep -E '^baseline|FAIL' $OUT/verify.log | head -12
timeout 60 $G bench --device cuda --shape "B32 Hq32 Hkv8 Sq1 Sk4096 D128; B3 H8 Sq1 Sk1000 D64 bf16 causal" \
  --json $OUT/bench-decode.json > $OUT/bench-decode.log 2>&1
echo "bench rc $?"; grep -E '^\[' $OUT/bench-decode.log
echo "verify/bench done after $(( $(date +%s) - start )) s"
timeout $(( 570 - ($(date +%s) - start) )) python3 bench/leftpad_decode.py --json $OUT/leftpad.json \
  --md $OUT/leftpad.md > $OUT/leftpad.log 2>&1
echo "leftpad_decode rc $?"; tail -16 $OUT/leftpad.log
echo "done after $(( $(date +%s) - start )) s"
