#!/usr/bin/env bash
# Session 51, call 8: call 7's change from tile 8 of an item on only (the first 8 tiles in a loop of their own, as main), and not at D64 (call 7: D256 long +3-5%, D128 dense +1-5%, but short causal -3% and D64 -2-4%). Before: the FP8 kernel skipped O's rescale when no row max of the warp's 16 rows grew
# (a warp vote; alpha was 1 for all). Call 6's ncu: at D128 S8192 dense we issue 667M
# instructions against cuDNN FP8's 542M at the same issue rate (55%), 1.22x its time; the
# rescale is D / 2 FMUL a thread a tile (64 at D128 beside 64 exponentials, 128 at D256).
# Expected: long calls 5-10% faster at D128, more at D256; S512 little (few tiles a row).
# carry ["carry/e8.tar.xz"]: e8/gpuattn_cuda_tests, e8/gpuattn_fp8_probe of the change,
# e8/probe_main of main.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s51/call8.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/e8 && tar xJf carry/e8.tar.xz -C /tmp/e8 --strip-components 1 || { echo "no carry"; exit 1; }
T=/tmp/e8/gpuattn_cuda_tests
timeout 150 $T --gtest_filter='Fp8*' > $OUT/fp8-suite.txt 2>&1
echo "fp8 suite rc $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/fp8-suite.txt | tr '\n' ' ')"
grep -E 'Failure|FAILED' -A8 $OUT/fp8-suite.txt | head -30
for d in 256 128 64; do
  echo "== head dim $d, A: main, B: O's rescale skipped when no row max of the warp grew"
  timeout 110 python3 bench/ab_probe.py --rounds 3 /tmp/e8/probe_main /tmp/e8/gpuattn_fp8_probe \
    -- 20 --head-dim $d 2>&1 | tee $OUT/ab-d$d.txt
done
