#!/usr/bin/env bash
# Device call 10: an item's first S GEMM from Q in shared memory while Q's registers load
# (wip/q-regs-overlap, .ov) against main with Q in registers (.snap3). Default shapes 4 rounds, the
# sweep 2 rounds, then gpuattn verify on .ov's build.
set -u
export GPUATTN_COMMIT=tree-q-overlap
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p "$OUT/s1"
AB_SHAPES=default AB_SPARSE=0 AB_B_DIRS=".ov" OUT=$OUT/s1 timeout 300 scripts/ab.sh .snap3 4 >"$OUT/s1/ab.log" 2>&1; ts "default ab rc=$?"
cat "$OUT"/s1/ab/summary*.md 2>/dev/null | grep -v "^$"
mkdir -p "$OUT/s2"; AB_SHAPES=sweep AB_SPARSE=0 AB_B_DIRS=".ov" OUT=$OUT/s2 timeout $((480-($(date +%s)-t0))) scripts/ab.sh .snap3 2 >"$OUT/s2/ab.log" 2>&1; ts "sweep ab rc=$?"
cat "$OUT"/s2/ab/summary*.md 2>/dev/null | grep -v "^$" | grep -E "D64|D128|case|---"
timeout $((585-($(date +%s)-t0))) build-ab-b/tools/gpuattn verify --device cuda --json $OUT/verify-ov.json > $OUT/verify-ov.log 2>&1; ts "verify .ov rc=$?"
grep -E "FAIL|all passed|failed" $OUT/verify-ov.log | head
cd "$OUT" && tar czf all.tgz s1 s2 && rm -rf s1 s2
