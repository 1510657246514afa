#!/usr/bin/env bash
# Device call 12: the merge with 32 loads in flight per thread against 8 (110c5bb), the last-CTA merge (counts zeroed
# by a memset): the decode, determinism, graph and stream suites on both dispatches, sanitizers on
# the decode cases, then compare_torch on 11 decode shapes with each (the old kernel file swapped
# in and only the decode path rebuilt).
set -u
B=build-gpu
D=bench/results/2026-11-22-h200-decode
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
cmake --build $B -j16 > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
R='Decode|SameInputs|CapturedInACudaGraph|ConcurrentStreams|RunsOnTheGivenStream|AwkwardLengths|SeqlenMismatch|GroupedHeads|Varlen/AttentionCuda'
timeout 200 ctest --test-dir $B -R "$R" -j 8 --output-on-failure > $OUT/ctest.log 2>&1
grep -E "tests passed|tests failed|\(Failed\)|Timeout" $OUT/ctest.log | head -20
F='Decode/*:-*65536*'
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 1 $B/tests/gpuattn_cuda_tests --gtest_filter="$F:AttentionCudaTest.CapturedInACudaGraphAndReplayed" --gtest_brief=1 > $OUT/memcheck.log 2>&1; echo "memcheck rc $?"; grep "ERROR SUMMARY" $OUT/memcheck.log
timeout 100 compute-sanitizer --tool racecheck --error-exitcode 1 $B/tests/gpuattn_cuda_tests --gtest_filter="$F" --gtest_brief=1 > $OUT/racecheck.log 2>&1; echo "racecheck rc $?"; grep "RACECHECK SUMMARY" $OUT/racecheck.log
timeout 100 compute-sanitizer --tool synccheck --error-exitcode 1 $B/tests/gpuattn_cuda_tests --gtest_filter="$F" --gtest_brief=1 > $OUT/synccheck.log 2>&1; echo "synccheck rc $?"; grep "ERROR SUMMARY" $OUT/synccheck.log
C=(--case bfloat16,8,32,8,1,4096,128,0 --case float16,1,32,8,1,32768,128,0 --case bfloat16,32,32,8,1,2048,128,0
   --case float16,4,16,1,1,8192,64,0 --case bfloat16,2,32,8,4,4096,128,1 --case float16,1,8,8,1,131072,256,0
   --case bfloat16,64,32,32,1,512,128,0 --case float16,16,64,8,2,8192,128,1 --case bfloat16,16,32,8,1,8192,64,0
   --case bfloat16,1,32,8,1,4096,128,0 --case float16,4,32,8,1,1024,128,0)
run() {
  PYTHONPATH=$PWD/$B/python timeout 150 python3 bench/compare_torch.py --repeats 3 --json $OUT/compare_$1.json "${C[@]}" > $OUT/compare_$1.log 2>&1
  echo "compare $1 rc $?"; tail -18 $OUT/compare_$1.log | grep -v flash_error
}
run batched
cp src/cuda/fwd_decode.cuh /tmp/new.cuh && cp $D/old_fwd_decode.cuh src/cuda/fwd_decode.cuh
cmake --build $B -j16 > $OUT/build-old.log 2>&1 || { tail -30 $OUT/build-old.log; cp /tmp/new.cuh src/cuda/fwd_decode.cuh; exit 1; }
run unbatched
cp /tmp/new.cuh src/cuda/fwd_decode.cuh
cmake --build $B -j16 > $OUT/build-new.log 2>&1 || { tail -30 $OUT/build-new.log; exit 1; }
run batched2
cd $OUT && tar czf logs.tgz *.log && rm -f build*.log memcheck.log racecheck.log synccheck.log
