#!/usr/bin/env bash
# Session 65, call 1: the GPU suites with soft-capping on every 16-bit kernel (the sm_90a kernels'
# softmax and both decode kernels take the tanh step; the dispatch no longer keeps soft-capped
# calls on the sm_80 kernel; every GPU kernel's tanh is ptx::fast_tanh): build, ctest on the 16
# shards with python.pytest on CUDA (ctest's sm80. and sm90_*. copies run the Softcap cases on
# every instantiation), fuzz; then memcheck over the soft-capped cases under the default dispatch
# (sm_90a, decode_16x64, decode_q8_16x64).
#   OUT=$OUT bash bench/results/2026-12-02-h200-s65/call1.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-s65-call1}
start=$(date +%s)
GPU_CHECK_BENCH=0 GPU_CHECK_SANITIZER=0 GPU_CHECK_VERIFY=0 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc $? after $(( $(date +%s) - start )) s"
tar xzf $OUT/logs.tar.gz -C /tmp 2>/dev/null
grep -hE 'tests passed|tests failed|\(Failed\)' /tmp/ctest.log 2>/dev/null | head -20
grep -hE 'PASSED|FAILED' /tmp/fuzz.log 2>/dev/null | tail -3
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 200 "$san" --tool memcheck --error-exitcode 9 build-gpu/tests/gpuattn_cuda_tests \
  --gtest_filter='Softcap/AttentionCuda.*:*Softcapped*' > $OUT/memcheck-softcap.log 2>&1
echo "memcheck softcap rc $?: $(grep -E 'ERROR SUMMARY|PASSED|FAILED' $OUT/memcheck-softcap.log | tr '\n' ' ')"
echo "done after $(( $(date +%s) - start )) s"
