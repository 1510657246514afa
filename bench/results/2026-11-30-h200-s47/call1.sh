#!/usr/bin/env bash
# Session 47, call 1. (a) s46's unrun checks: the FP8 suite with its two new varlen cases, and the
# torch-CUDA Python cases of the mended flash_attn_with_kvcache fast path (test_flash_api,
# test_fast_path). (b) s46's prepared A/B: the masked kernel's register split,
# producer 96 / consumers 200 at D64 and D128 (masked-regs-96-200.patch, applied in this tree = B;
# A = HEAD 5d7214f from carry/head-src.tar.xz). Expected: masked cases 1-4% faster if the
# producer's spills are on its path, none if the consumers bound them.
#   run with carry ["carry"]:  OUT=$OUT bash bench/results/2026-11-30-h200-s47/call1.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=5d7214f+masked-regs
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p /tmp/nmr /tmp/headsrc && tar xJf carry/nmr.tar.xz -C /tmp/nmr --strip-components 1 \
  && tar xJf carry/head-src.tar.xz -C /tmp/headsrc || exit 1
cfg() { cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON > "$2.log" 2>&1 && cmake --build "$2" --target _C -j7 >> "$2.log" 2>&1; }
cfg . /tmp/build-B & pb=$!
cfg /tmp/headsrc/head /tmp/build-A & pa=$!
T=/tmp/nmr/gpuattn_cuda_tests
timeout 120 $T --gtest_filter='*Fp8*' > $OUT/fp8.txt 2>&1
ts "fp8 rc $? $(grep -E '^\[  (PASSED|FAILED)' $OUT/fp8.txt | tr '\n' ' ')"
F='SlidingWindow/*:GlobalTokens/*:Masked*/*:LongMasked/*:HeadDim256Masked/*:*BlockSparseCuda*:VarlenNeighbours/*'
timeout 200 $T --gtest_filter="$F" --gtest_brief=1 > $OUT/masked.txt 2>&1
ts "masked suites rc $? $(grep -E '^\[  (PASSED|FAILED)' $OUT/masked.txt | tr '\n' ' ')"
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
timeout 100 $SAN --tool racecheck --error-exitcode 9 $T --gtest_filter='GlobalTokens/*:*nan_kv*' > /tmp/racecheck.txt 2>&1
ts "racecheck rc $? $(grep -E 'RACECHECK SUMMARY' /tmp/racecheck.txt | tail -1)"
wait $pb && wait $pa || { echo "a module build failed"; tail -20 /tmp/build-A.log /tmp/build-B.log; exit 1; }
ts "modules built"
PYTHONPATH=/tmp/build-B/python timeout 150 python3 -m pytest -q -rs tests/python/test_flash_api.py \
  tests/python/test_fast_path.py > $OUT/pytest.txt 2>&1
ts "pytest rc $? $(tail -1 $OUT/pytest.txt)"; grep -E "^FAILED" $OUT/pytest.txt | head
for r in 1 2 3; do
  for side in A B; do
    PYTHONPATH=/tmp/build-$side/python timeout 120 python3 bench/sparse_bench.py --no-flex \
      --json /tmp/sp-$side-$r-$RANDOM.json > /tmp/sp.txt 2>&1 || { echo "sparse $side failed"; tail -5 /tmp/sp.txt; }
  done
  ts "round $r"
done
python3 - <<'PY' | tee $OUT/ab.txt
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
