#!/usr/bin/env bash
# Device call 3: (1) the D256 dense kernel handing its one Q buffer back after an item's last S
# GEMM, O stored from the registers (wip/d256-early-q, .eq) against main (.snap): the sweep 2
# rounds, then default shapes 3 rounds, gpuattn verify on .eq's build; (2) the trace of .eq at
# causal-d256-512; (3) a trace build of main with finer stamps (.tr: item wait, Q wait, ldmatrix,
# turn, epilogue reductions, stmatrix) at causal-d64-512 and causal-short, read by bench/trace_x.py.
set -u
export GPUATTN_COMMIT=tree-d256-early-q
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p "$OUT/s1"
AB_SHAPES=sweep AB_SPARSE=0 AB_B_DIRS=".eq" OUT=$OUT/s1 timeout 200 scripts/ab.sh .snap 2 >"$OUT/s1/ab.log" 2>&1; ts "sweep ab rc=$?"
cat "$OUT"/s1/ab/summary*.md 2>/dev/null | grep -v "^$" | grep -E "D256|case|---"
timeout 150 build-ab-b/tools/gpuattn verify --device cuda --json $OUT/verify-eq.json > $OUT/verify-eq.log 2>&1; ts "verify .eq rc=$?"
grep -E "FAIL|passed|failed" $OUT/verify-eq.log | tail -3
(cd .eq && OUT=$OUT/tr-eq timeout 100 scripts/sm90-trace.sh causal-d256-512 > $OUT/tr-eq.log 2>&1); ts "trace .eq rc=$?"
tail -2 $OUT/tr-eq.log
(cd .tr && OUT=$OUT/tr-x timeout 100 scripts/sm90-trace.sh causal-d64-512 causal-short > $OUT/tr-x.log 2>&1); ts "trace .tr rc=$?"
for c in causal-d64-512 causal-short; do echo "== $c"; python3 bench/results/2026-11-22-h200-short-items/trace_x.py $OUT/tr-x/$c-trace.txt; done
mkdir -p "$OUT/s2"; AB_SHAPES=default AB_SPARSE=0 AB_B_DIRS=".eq" OUT=$OUT/s2 timeout $((585-($(date +%s)-t0))) scripts/ab.sh .snap 3 >"$OUT/s2/ab.log" 2>&1; ts "default ab rc=$?"
cat "$OUT"/s2/ab/summary*.md 2>/dev/null | grep -v "^$"
cd "$OUT" && tar czf all.tgz s1 s2 tr-eq tr-x && rm -rf s1 s2 tr-eq tr-x
