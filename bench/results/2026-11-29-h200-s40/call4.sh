#!/usr/bin/env bash
# s40 call 4: the decode kernel alone (tools/decode_layout_probe.cu: token-major pages as the
# engine's and head-major, us a call and TB/s), before (s40-probe-old: 4597bd3) and after
# (s40-probe-new: 011dca3, warp-owned rows and a page entry a warp) on the same GPU, rounds
# alternated inside each run and runs alternated; then ncu on the new kernel at 124M B128's shape.
# Expected: B128 (1,536 CTAs) within +-2% (engine B128 moved +0.4%); B32 (384 CTAs, lean kernel)
# and page 16 faster by a few %.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s40/call4.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
for v in s40-probe-old s40-probe-new; do
  mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
done
ts start
for shape in "128 12 64 576 16" "128 12 64 576 64" "32 12 64 576 16" "8 12 64 4096 16" "1 12 64 576 16" "64 16 128 1024 16"; do
  for round in 1 2; do
    for v in s40-probe-old s40-probe-new; do
      echo "== $v [$shape] round $round"
      timeout 60 /tmp/$v/gpuattn_decode_layout_probe $shape 5 0 2>&1 | grep -v "^$"
    done
  done
done 2>&1 | tee $OUT/probe.txt
ts "probes done"
timeout 200 ncu --kernel-name regex:decode_kernel --launch-skip 5 --launch-count 1 --section SpeedOfLight \
  --section Occupancy --section SchedulerStats --section WarpStateStats --section LaunchStats \
  --section MemoryWorkloadAnalysis /tmp/s40-probe-new/gpuattn_decode_layout_probe 128 12 64 576 16 1 0 \
  > $OUT/ncu-new.txt 2>&1
ts "ncu new rc $?"
timeout 120 ncu --kernel-name regex:decode_kernel --launch-skip 5 --launch-count 1 --section SpeedOfLight \
  --section SchedulerStats --section WarpStateStats /tmp/s40-probe-old/gpuattn_decode_layout_probe 128 12 64 576 16 1 0 \
  > $OUT/ncu-old.txt 2>&1
ts "ncu old rc $?"
