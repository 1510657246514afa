#!/usr/bin/env bash
# s44 call 6: gpuattn_fp8_probe for v0 (s43), v5b (call 5's v5, the V^T ring's stage count now its
# own constant, 2), v7 (3 V^T stages), v8 (the transpose loop unrolled by 2), v9 (both); two rounds
# in turn (carry s44f).
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/c && tar xJf carry/s44f.tar.xz -C /tmp/c || exit 1
for round in 1 2; do
  for v in v0-old v5b-ldsm-vt2 v7-vt3 v8-unroll2 v9-vt3-unroll2; do
    timeout 60 /tmp/c/variants/$v 30 | sed "s/^/$v /" >> $OUT/probe.txt 2>&1
  done
done
sort -k2,5 -s $OUT/probe.txt | awk '{print $1, $2, $3, $4, $5, $9}'
