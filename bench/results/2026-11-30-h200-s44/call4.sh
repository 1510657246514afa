#!/usr/bin/env bash
# s44 call 4: why the in-kernel V transpose lost 26% at long sequences. gpuattn_fp8_probe built
# against four versions of fwd_sm90_fp8.cu (tools/fp8_probe.cu; carry/s44c.tar.xz): v0 s43's
# kernel, v1 the transposing kernel (40 / 232 registers), v2 s43's kernel at 40 / 232 registers,
# v3 the transposing kernel with its transposes skipped (wrong results: barriers and loads only).
# Two rounds, the versions in turn.
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/c && tar xJf carry/s44c.tar.xz -C /tmp/c || exit 1
for round in 1 2; do
  for v in v0-old v1-new v2-old-40-232 v3-new-no-transpose; do
    timeout 60 /tmp/c/variants/$v 30 | sed "s/^/$v /" >> $OUT/probe.txt 2>&1
  done
done
sort -k2,5 -s $OUT/probe.txt
