#!/usr/bin/env bash
# Session 63, call 2: the GPU suites after call 1's fixes (the two kernel-choice probes, the
# float16 copy-range refusal and its tests, the dist counters fix and its test); then the counters
# test against the code before the fix (sequence_parallel.cpp of the commit before it), which must
# fail, and the fixed file restored.
#   OUT=$OUT bash bench/results/2026-12-02-h200-s63/call2.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-s63-call2}
start=$(date +%s)
GPU_CHECK_BENCH=0 GPU_CHECK_SANITIZER=0 GPU_CHECK_VERIFY=0 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc $? after $(( $(date +%s) - start )) s"
tar xzf $OUT/logs.tar.gz -C /tmp 2>/dev/null
grep -hE 'tests passed|tests failed|\(Failed\)' /tmp/ctest.log 2>/dev/null | head -20
grep -hE 'PASSED|FAILED' /tmp/fuzz.log 2>/dev/null | tail -3
build-gpu/tests/gpuattn_dist_tests --gtest_filter='*Counters*' 2>&1 | tail -3
build-gpu/tests/gpuattn_cuda_tests --gtest_filter='*Float16*' 2>&1 | grep -E 'OK|FAILED|PASSED|checked|Failure' | head
cp src/dist/sequence_parallel.cpp /tmp/fixed.cpp
cp .before_sp.cpp src/dist/sequence_parallel.cpp  # 2cdfb6d's, left untracked beside the checkout
ninja -C build-gpu gpuattn_dist_tests > $OUT/revert-build.log 2>&1; echo "revert build rc $?"
build-gpu/tests/gpuattn_dist_tests --gtest_filter='*Counters*' > $OUT/revert-test.log 2>&1
echo "counters test before the fix: rc $? (must be nonzero)"; grep -E 'counters|FAILED' $OUT/revert-test.log | head -4
cp /tmp/fixed.cpp src/dist/sequence_parallel.cpp
echo "done after $(( $(date +%s) - start )) s"
