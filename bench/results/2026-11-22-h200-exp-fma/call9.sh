#!/usr/bin/env bash
# Device call 9: a second timing half of the GPU check at main (Q in registers), on another
# machine; then Q in registers in the masked kernel too (wip/q-regs-masked, .qm) against main
# (.snap2) on the sparse set (the window + globals case runs the masked kernel), 3 rounds.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p $OUT/timing
GPU_CHECK_TESTS=0 GPU_CHECK_SWEEP=1 OUT=$OUT/timing scripts/gpu-check.sh > $OUT/timing/console.log 2>&1; ts "gpu-check rc=$?"
grep -A12 "^| shape | dtype" $OUT/timing/summary.md | head -12
mkdir -p "$OUT/s1"
AB_SHAPES= AB_SPARSE=1 AB_B_DIRS=".qm" OUT=$OUT/s1 timeout $((580-($(date +%s)-t0))) scripts/ab.sh .snap2 3 >"$OUT/s1/ab.log" 2>&1; ts "sparse ab rc=$?"
cat "$OUT"/s1/ab/summary*.md 2>/dev/null | grep -v "^$"
cd "$OUT" && tar czf ab.tgz s1 && rm -rf s1
