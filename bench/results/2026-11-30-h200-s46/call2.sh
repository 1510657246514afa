#!/usr/bin/env bash
# Session 46, call 2, at main (the FP8 varlen merge). Two things:
#  1. Issue #4's standing after s45's varlen fix (the dense producer loop in two copies, the V
#     tail map) and s46's merge: compare_torch in turn (5 repeats) on the one-wave D64 shape, the
#     four sweep points session 32 left under 1.05x cuDNN, and two that passed (controls).
#  2. The masked kernel's speed, never timed since s45 (a80b3f9 added ~13 spill instructions to
#     its producer): bench/sparse_bench.py --no-flex, A B B A, A = 86f8544's Python module (the
#     commit before s45's kernel changes; its source carried as old-src.tar.xz), B = this tree's.
#     Then one sparse_bench with Flex on B (ours/Flex against the README's figures).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s46/call2.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p /tmp/oldsrc && tar xJf carry/old-src.tar.xz -C /tmp/oldsrc || exit 1
cfg() { cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON > "$2.log" 2>&1 && cmake --build "$2" --target _C -j8 >> "$2.log" 2>&1; }
cfg . /tmp/build-B & pb=$!
cfg /tmp/oldsrc/old /tmp/build-A & pa=$!
wait $pb || { echo "B build failed"; tail -20 /tmp/build-B.log; exit 1; }
ts "B built"
PYTHONPATH=/tmp/build-B/python timeout 200 python3 bench/compare_torch.py --repeats 5 \
  --json $OUT/turns.json \
  --case float16,1,16,16,1024,1024,64,0 --case float16,32,32,32,512,512,64,1 \
  --case float16,16,32,32,1024,1024,64,1 --case float16,32,16,16,512,512,128,0 \
  --case float16,32,8,8,512,512,256,0 --case float16,4,16,16,4096,4096,128,0 \
  --case float16,16,16,16,1024,1024,128,1 > $OUT/turns.txt 2>&1
ts "compare_torch rc $?"; grep -v "^$" $OUT/turns.txt | tail -22
wait $pa || { echo "A build failed"; tail -20 /tmp/build-A.log; exit 1; }
ts "A built"
for side in A B B A; do
  PYTHONPATH=/tmp/build-$side/python timeout 150 python3 bench/sparse_bench.py --no-flex \
    --json /tmp/sparse-$side-$RANDOM.json > /tmp/sparse-$side.txt 2>&1 || { echo "sparse $side failed"; tail -5 /tmp/sparse-$side.txt; }
  ts "sparse $side"
done
python3 - <<'PY'
import glob, json, statistics as st
t = {}
for f in glob.glob("/tmp/sparse-*.json"):
    side = f.split("-")[-2]
    d = json.load(open(f))
    for r in d["cases"]:
        if r.get("ours_ms") is not None:
            t.setdefault(r["case"], {}).setdefault(side, []).append(r["ours_ms"] * 1000)
for k, v in t.items():
    a, b = st.median(v.get("A", [0])), st.median(v.get("B", [0]))
    print(f"{k:32s} A {a:10.1f} B {b:10.1f} us  B/A {b / a if a else 0:.3f}  A {v.get('A')} B {v.get('B')}")
PY
tar czf $OUT/sparse-ab.tgz -C /tmp $(cd /tmp && ls sparse-*.json sparse-*.txt)
left=$((570 - $(date +%s) + t0))
[ $left -gt 60 ] && PYTHONPATH=/tmp/build-B/python timeout $left python3 bench/sparse_bench.py \
  --json $OUT/sparse-flex.json > $OUT/sparse-flex.txt 2>&1
ts "sparse with Flex rc $?"; grep -v "^$" $OUT/sparse-flex.txt | tail -12
