#!/usr/bin/env bash
# Session 59, call 5: the per-tile timeline (scripts/sm90-trace.sh, clock64 stamps of CTA 0) of the
# one-wave shape fp16 B1 H16 S1024 D64 on the kernel the dispatch picks there, sm90_ws_64x128_2cta
# (never traced since it landed in session 55), and on the 2-consumer kernel forced, to see where
# a tile's ~2300 cycles go: the S wait, the softmax, or the P V wait.
#   OUT=$OUT bash bench/results/2026-12-01-h200-s59/call5.sh   (~4 min)
set -u
cd "$(dirname "$0")/../../.." || exit 1
OUT=$OUT/pick scripts/sm90-trace.sh short-d64 > $OUT/pick.txt 2>&1
echo "pick rc $?"
GPUATTN_KERNEL=sm90_ws_128x128 OUT=$OUT/forced scripts/sm90-trace.sh short-d64 > $OUT/forced.txt 2>&1
echo "forced rc $?"
cat $OUT/pick.txt; echo ======; cat $OUT/forced.txt
rm -f $OUT/*/*-trace.txt.gz; gzip $OUT/*/*-trace.txt
