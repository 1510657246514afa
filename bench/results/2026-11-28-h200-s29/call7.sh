#!/usr/bin/env bash
# s29 call 7: call 6's two changes in the 8-bit cache's decode kernel (fwd_decode_q8.cuh,
# decode-q8-addresses.patch): rows stepped from the tile's first, O's rescale skipped when no
# row maximum of the warp moved. The quantized, decode and seqused suites; racecheck of the
# decode tests (both kernels); bench/quantized_decode.py old and new in turn.
set -u
cd "$(dirname "$0")/../../.."
export GPUATTN_COMMIT=$(cat .commit)
R=bench/results/2026-11-28-h200-s29
W=$OUT/work; mkdir -p $W
rm -rf /tmp/old && mkdir -p /tmp/old && tar --exclude=./build-gpu --exclude=./build --exclude=./.git -cf - . | tar -C /tmp/old -xf -
patch -R -s -p1 -d /tmp/old < $R/decode-q8-addresses.patch || { echo "patch -R failed"; exit 1; }
grep -c "row0_k + key" src/cuda/fwd_decode_q8.cuh /tmp/old/src/cuda/fwd_decode_q8.cuh
CM="-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON"
t0=$(date +%s)
(cmake -S . -B build-gpu $CM > /dev/null && cmake --build build-gpu -j10 > $W/build.log 2>&1; echo "new build rc $?") &
(cmake -S /tmp/old -B /tmp/old/build $CM -DGPUATTN_BUILD_TESTS=OFF -DGPUATTN_BUILD_TOOLS=OFF > /dev/null && \
  cmake --build /tmp/old/build -j6 > $W/build-old.log 2>&1; echo "old build rc $?") &
wait; echo "builds $(( $(date +%s) - t0 )) s"
F='Decode/*:PagedKvCuda.*:QuantizedKvCuda.*:SeqUsedKCuda.*:Varlen/*:GroupedHeads/*'
build-gpu/tests/gpuattn_cuda_tests --gtest_filter="$F" > $W/cuda_tests.log 2>&1
echo "cuda tests rc $?"; grep -E "^\[  (PASSED|FAILED) " $W/cuda_tests.log | tail -3
PYTHONPATH=$PWD/build-gpu/python timeout 60 python3 -m pytest -q -p no:cacheprovider tests/python/test_flash_api.py \
  -k "quantized or kvcache" > $W/pytest.log 2>&1
echo "pytest rc $?"; tail -1 $W/pytest.log
timeout 45 compute-sanitizer --tool racecheck build-gpu/tests/gpuattn_cuda_tests \
  --gtest_filter='Decode/*:QuantizedKvCuda.Decode*' > $W/racecheck-decode.log 2>&1
echo "racecheck rc $?"; grep -E "RACECHECK SUMMARY|hazard|PASSED|FAILED" $W/racecheck-decode.log | tail -3
timeout 30 compute-sanitizer --tool memcheck build-gpu/tests/gpuattn_cuda_tests \
  --gtest_filter='QuantizedKvCuda.Decode*:QuantizedKvCuda.Varlen*' > $W/memcheck-q8.log 2>&1
echo "memcheck rc $?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $W/memcheck-q8.log | tail -2
for side in old new; do
  if [ $side = old ]; then P=/tmp/old/build/python; else P=$PWD/build-gpu/python; fi
  PYTHONPATH=$P:$PWD/bench timeout 60 python3 bench/quantized_decode.py --json $W/qd-$side.json > $W/qd-$side.log 2>&1
  echo "== quantized_decode $side rc $?"; grep -vE "Warning|warn" $W/qd-$side.log | tail -14 | cut -c1-150
done
tar -C $OUT -czf $OUT/logs.tar.gz work && rm -rf $W
