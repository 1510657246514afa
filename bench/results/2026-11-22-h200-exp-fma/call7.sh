#!/usr/bin/env bash
# Device call 7: Q in registers (this tree, 03661bc) against main before it (.snap, 4f86aa0):
# default shapes and the sparse set, 5 rounds; then the power probe (fp16 and bf16 S4096 D128,
# fp16 S16384 D128) on each side's module, alternating a, b, a, b.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p "$OUT/s1"
AB_SHAPES=default AB_SPARSE=1 OUT=$OUT/s1 timeout 400 scripts/ab.sh .snap 5 >"$OUT/s1/ab.log" 2>&1; ts "default ab rc=$?"
cat "$OUT"/s1/ab/summary*.md 2>/dev/null | grep -v "^$"
for r in 1 2; do for side in a b; do
  echo "== power probe round $r side $side"
  PYTHONPATH=build-ab-$side/python timeout 60 python3 bench/power_probe.py --seconds 3 --rounds 1 \
    --case float16,4,16,4096,128 --case bfloat16,4,16,4096,128 --case float16,1,16,16384,128 2>&1 | grep -v "^|---" | tail -7
done; done | tee $OUT/power.md; ts "probe done"
cd "$OUT" && tar czf all.tgz s1 && rm -rf s1
