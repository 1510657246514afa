#!/usr/bin/env bash
# Prepared in session 59 (not run: no device time left). Run it from main: on the device's copy
# of the tree it applies stagger-v3.patch (this folder; the branch wip/2cta-stagger as a patch),
# which adds the GPUATTN_2CTA_STAGGER switch to fwd_sm90.cuh (default 0: the kernels of main).
# 1. Traces of the one-wave shape (fp16 B1 H16 S1024 D64, sm90_ws_64x128_2cta) with the SM90_CTA
#    lines (9fb037f): which CTAs share an SM, when lone CTAs end against sharing ones
#    (call 5: first CTA done 10.88 us after the first entry, last 13.98), which rule tells an
#    SM's two CTAs apart, and their phase (0 in step, 0.5 alternating). Once without the stagger
#    (t0), once with mode 3 (t3: the later CTA by a per-SM atomic rank, 1100 cycles).
#    Expected from call 5 (softmax 1156 cycles of a 2282 period, twice one warp's exp2 floor):
#    t0 phase near 0; t3 near 0.5 if the CTAs then stay apart.
# 2. gpuattn bench, a shape a process, A B1 B2 B2 B1 A, 3 rounds: A = main's kernels (mode 0), B1
#    = mode 3 at 1100 cycles, B2 = mode 3 at 600. Call 6 (modes 1 and 2 at 1100) measured 1.05x:
#    the delay paid, nothing gained. If t0 says the pairs were told apart by neither rule, mode
#    3 is the first real test; a win (< 0.97x at the one-wave shape) goes to main as a traits
#    switch with its tests (2cta ctest block, racecheck of barrier 15).
#   OUT=$OUT bash bench/results/2026-12-01-h200-s59/next-call-stagger.sh   (~7 min)
set -u
cd "$(dirname "$0")/../../.." || exit 1
if ! grep -q 'GPUATTN_2CTA_STAGGER == 3' src/cuda/fwd_sm90.cuh; then
  pf=bench/results/2026-12-01-h200-s59/stagger-v3.patch
  git apply "$pf" 2>/dev/null || patch -p1 < "$pf" || { echo "stagger-v3.patch did not apply"; exit 2; }
fi
grep -c 'GPUATTN_2CTA_STAGGER == 3' src/cuda/fwd_sm90.cuh
OUT=$OUT/t0 timeout 120 scripts/sm90-trace.sh short-d64 > $OUT/t0.txt 2>&1; echo "t0 rc $?"
SM90_TRACE_FLAGS="-DGPUATTN_2CTA_STAGGER=3" SM90_TRACE_BUILD=build-trace3 OUT=$OUT/t3 \
  timeout 120 scripts/sm90-trace.sh short-d64 > $OUT/t3.txt 2>&1; echo "t3 rc $?"
grep -E 'SMs by|done after|step period|told apart|phase of|consumer 0 median|all [0-9]+ CTAs' $OUT/t0.txt $OUT/t3.txt
gzip -f $OUT/t0/*-trace.txt $OUT/t3/*-trace.txt
for v in "a 1100" "b 600"; do
  set -- $v
  d=.v3$1; rm -rf "$d"; mkdir "$d"
  tar cf - --exclude='./build*' --exclude='./.v3*' --exclude=./bench/results --exclude=./carry \
    --exclude=./.git . | tar xf - -C "$d"
  sed -i -e 's/^#define GPUATTN_2CTA_STAGGER 0$/#define GPUATTN_2CTA_STAGGER 3/' \
    -e "s/^#define GPUATTN_2CTA_STAGGER_CYCLES 1100$/#define GPUATTN_2CTA_STAGGER_CYCLES $2/" \
    "$d/src/cuda/fwd_sm90.cuh"
  grep -E '^#define GPUATTN_2CTA_STAGGER' "$d/src/cuda/fwd_sm90.cuh"
done
AB_SHAPES= AB_SPARSE=0 AB_B_DIRS=".v3a .v3b" \
  AB_EACH="B1 H16 S1024 D64;B1 H16 S1024 D64 causal;B1 H8 S1024 D64;B1 H16 S2048 D64;B2 H16 S1024 D64" \
  timeout 420 scripts/ab.sh . 3 > $OUT/console.log 2>&1
echo "ab.sh rc $?"
cat $OUT/ab/summary.md
