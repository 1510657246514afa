#!/usr/bin/env bash
# Session 48, call 5: the FP8 kernel path's lse bound at 4e-3 (call 4: rows over one key met
# 1.18e-3 against 1e-3; Hopper's FP8 wgmma accumulates in ~14 bits). The whole FP8 suite, the
# random sets at the default seed (default dispatch, sm80, the 3-consumer kernel), call 4's failed
# FP8 seeds 101 and 105 and fresh ones until ~130 s. Failures' first lines go to failures.txt.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s48/call5.sh   (run with carry ["carry"])
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p /tmp/fz5 && tar xJf carry/fz5.tar.xz -C /tmp/fz5 --strip-components 1
T=/tmp/fz5/gpuattn_cuda_tests
summ() { grep -E '^\[  (PASSED|FAILED) ' "$1" | sort -u | tr '\n' ' '; }
run() {  # label, env, filter, [seed cases]
  local f=/tmp/r.txt
  if [ $# -ge 5 ]; then
    GPUATTN_FUZZ_SEED=$4 GPUATTN_FUZZ_CASES=$5 env $2 timeout 100 $T --gtest_filter="$3" > $f 2>&1
  else
    env $2 timeout 100 $T --gtest_filter="$3" > $f 2>&1
  fi
  local rc=$?
  ts "$1 rc $rc $(summ $f)"
  [ $rc != 0 ] && { echo "== $1"; grep -A7 -E 'Failure' $f | head -60; } >> $OUT/failures.txt
}
run "fp8 suite auto" "" 'Fp8AttentionCuda.*'
run "fp8 suite sm80" "GPUATTN_KERNEL=sm80" 'Fp8AttentionCuda.*'
run "random auto" "" '*Random*'
run "random sm80" "GPUATTN_KERNEL=sm80" '*Random*'
run "random 192" "GPUATTN_KERNEL=sm90_ws_192x128" '*Random*'
F='Fp8AttentionCuda.RandomCallsMatchTheReference'
for s in 101 105 200 201 202 203 204 205 206 207 208 209; do
  [ $(($(date +%s)-t0)) -gt 130 ] && break
  run "fp8 seed $s auto" "" "$F" $s 80
done
ts done
