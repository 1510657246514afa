#!/usr/bin/env bash
# Device call 1 (twelfth session): the dense kernel's causal / ragged-end mask from one prefix bit
# mask a row (wip/mask-bits, .mb) against main 6c072a1 (.snap). ab.sh builds both; gpuattn verify
# on .mb's build first, then the sweep 2 rounds (short causal rows are the target), then default
# shapes 3 rounds.
set -u
export GPUATTN_COMMIT=tree-mask-bits
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p "$OUT/s1"
AB_SHAPES=sweep AB_SPARSE=0 AB_B_DIRS=".mb" OUT=$OUT/s1 timeout 330 scripts/ab.sh .snap 2 >"$OUT/s1/ab.log" 2>&1; ts "sweep ab rc=$?"
cat "$OUT"/s1/ab/summary*.md 2>/dev/null | grep -v "^$"
timeout 90 build-ab-b/tools/gpuattn verify --device cuda --json $OUT/verify-mb.json > $OUT/verify-mb.log 2>&1; ts "verify .mb rc=$?"
grep -E "FAIL|all passed|failed|passed" $OUT/verify-mb.log | tail -3
mkdir -p "$OUT/s2"; AB_SHAPES=default AB_SPARSE=0 AB_B_DIRS=".mb" OUT=$OUT/s2 timeout $((585-($(date +%s)-t0))) scripts/ab.sh .snap 3 >"$OUT/s2/ab.log" 2>&1; ts "default ab rc=$?"
cat "$OUT"/s2/ab/summary*.md 2>/dev/null | grep -v "^$"
cd "$OUT" && tar czf all.tgz s1 s2 && rm -rf s1 s2
