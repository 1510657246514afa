#!/usr/bin/env bash
# Session 57, call 2: compare_torch (do_bench, L2 flushed, against cuDNN in the same process) of
# main (B, a49a8a1: s56's half last tiles + one tile loop on sm90_ws_128x128_s4) against the
# kernels before s56 (A, carry/base = git archive of 44f3c9f) at the causal D64 sweep points.
# Call 1 had S1024 at 210.4 us (1.027x cuDNN) against s54's 203.1 (1.043x), although gpuattn bench
# had s56's change at 0.970-0.989x: does the change hold under compare_torch's harness?
# Expected if it holds: B/A 0.98 at S512 and S1024, cuDNN ratios ~1.03-1.05.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s57/call2.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cfg() { cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=ON -DGPUATTN_BUILD_TESTS=OFF > $OUT/build-$3.log 2>&1; }
(cfg carry/base build-pa a && cmake --build build-pa -j8 --target _C >> $OUT/build-a.log 2>&1; echo "a rc $?") &
(cfg . build-py b && cmake --build build-py -j8 --target _C >> $OUT/build-b.log 2>&1; echo "b rc $?") &
wait
ts "builds"
cases=(float16,32,32,32,512,512,64,1 float16,16,32,32,1024,1024,64,1 float16,8,32,32,2048,2048,64,1)
mkdir -p /tmp/cmp
for round in 1 2; do
  for c in "${cases[@]}"; do
    for s in a b b a; do
      P=build-py/python; [ $s = a ] && P=build-pa/python
      PYTHONPATH=$P timeout 60 python3 bench/compare_torch.py --repeats 3 --json /tmp/cmp/r.json \
        --case "$c" > /tmp/cmp/r.txt 2>&1 || echo "rc $? $s $c"
      python3 -c "
import json; r=json.load(open('/tmp/cmp/r.json'))['cases'][0]
print('$round $s', '$c', '%.2f %.2f %.2f' % (1e3*r['ours_ms'], 1e3*r['cudnn_ms'], 1e3*r['flash_ms']))"
    done
  done
done > $OUT/raw.txt 2>&1
ts "compare"
python3 - $OUT/raw.txt <<'PY' | tee $OUT/summary.txt
import sys, statistics as st, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) != 6: print(line.rstrip()); continue
    d[f[2]][f[1]].append((float(f[3]), float(f[4])))
print("%-36s %8s %8s %6s %8s %8s" % ("case", "A us", "B us", "B/A", "cuDNN/A", "cuDNN/B"))
for c, v in d.items():
    a = st.median(x[0] for x in v['a']); b = st.median(x[0] for x in v['b'])
    ca = st.median(x[1] for x in v['a']); cb = st.median(x[1] for x in v['b'])
    print("%-36s %8.2f %8.2f %6.3f %8.3f %8.3f" % (c, a, b, b / a, ca / a, cb / b))
    print("   A", " ".join("%.1f" % x[0] for x in v['a']), " B", " ".join("%.1f" % x[0] for x in v['b']))
PY
