#!/usr/bin/env bash
# Session 64, call 4: the GPU suites at the session's last code, which adds logit soft-capping
# (AttentionArgs::softcap, on the sm_80 kernel: a warp-uniform tanh step before the mask) and the
# review mends of the rotary code: build, ctest on the 16 shards with python.pytest on CUDA, fuzz;
# memcheck over the soft-capped cases on the sm_80 kernel; then the sm_80 kernel's timing at the
# default bench shapes (GPUATTN_KERNEL=sm80), to set against session 60's run of the same table
# (bench/results/2026-12-01-h200-s60/call2/summary.md, "sm80 kernel TFLOP/s"): the branch must not
# cost calls without a cap.
#   OUT=$OUT bash bench/results/2026-12-02-h200-s64/call4.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-s64-call4}
start=$(date +%s)
GPU_CHECK_BENCH=0 GPU_CHECK_SANITIZER=0 GPU_CHECK_VERIFY=0 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc $? after $(( $(date +%s) - start )) s"
tar xzf $OUT/logs.tar.gz -C /tmp 2>/dev/null
grep -hE 'tests passed|tests failed|\(Failed\)' /tmp/ctest.log 2>/dev/null | head -20
grep -hE 'PASSED|FAILED' /tmp/fuzz.log 2>/dev/null | tail -3
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 150 "$san" --tool memcheck --error-exitcode 9 build-gpu/tests/gpuattn_cuda_tests \
  --gtest_filter='Softcap/AttentionCuda.*:AttentionCudaTest.Softcapped*' > $OUT/memcheck-softcap.log 2>&1
echo "memcheck softcap rc $?: $(grep -E 'ERROR SUMMARY|PASSED|FAILED' $OUT/memcheck-softcap.log | tr '\n' ' ')"
GPUATTN_KERNEL=sm80 timeout 150 build-gpu/tools/gpuattn bench --device cuda --shapes default \
  --json $OUT/bench-sm80.json > $OUT/bench-sm80.txt 2>&1
echo "bench sm80 rc $?"; tail -12 $OUT/bench-sm80.txt
echo "done after $(( $(date +%s) - start )) s"
