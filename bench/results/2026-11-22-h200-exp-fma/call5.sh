#!/usr/bin/env bash
# Device call 5: Q in registers for S = Q K^T (wip/q-regs, .qr: wgmma with A from registers in the
# 2-consumer dense kernels at head dims 64 and 128) against main (.snap). Default shapes 3 rounds,
# the sweep 2 rounds, gpuattn verify on .qr's build, then the power probe on .qr's module.
set -u
export GPUATTN_COMMIT=tree-q-regs
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p "$OUT/s1"
AB_SHAPES=default AB_SPARSE=0 AB_B_DIRS=".qr" OUT=$OUT/s1 timeout 300 scripts/ab.sh .snap 3 >"$OUT/s1/ab.log" 2>&1; ts "default ab rc=$?"
cat "$OUT"/s1/ab/summary*.md 2>/dev/null | grep -v "^$"
timeout 150 build-ab-b/tools/gpuattn verify --device cuda --json $OUT/verify-qr.json > $OUT/verify-qr.log 2>&1; ts "verify .qr rc=$?"
grep -E "FAIL|all passed|failed" $OUT/verify-qr.log | head
mkdir -p "$OUT/s2"; AB_SHAPES=sweep AB_SPARSE=0 AB_B_DIRS=".qr" OUT=$OUT/s2 timeout $((560-($(date +%s)-t0))) scripts/ab.sh .snap 2 >"$OUT/s2/ab.log" 2>&1; ts "sweep ab rc=$?"
cat "$OUT"/s2/ab/summary*.md 2>/dev/null | grep -v "^$"
cd "$OUT" && tar czf all.tgz s1 s2 && rm -rf s1 s2
