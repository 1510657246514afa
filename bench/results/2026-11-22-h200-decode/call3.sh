#!/usr/bin/env bash
# Device call 3: the parallel split merge; the decode ring's stages (head dims 64 / 128 / 256) as
# committed (4 / 2 / 2), then 4 / 3 / 3 and 2 / 2 / 2, each timed by compare_torch on the same
# decode cases (the stages are edited in core/decode_split.h and only the decode path rebuilds).
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
   --case bfloat16,64,32,32,1,512,128,0 --case float16,16,64,8,2,8192,128,1 --case bfloat16,16,32,8,1,8192,64,0)
run() {
  PYTHONPATH=$PWD/$B/python timeout 150 python3 bench/compare_torch.py --repeats 3 --json $OUT/compare_$1.json "${C[@]}" > $OUT/compare_$1.log 2>&1
  echo "compare $1 rc $?"; tail -16 $OUT/compare_$1.log | grep -v flash_error
}
run s422
sed -i 's/return head_dim == 64 ? 4 : 2; }/return head_dim == 64 ? 4 : 3; }/' src/core/decode_split.h
cmake --build $B -j16 > $OUT/build433.log 2>&1 || { tail -40 $OUT/build433.log; exit 1; }
run s433
sed -i 's/return head_dim == 64 ? 4 : 3; }/return head_dim == 64 ? 2 : 2; }/' src/core/decode_split.h
cmake --build $B -j16 > $OUT/build222.log 2>&1 || { tail -40 $OUT/build222.log; exit 1; }
run s222
sed -i 's/return head_dim == 64 ? 2 : 2; }/return head_dim == 64 ? 4 : 2; }/' src/core/decode_split.h
cd $OUT && tar czf logs.tgz *.log && rm -f build*.log configure.log memcheck.log racecheck.log
