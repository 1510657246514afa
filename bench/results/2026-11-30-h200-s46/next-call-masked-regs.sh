#!/usr/bin/env bash
# For the next session (not run): the masked kernel's register split, producer 96 / consumers 200
# at head dims 64 and 128 (D256 keeps 72 / 216: at 200 its consumers' wgmmas serialize, at 208
# they spill 32 instructions' worth), `masked-regs-96-200.patch`. Why: s45's varlen fix cost the
# Longformer case (the masked kernel) 1.7% (call 2), and the masked kernel spills in its producer
# and searcher warps: ptxas -v at D128 bf16, 86f8544 420 / 484 bytes of spill stores / loads,
# main 432 / 524, with the patch 176 / 240 (SASS: 239 -> 102 spill instructions at D128, 229 ->
# 96 at D64; the consumers' side 1 at D128 as before, 5 at D64 against 1). Expected: the masked
# cases (Longformer, partial block layouts, D64 windows with global tokens) 1-4% faster if the
# producer's spills are on its path; none if the consumers bound them.
# Before the call: apply the patch (git apply bench/results/2026-11-30-h200-s46/masked-regs-96-200.patch),
#   rm -f carry/* && CARRY_BUILD_DIR=build-s38 scripts/carry-build.sh nmr gpuattn_cuda_tests
#   git archive HEAD --prefix=head/ -- . ':!bench/results' | xz > carry/head-src.tar.xz
# Run with carry ["carry"]:  OUT=$OUT bash bench/results/2026-11-30-h200-s46/next-call-masked-regs.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p /tmp/nmr /tmp/headsrc && tar xJf carry/nmr.tar.xz -C /tmp/nmr --strip-components 1 \
  && tar xJf carry/head-src.tar.xz -C /tmp/headsrc || exit 1
cfg() { cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON > "$2.log" 2>&1 && cmake --build "$2" --target _C -j6 >> "$2.log" 2>&1; }
cfg . /tmp/build-B & pb=$!
cfg /tmp/headsrc/head /tmp/build-A & pa=$!
T=/tmp/nmr/gpuattn_cuda_tests
F='SlidingWindow/*:GlobalTokens/*:Masked*/*:LongMasked/*:HeadDim256Masked/*:*BlockSparseCuda*:VarlenNeighbours/*'
timeout 200 $T --gtest_filter="$F" --gtest_brief=1 > $OUT/masked.txt 2>&1
ts "masked suites rc $? $(grep -E '^\[  (PASSED|FAILED)' $OUT/masked.txt | tr '\n' ' ')"
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
timeout 150 $SAN --tool racecheck --error-exitcode 9 $T --gtest_filter='GlobalTokens/*:*nan_kv*' > $OUT/racecheck.txt 2>&1
ts "racecheck rc $? $(grep -E 'RACECHECK SUMMARY' $OUT/racecheck.txt | tail -1)"
wait $pb && wait $pa || { echo "a module build failed"; tail -20 /tmp/build-A.log /tmp/build-B.log; exit 1; }
ts "modules built"
for r in 1 2 3; do
  for side in A B; do
    PYTHONPATH=/tmp/build-$side/python timeout 120 python3 bench/sparse_bench.py --no-flex \
      --json /tmp/sp-$side-$r-$RANDOM.json > /tmp/sp.txt 2>&1 || { echo "sparse $side failed"; tail -5 /tmp/sp.txt; }
  done
  ts "round $r"
done
python3 - <<'PY'
import glob, json, statistics as st
t = {}
for f in glob.glob("/tmp/sp-*.json"):
    side = f.split("/")[-1].split("-")[1]
    for r in json.load(open(f))["cases"]:
        if r.get("ours_ms") is not None:
            t.setdefault(r["case"], {}).setdefault(side, []).append(round(r["ours_ms"] * 1000, 1))
for k, v in t.items():
    a, b = st.median(v["A"]), st.median(v["B"])
    print(f"{k:28s} A {a:9.1f} B {b:9.1f} us  B/A {b / a:.3f}  A {sorted(v['A'])} B {sorted(v['B'])}")
PY
