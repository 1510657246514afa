#!/usr/bin/env bash
# Session 59, call 6: staggering the two CTAs of an SM on sm90_ws_64x128_2cta. Call 5's trace
# had a tile's softmax at 1156 cycles of a 2282-cycle period: about twice the exp2 floor of one
# warp alone (64 x 8), as if both CTAs of the SM ran their softmax at once (they start together
# on identical work). B1 / B2 hold the later CTA of each pair back GPUATTN_2CTA_STAGGER_CYCLES
# (1100, half a period) after its first S GEMM: B1 picks it by its warp slot (%warpid bit 3),
# B2 by blockIdx.x in the grid's upper half. Expected if the CTAs then alternate: a period near
# 1700 cycles, the one-wave call ~2 us shorter (0.88x); if they fall back into step, ~1.0x.
#   carry: carry/b1 carry/b2 (this tree with GPUATTN_2CTA_STAGGER 1 / 2 as the default)
#   OUT=$OUT bash bench/results/2026-12-01-h200-s59/call6.sh   (~4 min)
set -u
cd "$(dirname "$0")/../../.." || exit 1
AB_SHAPES= AB_SPARSE=0 AB_B_DIRS="carry/b1 carry/b2" \
  AB_EACH="B1 H16 S1024 D64;B1 H16 S1024 D64 causal;B1 H8 S1024 D64;B1 H16 S2048 D64" \
  scripts/ab.sh . 2 > $OUT/console.log 2>&1
echo "ab.sh rc $?"
cat $OUT/ab/summary.md
mkdir -p /tmp/abj && tar xzf $OUT/ab/logs.tar.gz -C /tmp/abj
for s in a b1 b2; do
  python3 -c "import glob,json;c=[r['config'] for f in glob.glob('/tmp/abj/bench-$s-*.json') for r in json.load(open(f))['results']];print('$s configs:', sorted(set(c)), len(c))"
done
