#!/usr/bin/env bash
# Session 46, call 4, main + the lane-0 sequence end (the listed producer's seq_end written by
# lane 0 only). racecheck and memcheck of the varlen cases (the 128x128 block-sparse varlen case
# raised 80 racecheck hazards in call 3), the varlen suites under each GPUATTN_KERNEL, then the
# whole GPU suite. Carry: s46r (gpuattn_cuda_tests from build-s38).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s46/call4.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p /tmp/s46r && tar xJf carry/s46r.tar.xz -C /tmp/s46r --strip-components 1 || exit 1
T=/tmp/s46r/gpuattn_cuda_tests
F='VarlenNeighbours/*:*nan_kv*:Varlen/*:*varlen*'
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for tool in racecheck memcheck; do
  timeout 150 $SAN --tool $tool --error-exitcode 9 $T --gtest_filter="$F" > $OUT/$tool.txt 2>&1
  ts "$tool rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/$tool.txt | tail -1) $(grep -cE '^\[       OK' $OUT/$tool.txt) ok"
  grep -E "Warning|Error:" $OUT/$tool.txt | head -4
done
for k in auto sm80 sm90_ws_192x128 sm90_ws_128x128; do
  GPUATTN_KERNEL=$k timeout 120 $T --gtest_filter="$F" > /tmp/v-$k.txt 2>&1
  ts "varlen $k rc $? $(grep -E '^\[  (PASSED|FAILED)' /tmp/v-$k.txt | tr '\n' ' ')"
done
timeout 330 $T --gtest_brief=1 > $OUT/suite.txt 2>&1
ts "suite rc $? $(grep -E '^\[  (PASSED|FAILED)' $OUT/suite.txt | tr '\n' ' ')"
grep -E "^\[  FAILED  \]" $OUT/suite.txt | head -10
