#!/usr/bin/env bash
# s29 call 6: the split-KV decode kernel's K/V addresses stepped from the tile's first row (the
# sequence's first row read once, not cu_seqlens_k[b] and 64-bit offsets per row) and O's rescale
# skipped when no row maximum of the warp moved (decode-addresses.patch; results bitwise the
# same). Call 5's ncu: at D256 one warp a scheduler issued every 3 cycles, ~1,900 SASS
# instructions a tile, 2.99 TB/s against FA2's 4.29.
#  - build the patched tree (build-gpu) and the tree without the patch (/tmp/old) at once;
#  - the decode-related CUDA tests (default dispatch) and the Python kvcache and fast-path tests;
#  - compare_torch's decode cases, old and new in turn, twice;
#  - memcheck of the decode tests, last (it may not finish in the time left).
set -u
cd "$(dirname "$0")/../../.."
export GPUATTN_COMMIT=$(cat .commit)
R=bench/results/2026-11-28-h200-s29
W=$OUT/work; mkdir -p $W
rm -rf /tmp/old && mkdir -p /tmp/old && tar --exclude=./build-gpu --exclude=./build --exclude=./.git -cf - . | tar -C /tmp/old -xf -
patch -R -s -p1 -d /tmp/old < $R/decode-addresses.patch || { echo "patch -R failed"; exit 1; }
grep -c "row0_k + key" src/cuda/fwd_decode.cuh /tmp/old/src/cuda/fwd_decode.cuh
CM="-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON"
t0=$(date +%s)
(cmake -S . -B build-gpu $CM > /dev/null && cmake --build build-gpu -j10 > $W/build.log 2>&1; echo "new build rc $?") &
(cmake -S /tmp/old -B /tmp/old/build $CM -DGPUATTN_BUILD_TESTS=OFF -DGPUATTN_BUILD_TOOLS=OFF > /dev/null && \
  cmake --build /tmp/old/build -j6 > $W/build-old.log 2>&1; echo "old build rc $?") &
wait; echo "builds $(( $(date +%s) - t0 )) s"
ls /tmp/old/build/python/gpu_attention/_C*.so build-gpu/python/gpu_attention/_C*.so || exit 1
t0=$(date +%s)
F='Decode/*:PagedKvCuda.*:QuantizedKvCuda.*:SeqUsedKCuda.*:Varlen/*:GroupedHeads/*:SeqlenMismatch/*'
build-gpu/tests/gpuattn_cuda_tests --gtest_filter="$F" > $W/cuda_tests.log 2>&1
echo "cuda tests rc $? in $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |tests ran" $W/cuda_tests.log | tail -4
PYTHONPATH=$PWD/build-gpu/python timeout 90 python3 -m pytest -q -p no:cacheprovider tests/python/test_fast_path.py \
  tests/python/test_flash_api.py -k "kvcache or fast or decode or cuda" > $W/pytest.log 2>&1
echo "pytest rc $?"; tail -2 $W/pytest.log
C=(--repeats 2 --case bfloat16,8,32,8,1,4096,128,0 --case float16,1,32,8,1,32768,128,0
   --case bfloat16,32,32,8,1,2048,128,0 --case float16,4,16,1,1,8192,64,0
   --case bfloat16,2,32,8,4,4096,128,1 --case float16,1,8,8,1,131072,256,0
   --case bfloat16,64,32,32,1,512,128,0 --case bfloat16,16,32,8,1,8192,64,0
   --case bfloat16,1,32,8,1,4096,128,0 --case float16,4,32,8,1,1024,128,0
   --case float16,8,16,16,1,16384,256,0)
for i in 1 2; do
  for side in old new; do
    if [ $side = old ]; then P=/tmp/old/build/python; else P=$PWD/build-gpu/python; fi
    PYTHONPATH=$P timeout 100 python3 bench/compare_torch.py "${C[@]}" --json $W/ct-$side-$i.json > $W/ct-$side-$i.log 2>&1
    echo "== compare_torch $side $i rc $?"
    grep -E "^(fp16|bf16)" $W/ct-$side-$i.log | awk '{print $0}' | cut -c1-110
  done
done
timeout 60 compute-sanitizer --tool memcheck build-gpu/tests/gpuattn_cuda_tests \
  --gtest_filter='Decode/*:SeqUsedKCuda.Decode*:PagedKvCuda.Decode*' > $W/memcheck-decode.log 2>&1
echo "memcheck rc $?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $W/memcheck-decode.log | tail -3
tar -C $OUT -czf $OUT/logs.tar.gz work && rm -rf $W
