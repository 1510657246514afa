#!/usr/bin/env bash
# Session 66, call 3: leftpad_k in the library (c8ee115 and after). gpu-check correctness half
# (ctest on the 16 shards with python.pytest on CUDA: the SeqUsedKCuda leftpad cases, Python's
# test_cache_leftpad CUDA cases; fuzz); memcheck over the leftpad cases; then
# bench/leftpad_decode.py. Expectation: leftpad rows within a few % of plain (the decode kernel
# only starts its rows at the pad; the checked row copies one more int32 array).
#   OUT=$OUT bash bench/results/2026-12-02-h200-s66/call3.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-s66-call3}
start=$(date +%s)
GPU_CHECK_BENCH=0 GPU_CHECK_SANITIZER=0 GPU_CHECK_VERIFY=0 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc $? after $(( $(date +%s) - start )) s"
tar xzf $OUT/logs.tar.gz -C /tmp 2>/dev/null
grep -hE 'tests passed|tests failed|\(Failed\)' /tmp/ctest.log 2>/dev/null | head -20
grep -hE 'PASSED|FAILED' /tmp/fuzz.log 2>/dev/null | tail -3
T=build-gpu/tests/gpuattn_cuda_tests
$T --gtest_filter='SeqUsedKCuda.*' > $OUT/seqused.log 2>&1
echo "SeqUsedKCuda rc $?: $(grep -E '^\[  (PASSED|FAILED) ' $OUT/seqused.log | tr '\n' ' ')"
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 120 "$san" --tool memcheck --error-exitcode 9 $T \
  --gtest_filter='SeqUsedKCuda.Leftpad*:SeqUsedKCuda.BadLeftpad*' > $OUT/memcheck-leftpad.log 2>&1
echo "memcheck leftpad rc $?: $(grep -E 'ERROR SUMMARY|PASSED|FAILED' $OUT/memcheck-leftpad.log | tr '\n' ' ')"
PYTHONPATH=$PWD/build-gpu/python:$PWD/tests/python python3 -m pytest -q -p no:cacheprovider \
  tests/python/test_cache_leftpad.py -k "cuda" 2>&1 | tail -1
echo "suites done after $(( $(date +%s) - start )) s"
PYTHONPATH=$PWD/build-gpu/python timeout $(( 580 - ($(date +%s) - start) )) python3 bench/leftpad_decode.py \
  --json $OUT/leftpad.json --md $OUT/leftpad.md > $OUT/leftpad.log 2>&1
echo "leftpad_decode rc $?"; tail -14 $OUT/leftpad.log
echo "done after $(( $(date +%s) - start )) s"
