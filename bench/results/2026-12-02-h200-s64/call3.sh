#!/usr/bin/env bash
# Session 64, call 3: the GPU suites at the session's last code (gpuattn::apply_rotary and its
# kernel; flash_attn_with_kvcache's rotary_cos/rotary_sin and cache_batch_idx; Python's arrays of no
# elements and exception rule; WorkSchedule's heavy rows for Sq != Sk; gpuattn generate --eos):
# build, ctest on the 16 shards with python.pytest on CUDA, fuzz; then compute-sanitizer memcheck
# over the rotary kernel's cases, and the new Python files' CUDA cases by name.
#   OUT=$OUT bash bench/results/2026-12-02-h200-s64/call3.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-s64-call3}
start=$(date +%s)
GPU_CHECK_BENCH=0 GPU_CHECK_SANITIZER=0 GPU_CHECK_VERIFY=0 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc $? after $(( $(date +%s) - start )) s"
tar xzf $OUT/logs.tar.gz -C /tmp 2>/dev/null
grep -hE 'tests passed|tests failed|\(Failed\)' /tmp/ctest.log 2>/dev/null | head -20
grep -hE 'PASSED|FAILED' /tmp/fuzz.log 2>/dev/null | tail -3
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 120 "$san" --tool memcheck --error-exitcode 9 build-gpu/tests/gpuattn_cuda_tests \
  --gtest_filter='RotaryCuda.EqualsTheCpuBackendOnRandomCases:RotaryCuda.ABadOffset*' \
  > $OUT/memcheck-rotary.log 2>&1
echo "memcheck rotary rc $?: $(grep -E 'ERROR SUMMARY|PASSED|FAILED' $OUT/memcheck-rotary.log | tr '\n' ' ')"
PYTHONPATH=build-gpu/python:tests/python timeout 200 python3 -m pytest -q -rs \
  tests/python/test_rotary.py tests/python/test_cache_batch_idx.py -k cuda > $OUT/pytest-new.log 2>&1
echo "pytest rotary/batch-idx cuda rc $?: $(tail -1 $OUT/pytest-new.log)"
echo "done after $(( $(date +%s) - start )) s"
