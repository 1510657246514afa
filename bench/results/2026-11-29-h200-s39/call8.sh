#!/usr/bin/env bash
# s39 call 8: the final tree (main 6a486fc + the review's mends: the carveout asked once per kernel
# behind per-device flags, the lean decode kernel only where the 3-stage one keeps 2 CTAs an SM,
# and the int8 test's last round with x, bias and layernorm weights off 16 bytes). Carried.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s39/call8.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
v=s39g
mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
ts start
timeout 100 /tmp/$v/gpuattn_cuda_tests --gtest_filter='*Int8LinearsMatchTheFp64Reference:DecodeCuda*:*DecodeReadsReady*:*PagedKv*' --gtest_brief=1 > $OUT/tests.txt 2>&1
ts "tests rc $? $(tail -3 $OUT/tests.txt | tr '\n' ' ')"
for i in 1 2; do
  timeout 60 /tmp/$v/gpuattn generate --random 1558m --batch 1 --prompt-len 16 --max-new 64 --linear-weights int8 2>&1 | tail -1
done
ts done
