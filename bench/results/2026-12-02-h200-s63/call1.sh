#!/usr/bin/env bash
# Session 63, call 1: the GPU suites at s62's last code (f14e346..04b3eaa never ran on a GPU: the
# engine's CUDA-graph cap, the gelu+residual refusal on every CUDA GEMM path, the written-view
# overlap checks on the CUDA paths, the Python spread k/v scales with torch): build, ctest on the
# 16 shards with python.pytest, fuzz.
#   OUT=$OUT bash bench/results/2026-12-02-h200-s63/call1.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-s63-call1}
start=$(date +%s)
GPU_CHECK_BENCH=0 GPU_CHECK_SANITIZER=0 GPU_CHECK_VERIFY=0 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc $? after $(( $(date +%s) - start )) s"
tar xzf $OUT/logs.tar.gz -C /tmp 2>/dev/null
grep -hE 'tests passed|tests failed|\(Failed\)' /tmp/ctest.log $OUT/ctest.log 2>/dev/null | head -20
grep -hE 'PASSED|FAILED' /tmp/fuzz.log $OUT/fuzz.log 2>/dev/null | tail -3
grep -hE 'GraphsStayWithinTheirCap|GemmEpilogueGelu|WrittenViewsDoNotOverlap' /tmp/ctest.log 2>/dev/null | head
