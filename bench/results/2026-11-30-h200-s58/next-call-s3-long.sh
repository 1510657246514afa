#!/usr/bin/env bash
# Prepared in session 58, not run (no device time left). kD128ThreeStageMaxKeys (2048) stops the
# 3-stage head-dim-128 kernel where session 23 measured it 1.02-1.04x the 2-stage kernel's time
# (S4096, S32k causal 1.027x). Since then it lost its window / block-layout code (s58: 0.985x at
# S2048) and its causal calls got a twin (s57: causal S2048 0.983x); the 2-stage kernel's own cut
# measured null (s58 call 5). GPUATTN_KERNEL=sm90_ws_128x128_s3 (s58) now forces it at any
# length: a = the dispatch's pick (2-stage from 2049 keys), b = forced 3-stage, one tree, a
# shape a process, A B B A, 4 rounds (the long shapes spread 5-10% in s58 call 5).
# Expected: causal S3000-S8192 ~0.99-1.00x (the twin's gain against s23's loss), dense 1.01-1.03x.
# If causal wins, raise the key bound for causal calls (select_fwd_config) and rerun compare_torch.
# The last line checks the force: b's JSON configs must all be sm90_ws_128x128_s3 (48 runs).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s58/next-call-s3-long.sh   (~5 min)
set -u
cd "$(dirname "$0")/../../.." || exit 1
AB_SHAPES= AB_SPARSE=0 AB_B_DIRS=. AB_ENV_b="GPUATTN_KERNEL=sm90_ws_128x128_s3" \
  AB_EACH="B8 H16 S3000 D128 causal;B4 H16 S4096 D128 causal;B4 H16 S4096 D128 causal bf16;B2 H16 S8192 D128 causal;B1 H32 S16384 D128 causal;B4 H16 S4096 D128" \
  scripts/ab.sh . 4 > $OUT/console.log 2>&1
echo "ab.sh rc $?"
cat $OUT/ab/summary.md
mkdir -p /tmp/abj && tar xzf $OUT/ab/logs.tar.gz -C /tmp/abj
python3 -c "import glob,json;c=[r['config'] for f in glob.glob('/tmp/abj/bench-b-*.json') for r in json.load(open(f))['results']];print('b configs:', sorted(set(c)), len(c))"
