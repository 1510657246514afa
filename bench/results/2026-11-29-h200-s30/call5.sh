#!/usr/bin/env bash
# s30 call 5: what lands. Call 4: the batched O merge (v2) was still 1.1-2.5 us slower than the
# original at D128 with 16-33 splits, so the original O loop is back; kept: the count-in by one
# thread's acquire-release add (call 3: -0.3 to -0.4 us a CTA), the lse2 loads issued at once
# (clamped indices), the per-row weights by a warp with shuffles (was one thread looping over the
# splits twice). merge-v3.patch = src since 2eff1fd~1 (reversed into /tmp/old).
# Decode suites, racecheck, memcheck, pytest; decode_ab.py old/new twice; compare_torch's decode
# cases on the new build (anchors, host check).
set -u
cd "$(dirname "$0")/../../.."
export GPUATTN_COMMIT=$(cat .commit)
R=bench/results/2026-11-29-h200-s30
W=$OUT/work; mkdir -p $W
rm -rf /tmp/old && mkdir -p /tmp/old && tar --exclude=./build-gpu --exclude=./build --exclude=./.git -cf - . | tar -C /tmp/old -xf -
patch -R -s -p1 -d /tmp/old < $R/merge-v3.patch || { echo "patch -R failed"; exit 1; }
grep -c atom_add_acq_rel src/cuda/fwd_decode.cuh /tmp/old/src/cuda/fwd_decode.cuh
CM="-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON"
t0=$(date +%s)
(cmake -S . -B build-gpu $CM > /dev/null && cmake --build build-gpu -j10 > $W/build.log 2>&1; echo "new build rc $?") &
(cmake -S /tmp/old -B /tmp/old/build $CM -DGPUATTN_BUILD_TESTS=OFF -DGPUATTN_BUILD_TOOLS=OFF > /dev/null && \
  cmake --build /tmp/old/build -j6 > $W/build-old.log 2>&1; echo "old build rc $?") &
wait; echo "builds $(( $(date +%s) - t0 )) s"
F='Decode/*:PagedKvCuda.*:QuantizedKvCuda.*:SeqUsedKCuda.*:Varlen/*:GroupedHeads/*:SeqlenMismatch/*'
build-gpu/tests/gpuattn_cuda_tests --gtest_filter="$F" > $W/cuda_tests.log 2>&1
echo "cuda tests rc $?"; grep -E "^\[  (PASSED|FAILED) |tests ran" $W/cuda_tests.log | tail -4
(timeout 150 compute-sanitizer --tool racecheck build-gpu/tests/gpuattn_cuda_tests \
  --gtest_filter='Decode/*:QuantizedKvCuda.Decode*' > $W/racecheck-decode.log 2>&1; echo "racecheck rc $?" > $W/racecheck.rc) &
(timeout 150 compute-sanitizer --tool memcheck build-gpu/tests/gpuattn_cuda_tests \
  --gtest_filter='Decode/*:SeqUsedKCuda.Decode*:PagedKvCuda.Decode*:QuantizedKvCuda.Decode*' > $W/memcheck-decode.log 2>&1; echo "memcheck rc $?" > $W/memcheck.rc) &
wait
cat $W/racecheck.rc; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $W/racecheck-decode.log | tail -3
cat $W/memcheck.rc; grep -E "ERROR SUMMARY|PASSED|FAILED" $W/memcheck-decode.log | tail -3
PYTHONPATH=$PWD/build-gpu/python timeout 90 python3 -m pytest -q -p no:cacheprovider tests/python/test_flash_api.py \
  tests/python/test_fast_path.py -k "quantized or kvcache or decode or fast" > $W/pytest.log 2>&1
echo "pytest rc $?"; tail -1 $W/pytest.log
for i in 1 2; do
  for side in old new; do
    if [ $side = old ]; then P=/tmp/old/build/python; else P=$PWD/build-gpu/python; fi
    PYTHONPATH=$P timeout 80 python3 $R/decode_ab.py $side --json $W/ab-$side-$i.json > $W/ab-$side-$i.log 2>&1
    echo "-- $side $i rc $?"; grep -v -i warn $W/ab-$side-$i.log | tail -9
  done
done
C=(--repeats 2 --case bfloat16,1,32,8,1,4096,128,0 --case float16,4,32,8,1,1024,128,0
   --case float16,4,16,1,1,8192,64,0 --case bfloat16,8,32,8,1,4096,128,0 --case float16,1,32,8,1,32768,128,0
   --case bfloat16,32,32,8,1,2048,128,0 --case bfloat16,16,32,8,1,8192,64,0 --case float16,1,8,8,1,131072,256,0)
PYTHONPATH=$PWD/build-gpu/python timeout 120 python3 bench/compare_torch.py "${C[@]}" --json $W/ct-new.json > $W/ct-new.log 2>&1
echo "== compare_torch new rc $?"; grep -E "^(fp16|bf16)|host-bound|WARN|OK" $W/ct-new.log | cut -c1-120
tar -C $OUT -czf $OUT/logs.tar.gz work && rm -rf $W
