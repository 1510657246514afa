#!/usr/bin/env bash
# Session 55, call 5: wip/d64-solo, where it stops paying: grids of 512-2048 64-row items (2-8
# waves of the solo kernel's 264 CTAs), dense and causal. A = the dispatch, B = GPUATTN_SOLO=1;
# a shape a process (gpuattn bench --shape), A B B A, 2 rounds. No tests (call 4 ran them).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s55/call5.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-wip/d64-solo}
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON > $OUT/build.log 2>&1 && cmake --build build-gpu -j16 --target gpuattn_cli >> $OUT/build.log 2>&1
ts "build rc $?"; grep -E "error" $OUT/build.log | head
T=build-gpu/tests/gpuattn_cuda_tests
G=build-gpu/tools/gpuattn
one() {  # one VARIANT SHAPE -> prints label:ms:config
  local env=()
  case $1 in B) env=(GPUATTN_SOLO=1);; C) env=(GPUATTN_SOLO=2);; esac
  env "${env[@]}" timeout 30 $G bench --shape "$2" --json /tmp/one.json > /dev/null 2>&1 &&
    python3 -c "import json;r=json.load(open('/tmp/one.json'))['results'];print(' '.join('%s:%.5f:%s'%(x['label'].replace(' ','_'),x['ours_ms'],x['config'].replace(' ','_')) for x in r))"
}
cases=("B3 H16 S1024 D64" "B4 H16 S1024 D64" "B8 H16 S1024 D64" "B1 H16 S4096 D64"
       "B2 H16 S1024 D64 causal" "B4 H16 S1024 D64 causal" "B8 H16 S1024 D64 causal"
       "B1 H16 S4096 D64 causal")
for round in 1 2; do
  for c in "${cases[@]}"; do
    for v in A B B A; do
      echo "$round $v $(one $v "$c")"
    done
  done
done > $OUT/ab-raw.txt 2>&1
ts "timing"
python3 - $OUT/ab-raw.txt <<'PY' | tee $OUT/ab.txt
import sys, statistics as st, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 3: continue
    for item in f[2:]:
        lab, ms, cfg = item.split(':')
        d[lab][f[1]].append(float(ms))
print("%-34s %9s %9s %9s %7s %7s" % ("shape", "A ms", "B ms", "C ms", "B/A", "C/A"))
for lab, v in d.items():
    a, b, c = (st.median(v[k]) if v[k] else float('nan') for k in "ABC")
    print("%-34s %9.5f %9.5f %9.5f %7.3f %7.3f" % (lab, a, b, c, b / a, c / a))
PY
