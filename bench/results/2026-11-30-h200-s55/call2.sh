#!/usr/bin/env bash
# Session 55, call 2 (right after call 1, on its build): the second half of the correctness check
# (the compute-sanitizer steps, FP8 D64 / D256 among them, and gpuattn verify), then FP8 head dim
# 256's first K/V tile before the Q-slot wait, A = before (probe_a), B = after (probe_b), both
# stripped gpuattn_fp8_probe builds of this tree (carry/ab55.tar.xz), a case a process, 2 rounds.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s55/call2.sh      carry ["carry/ab55.tar.xz"]
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-s55-call2}
mkdir -p /tmp/ab55 && tar xJf carry/ab55.tar.xz -C /tmp/ab55 --strip-components 1 || { echo "no carry"; exit 1; }
{
  echo "== head dim 256, A before, B first K/V tile before the Q wait"
  timeout 200 python3 bench/ab_probe.py --rounds 2 --case "S512 causal" --case "S1024 causal" \
    --case "S2048 causal" --case "S512 dense" --case "S1024 dense" --case "varlen16" \
    --case "S16384 causal" --case "S4096 dense" /tmp/ab55/probe_a /tmp/ab55/probe_b -- 20 --head-dim 256
  echo "rc $?"
} > $OUT/ab-d256.txt 2>&1
cat $OUT/ab-d256.txt | tail -30
GPU_CHECK_SKIP_BUILD=1 GPU_CHECK_BENCH=0 GPU_CHECK_CTEST=0 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc $?"
tail -40 $OUT/summary.md 2>/dev/null
grep -E 'step|took|[0-9]+ s$|FAIL|ERROR SUMMARY' $OUT/console.log | tail -40
