#!/usr/bin/env bash
# Session 50, call 5: the FP8 kernel with 3 K/V stages at head dim 64 (carry s50f: the tests and
# gpuattn_fp8_probe of the change, probe_main of main before it). The FP8 suites, memcheck and
# racecheck of the D64 kernel test, its sm80. copy, the probe against main in balanced order, and,
# if the Python module (built in the background) is ready in time, fp8_attention.py at head dim 64
# against cuDNN in the same run.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s50/call5.sh   (run with carry ["carry"])
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/s50f && tar xJf carry/s50f.tar.xz -C /tmp/s50f --strip-components 1 || { echo "no carry"; exit 1; }
B=/tmp/build-py
( cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON && cmake --build $B --target _C -j8 ) > $OUT/build.txt 2>&1 &
BPID=$!
T=/tmp/s50f/gpuattn_cuda_tests
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
F=Fp8AttentionCuda.KernelMatchesTheReferenceAtHeadDim64
timeout 150 $SAN --tool memcheck --error-exitcode 9 $T --gtest_brief=1 --gtest_filter=$F > $OUT/memcheck.txt 2>&1 &
MPID=$!
timeout 150 $SAN --tool racecheck --error-exitcode 9 $T --gtest_brief=1 --gtest_filter=$F > $OUT/racecheck.txt 2>&1 &
RPID=$!
timeout 150 $T --gtest_filter='Fp8*' > $OUT/fp8-suite.txt 2>&1
echo "fp8 suite rc $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/fp8-suite.txt | tr '\n' ' ')"
grep -B2 -A12 "Failure" $OUT/fp8-suite.txt | head -30
GPUATTN_KERNEL=sm80 timeout 60 $T --gtest_filter=$F > $OUT/sm80-d64.txt 2>&1
echo "sm80. D64 rc $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/sm80-d64.txt | tr '\n' ' ')"
wait $MPID; echo "memcheck rc $? $(grep -E 'ERROR SUMMARY' $OUT/memcheck.txt | tail -1)"
wait $RPID; echo "racecheck rc $? $(grep -E 'RACECHECK SUMMARY' $OUT/racecheck.txt | tail -1)"
echo "== A: main (2 K/V stages), B: 3 K/V stages at head dim 64"
timeout 100 python3 bench/ab_probe.py --rounds 3 /tmp/s50f/probe_main /tmp/s50f/gpuattn_fp8_probe \
  -- 20 --head-dim 64 2>&1 | tee $OUT/ab-d64.txt
wait $BPID; echo "python module build rc $?"; tail -3 $OUT/build.txt
PYTHONPATH=$B/python timeout 110 python3 bench/fp8_attention.py --head-dim 64 --repeats 3 \
  --json $OUT/fp8-d64.json > $OUT/bench-d64.txt 2>&1
echo "bench d64 rc $?"; grep -v -i warn $OUT/bench-d64.txt | tail -17
