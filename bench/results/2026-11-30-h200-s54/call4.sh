#!/usr/bin/env bash
# Session 54, call 4: issue #4's standing at main (5af1e67's kernels, unchanged since s46) and
# whether compare_torch shows s53's history effect: s46 call 2's seven shapes (the one-wave D64,
# the four sweep points under 1.05x cuDNN, two controls), compare_torch in turn (5 rounds), (a)
# all in one process as s46 ran them, (b) each shape in a process of its own.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s54/call4.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-py -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON -DGPUATTN_BUILD_TESTS=OFF > $OUT/build.log 2>&1 &&
  cmake --build build-py --target _C -j16 >> $OUT/build.log 2>&1
ts "build rc $?"
cases=(float16,1,16,16,1024,1024,64,0 float16,32,32,32,512,512,64,1 float16,16,32,32,1024,1024,64,1
       float16,32,16,16,512,512,128,0 float16,32,8,8,512,512,256,0 float16,4,16,16,4096,4096,128,0
       float16,16,16,16,1024,1024,128,1)
args=(); for c in "${cases[@]}"; do args+=(--case "$c"); done
export PYTHONPATH=build-py/python
timeout 150 python3 bench/compare_torch.py --repeats 5 --json $OUT/together.json "${args[@]}" > $OUT/together.txt 2>&1
ts "together rc $?"
i=0
for c in "${cases[@]}"; do
  i=$((i + 1))
  timeout 40 python3 bench/compare_torch.py --repeats 5 --json $OUT/alone-$i.json --case "$c" > /tmp/alone-$i.txt 2>&1
  echo "rc $?"; tail -4 /tmp/alone-$i.txt
done > $OUT/alone.txt 2>&1
ts "alone"
python3 - $OUT <<'PY' | tee $OUT/summary.txt
import json, sys, os
out = sys.argv[1]
def cases(f):
    try:
        return json.load(open(f))["cases"]
    except Exception as e:
        return []
def key(r):
    return "%s B%d H%d S%d D%d%s" % (r["dtype"], r["batch"], r["heads_q"], r["seqlen_q"],
                                    r["head_dim"], " causal" if r["causal"] else "")
tog = {key(r): r for r in cases(os.path.join(out, "together.json"))}
alone = {}
for i in range(1, 8):
    for r in cases(os.path.join(out, "alone-%d.json" % i)):
        alone[key(r)] = r
print("%-36s %8s %8s %7s | %8s %8s %7s" % ("shape", "ours us", "cudnn", "cudnn/ours",
                                          "ours us", "cudnn", "cudnn/ours"))
print("%-36s %25s | %25s" % ("", "together (one process)", "alone (a process each)"))
for k in list(tog) or list(alone):
    cols = []
    for src in (tog, alone):
        r = src.get(k)
        if r is None or "ours_ms" not in r or "cudnn_ms" not in r:
            cols.append("%8s %8s %7s" % ("-", "-", "-"))
        else:
            cols.append("%8.2f %8.2f %7.3f" % (1e3 * r["ours_ms"], 1e3 * r["cudnn_ms"],
                                               r["cudnn_ms"] / r["ours_ms"]))
    print("%-36s %s | %s" % (k, cols[0], cols[1]))
PY
