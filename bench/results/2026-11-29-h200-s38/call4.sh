#!/usr/bin/env bash
# s38 call 4: racecheck without the kernel-name filter (call 3: every filtered racecheck, of the
# old cluster kernel too, ended in "Internal Sanitizer Error"), on tests that run few cuBLASLt
# kernels: the chained skinny linears (int8 one row: the narrow kernel, a's default) and the paged
# and D64 decode cases with b's 3 stages.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s38/call4.sh
set -u
cd "$(dirname "$0")/../../.."
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
for d in a b; do rm -rf /tmp/c$d && mkdir -p /tmp/c$d && tar xJf carry/$d.tar.xz -C /tmp/c$d --strip-components 1; done
r() { local name=$1 bin=$2 f=$3; timeout 75 compute-sanitizer --tool racecheck /tmp/c$bin/gpuattn_cuda_tests --gtest_filter="$f" > $OUT/$name.log 2>&1
  ts "$name rc $?: $(grep -E "RACECHECK SUMMARY|Internal|PASSED|FAILED" $OUT/$name.log | tr '\n' ' ')"; }
r race-chained a 'Gpt2EngineCuda.SkinnyLinearsChained*'
r race-decode-b b 'PagedKvCuda.DecodeReadsThePagesInPlace:Decode/DecodeCuda.MatchesReference/f16_B1_H4kv2_Sq8_Sk5_D64_causal:Decode/DecodeCuda.MatchesReference/f16_B2_H16kv1_Sq1_Sk1000_D64'
ts done
