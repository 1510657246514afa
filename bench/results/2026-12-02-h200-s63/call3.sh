#!/usr/bin/env bash
# Session 63, call 3: the GPU suites at the session's last code (out/lse refused where they overlap
# any view the call reads, on every CUDA path and the engine's calls; the scheduler all or nothing
# under the engine): build, ctest on the 16 shards with python.pytest, fuzz; then the README's
# main job (scripts/run.sh: verify and bench on the GPU).
#   OUT=$OUT bash bench/results/2026-12-02-h200-s63/call3.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-s63-call3}
start=$(date +%s)
GPU_CHECK_BENCH=0 GPU_CHECK_SANITIZER=0 GPU_CHECK_VERIFY=0 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc $? after $(( $(date +%s) - start )) s"
tar xzf $OUT/logs.tar.gz -C /tmp 2>/dev/null
grep -hE 'tests passed|tests failed|\(Failed\)' /tmp/ctest.log 2>/dev/null | head -20
grep -hE 'PASSED|FAILED' /tmp/fuzz.log 2>/dev/null | tail -3
BUILD_DIR=build-gpu timeout 200 scripts/run.sh --json-dir $OUT/run > $OUT/run.txt 2>&1
echo "scripts/run.sh rc $? after $(( $(date +%s) - start )) s"
grep -E 'FAIL|passed|failed' $OUT/run.txt | tail -4; tail -14 $OUT/run.txt
