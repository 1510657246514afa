#!/usr/bin/env bash
# Prepared in session 58, not run (no device time left). Call 4 measured B1 H8 S4096 D64 (not a
# listed shape) at 0.983x cuDNN on the late-wait 2-consumer kernel: 256 items of 128 rows on 132
# SMs, two waves. two_ctas_pay stops at kTwoCtaMaxKeys = 2048 keys only because nothing longer was
# measured. This times, on one tree, the dispatch's pick (a) against the kernels forced: the
# one-consumer two-CTA one (b1: 512 items of 64 rows on 264 CTAs, 1.94 waves) and the 3-consumer
# one (b2: 176 items of 192 rows, 1.33 waves), a shape a process, A B1 B2 B2 B1 A, 3 rounds.
# Expected: if the 2-CTA kernel keeps its small-grid rate (0.84-0.96x the 2-consumer time,
# session 55), b1/a ~0.93-0.97 at S4096-S8192 with few heads; b2/a > 1 (its second wave a third
# full). If b1 wins, raise kTwoCtaMaxKeys (or drop it for dense calls) and rerun compare_torch.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s58/next-call-2cta-long.sh   (~6 min)
set -u
cd "$(dirname "$0")/../../.." || exit 1
AB_SHAPES= AB_SPARSE=0 AB_B_DIRS=". ." AB_ENV_b1="GPUATTN_KERNEL=sm90_ws_64x128_2cta" \
  AB_ENV_b2="GPUATTN_KERNEL=sm90_ws_192x128" \
  AB_EACH="B1 H8 S4096 D64;B1 H16 S4096 D64;B2 H8 S4096 D64;B1 H4 S8192 D64;B1 H8 S8192 D64;B1 H8 S4096 D64 causal;B1 H16 S2048 D64" \
  scripts/ab.sh . 3 > $OUT/console.log 2>&1
echo "ab.sh rc $?"
cat $OUT/ab/summary.md
mkdir -p /tmp/abj && tar xzf $OUT/ab/logs.tar.gz -C /tmp/abj
for s in a b1 b2; do
  python3 -c "import glob,json;c=[r['config'] for f in glob.glob('/tmp/abj/bench-$s-*.json') for r in json.load(open(f))['results']];print('$s configs:', sorted(set(c)), len(c))"
done
