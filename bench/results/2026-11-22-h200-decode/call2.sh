#!/usr/bin/env bash
# Device call 2: build, the decode kernel's correctness (ctest subsets on the default dispatch and
# on sm80, sanitizers) and its speed against the prefill kernel and torch SDPA (compare_torch).
set -u
B=build-gpu
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > $OUT/configure.log 2>&1
cmake --build $B -j16 > $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
R='Decode|DecodePlan|TileConfig|SameInputs|CapturedInACudaGraph|ConcurrentStreams|AwkwardLengths|SeqlenMismatch|Varlen|GroupedHeads|LargeLogits'
timeout 200 ctest --test-dir $B -R "$R" -j 8 --output-on-failure > $OUT/ctest.log 2>&1
grep -E "tests passed|tests failed|\(Failed\)|Timeout" $OUT/ctest.log | head -30
F='Decode/*:-*65536*'
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 1 $B/tests/gpuattn_cuda_tests --gtest_filter="$F" --gtest_brief=1 > $OUT/memcheck.log 2>&1; echo "memcheck rc $?"; grep "ERROR SUMMARY" $OUT/memcheck.log
timeout 120 compute-sanitizer --tool racecheck --error-exitcode 1 $B/tests/gpuattn_cuda_tests --gtest_filter="$F" --gtest_brief=1 > $OUT/racecheck.log 2>&1; echo "racecheck rc $?"; grep "RACECHECK SUMMARY" $OUT/racecheck.log
C=(--case bfloat16,8,32,8,1,4096,128,0 --case float16,1,32,8,1,32768,128,0 --case bfloat16,32,32,8,1,2048,128,0
   --case float16,4,16,1,1,8192,64,0 --case bfloat16,2,32,8,4,4096,128,1 --case float16,1,8,8,1,131072,256,0
   --case bfloat16,64,32,32,1,512,128,0 --case float16,16,64,8,2,8192,128,1)
for k in auto sm90_ws_128x128; do
  GPUATTN_KERNEL=$k PYTHONPATH=$PWD/$B/python timeout 120 python3 bench/compare_torch.py --repeats 2 --json $OUT/compare_$k.json "${C[@]}" > $OUT/compare_$k.log 2>&1
  echo "compare $k rc $?"; tail -14 $OUT/compare_$k.log
done
