#!/usr/bin/env bash
# Session 55, call 3: branch wip/d64-solo, one consumer warpgroup a CTA and two CTAs an SM at head
# dim 64 (FwdD64SoloTraits: 64-row items, each CTA its own item stream and K/V ring, no turns),
# forced with GPUATTN_SOLO=1 on every dense and causal D64 call. First its correctness (the D64
# GPU cases; the launch throws if the two CTAs are not resident together), then its speed, a shape
# a process: A = the dispatch (unset), B = GPUATTN_SOLO=1, in A B B A order, 2 rounds.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s55/call3.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-wip/d64-solo}
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON > $OUT/build.log 2>&1 && cmake --build build-gpu -j16 >> $OUT/build.log 2>&1
ts "build rc $?"; grep -E "error" $OUT/build.log | head
T=build-gpu/tests/gpuattn_cuda_tests
G=build-gpu/tools/gpuattn
{
  echo "== D64 cases, GPUATTN_SOLO=1"
  GPUATTN_SOLO=1 timeout 150 $T --gtest_brief=1 --gtest_filter='*D64*:-*compensated*'
  echo "rc $?"
} > $OUT/tests.log 2>&1
ts "tests"; grep -E '^== |^rc |PASSED|FAILED|ERROR SUMMARY|Hazard|resident' $OUT/tests.log | head -30
one() {  # one VARIANT SHAPES ONLY -> prints label:ms:config
  local env=()
  case $1 in B) env=(GPUATTN_SOLO=1);; esac
  env "${env[@]}" timeout 30 $G bench --shapes "$2" --only "$3" --json /tmp/one.json > /dev/null 2>&1 &&
    python3 -c "import json;r=json.load(open('/tmp/one.json'))['results'];print(' '.join('%s:%.5f:%s'%(x['label'].replace(' ','_'),x['ours_ms'],x['config'].replace(' ','_')) for x in r))"
}
cases=("default|B1 D64" "sweep|S512 D64 causal" "sweep|S1024 D64 causal" "sweep|S2048 D64 causal"
       "sweep|S512 D64 non-causal" "sweep|S1024 D64 non-causal" "sweep|S4096 D64 non-causal")
for round in 1 2; do
  for c in "${cases[@]}"; do
    for v in A B B A; do
      echo "$round $v $(one $v "${c%%|*}" "${c#*|}")"
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
print("%-34s %9s %9s %7s  %s" % ("shape", "A ms", "B ms", "B/A", "B runs / A runs"))
for lab, v in d.items():
    a, b = (st.median(v[k]) if v[k] else float('nan') for k in "AB")
    print("%-34s %9.5f %9.5f %7.3f  %s / %s" % (lab, a, b, b / a, v['B'], v['A']))
PY
