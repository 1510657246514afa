#!/usr/bin/env bash
# Device call 13: row sums by the tensor cores (wip/ones-rowsum, .or: P times ones, m64n8k16 beside
# each P V k-step, in the Q-in-registers kernels) against main (.snap3): gpuattn verify on .or's
# build first (the row sums now come from the rounded P), then default shapes 3 rounds.
set -u
export GPUATTN_COMMIT=tree-ones-rowsum
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p "$OUT/s1"
AB_SHAPES=quick AB_SPARSE=0 AB_B_DIRS=".or" OUT=$OUT/s1 timeout 200 scripts/ab.sh .snap3 1 >"$OUT/s1/ab0.log" 2>&1; ts "builds + 1 quick round rc=$?"
timeout 120 build-ab-b/tools/gpuattn verify --device cuda --json $OUT/verify-or.json > $OUT/verify-or.log 2>&1; ts "verify .or rc=$?"
grep -E "FAIL|all passed|failed" $OUT/verify-or.log | head
AB_SHAPES=default AB_SPARSE=0 AB_B_DIRS=".or" OUT=$OUT/s1 timeout $((560-($(date +%s)-t0))) scripts/ab.sh .snap3 3 >"$OUT/s1/ab.log" 2>&1; ts "default ab rc=$?"
cat "$OUT"/s1/ab/summary*.md 2>/dev/null | grep -v "^$"
cd "$OUT" && tar czf all.tgz s1 && rm -rf s1
