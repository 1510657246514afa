#!/usr/bin/env bash
# s30 call 4: the merge with its loads batched again, the indices clamped instead of the loads
# predicated (call 3: predicated, nvcc serialized every load: 5.4 us against 2.0), and the
# count-in by one thread's acquire-release add (call 3: -0.3 to -0.4 us a CTA).
# merge-v2.patch = everything since 2eff1fd~1 in src (reversed into /tmp/old).
# Decode suites (both kernels), racecheck and memcheck; decode_ab.py old/new twice with cuDNN;
# quantized_decode.py old/new (the 8-bit kernel shares the merge).
set -u
cd "$(dirname "$0")/../../.."
export GPUATTN_COMMIT=$(cat .commit)
R=bench/results/2026-11-29-h200-s30
W=$OUT/work; mkdir -p $W
rm -rf /tmp/old && mkdir -p /tmp/old && tar --exclude=./build-gpu --exclude=./build --exclude=./.git -cf - . | tar -C /tmp/old -xf -
patch -R -s -p1 -d /tmp/old < $R/merge-v2.patch || { echo "patch -R failed"; exit 1; }
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
  -k "quantized or kvcache or decode" > $W/pytest.log 2>&1
echo "pytest rc $?"; tail -1 $W/pytest.log
for i in 1 2; do
  for side in old new; do
    if [ $side = old ]; then P=/tmp/old/build/python; else P=$PWD/build-gpu/python; fi
    PYTHONPATH=$P timeout 80 python3 $R/decode_ab.py $side --anchors --json $W/ab-$side-$i.json > $W/ab-$side-$i.log 2>&1
    echo "-- $side $i rc $?"; grep -v -i warn $W/ab-$side-$i.log | tail -9
  done
done
for side in old new; do
  if [ $side = old ]; then P=/tmp/old/build/python; else P=$PWD/build-gpu/python; fi
  PYTHONPATH=$P:$PWD/bench timeout 90 python3 bench/quantized_decode.py --repeats 2 --json $W/qd-$side.json > $W/qd-$side.log 2>&1
  echo "== quantized_decode $side rc $?"; grep -E "e4m3  |int8|bf16 B|HOST" $W/qd-$side.log | grep -v page | cut -c1-120
done
tar -C $OUT -czf $OUT/logs.tar.gz work && rm -rf $W
