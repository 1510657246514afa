#!/usr/bin/env bash
# Session 46, call 3, branch wip/masked-seq-end (main + the masked producer's load_kv without the
# p.is_varlen() test: seq_end holds INT_MAX without varlen). Correctness: the whole GPU suite
# (also the first GPU run of the FP8 kernel's V tail map through rows_map, 7b6b71d), memcheck and
# racecheck of the varlen neighbour cases (the masked kernel's among them). Speed: sparse_bench
# --no-flex A B A B A B on the Longformer case (the masked kernel; call 2: 1.017x the time of
# 86f8544) and block-sparse 90% (the listed path, untouched: a control); A = main's Python module
# (source carried as head-src.tar.xz), B = this tree's. Carry: s46m (gpuattn_cuda_tests).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s46/call3.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p /tmp/s46m /tmp/headsrc && tar xJf carry/s46m.tar.xz -C /tmp/s46m --strip-components 1 \
  && tar xJf carry/head-src.tar.xz -C /tmp/headsrc || exit 1
cfg() { cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON > "$2.log" 2>&1 && cmake --build "$2" --target _C -j6 >> "$2.log" 2>&1; }
cfg . /tmp/build-B & pb=$!
cfg /tmp/headsrc/head /tmp/build-A & pa=$!
T=/tmp/s46m/gpuattn_cuda_tests
timeout 330 $T --gtest_brief=1 > $OUT/suite.txt 2>&1
ts "suite rc $? $(grep -E '^\[  (PASSED|FAILED)' $OUT/suite.txt | tr '\n' ' ')"
grep -E "^\[  FAILED  \]" $OUT/suite.txt | head -10
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for tool in memcheck racecheck; do
  timeout 120 $SAN --tool $tool --error-exitcode 9 $T \
    --gtest_filter='VarlenNeighbours/*:*nan_kv*:Fp8AttentionCuda.KernelMatches*' > $OUT/$tool.txt 2>&1
  ts "$tool rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/$tool.txt | tail -1) $(grep -cE '^\[       OK' $OUT/$tool.txt) ok"
done
wait $pb || { echo "B build failed"; tail -20 /tmp/build-B.log; exit 1; }
wait $pa || { echo "A build failed"; tail -20 /tmp/build-A.log; exit 1; }
ts "modules built"
for r in 1 2 3; do
  for side in A B; do
    for c in "4096 + 128 global" "block-sparse 90%"; do
      PYTHONPATH=/tmp/build-$side/python timeout 100 python3 bench/sparse_bench.py --no-flex \
        --cases "$c" --json /tmp/sp-$side-$r-$RANDOM.json > /tmp/sp.txt 2>&1 || { echo "sparse $side failed"; tail -5 /tmp/sp.txt; }
    done
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
