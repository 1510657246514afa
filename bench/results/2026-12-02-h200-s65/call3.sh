#!/usr/bin/env bash
# Session 65, call 3: the GPU suites after two changes since call 1: the GPU kernels' tanh takes
# its reciprocal by Newton's method on the FMA pipe (ptx::tanh_of_log2, one MUFU op an element
# where fast_tanh took two), checked by the new PtxMath suite over the float line; and Python's
# soft-capped calls take the fast path. Build, ctest on the 16 shards with python.pytest on CUDA,
# fuzz; memcheck over the soft-capped cases and PtxMath.
#   OUT=$OUT bash bench/results/2026-12-02-h200-s65/call3.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-s65-call3}
start=$(date +%s)
GPU_CHECK_BENCH=0 GPU_CHECK_SANITIZER=0 GPU_CHECK_VERIFY=0 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc $? after $(( $(date +%s) - start )) s"
tar xzf $OUT/logs.tar.gz -C /tmp 2>/dev/null
grep -hE 'tests passed|tests failed|\(Failed\)' /tmp/ctest.log 2>/dev/null | head -20
grep -hE 'PASSED|FAILED' /tmp/fuzz.log 2>/dev/null | tail -3
build-gpu/tests/gpuattn_cuda_tests --gtest_filter='PtxMath.*' 2>&1 | grep -E 'OK|FAILED|Failure|at x|Which' | head
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 200 "$san" --tool memcheck --error-exitcode 9 build-gpu/tests/gpuattn_cuda_tests \
  --gtest_filter='Softcap/AttentionCuda.*:*Softcapped*:PtxMath.*' > $OUT/memcheck-softcap.log 2>&1
echo "memcheck softcap rc $?: $(grep -E 'ERROR SUMMARY|PASSED|FAILED' $OUT/memcheck-softcap.log | tr '\n' ' ')"
echo "done after $(( $(date +%s) - start )) s"
