#!/usr/bin/env bash
# Session 72, call 7 (the budget's last minutes): why a short ALiBi call costs 1.2-1.33x its plain
# time on the 3-stage D128 kernel (call 4) when call 5's fewer instructions did not help. ncu
# (SourceCounters, WarpStateStats, SpeedOfLight, InstructionStats) of causal-d128-512 (fp16 B32
# H16 S512 D128 causal) plain and with --alibi; the stall reasons and instruction counts side by side.
#   OUT=$OUT bash bench/results/2026-12-03-h200-s72/call7.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
start=$(date +%s)
GPU_CHECK_TESTS=0 GPU_CHECK_BENCH=0 scripts/gpu-check.sh > $OUT/build.log 2>&1
echo "build rc $? after $(( $(date +%s) - start )) s"
OUT=$OUT/plain timeout 120 scripts/ncu-source.sh causal-d128-512 > $OUT/ncu-plain.log 2>&1
echo "ncu plain rc $? after $(( $(date +%s) - start )) s"
OUT=$OUT/alibi NCU_CASE_ARGS=--alibi timeout 120 scripts/ncu-source.sh causal-d128-512 > $OUT/ncu-alibi.log 2>&1
echo "ncu alibi rc $? after $(( $(date +%s) - start )) s"
for s in plain alibi; do
  echo "== $s"; head -14 $OUT/$s/causal-d128-512-stalls.txt
  grep -E "Duration|Executed Instructions  |Issue Slots Busy|Compute \(SM\) Throughput|Registers Per" $OUT/$s/causal-d128-512-details.txt | head -8
done
rm -f $OUT/*/*.ncu-rep $OUT/*/*-raw.csv
echo "done after $(( $(date +%s) - start )) s"
