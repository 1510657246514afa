#!/usr/bin/env bash
# Session 54, call 2: branch wip/d64-keysplit, the key split (a third consumer warpgroup on a key
# split of 128-row items at head dim 64, FwdD64KeySplitTraits), forced with GPUATTN_KSPLIT=1 on
# every dense and causal D64 call. First its correctness: the D64 GPU cases under bias 0 and 1
# (key_split_tiles), memcheck and racecheck on gpu-check's small D64 set and a few large cases.
# Then its speed, a shape a process: A = the dispatch (unset), B = KSPLIT bias 0, C = bias 1.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s54/call2.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON > $OUT/build.log 2>&1 && cmake --build build-gpu -j16 >> $OUT/build.log 2>&1
ts "build rc $?"; grep -E "error" $OUT/build.log | head
T=build-gpu/tests/gpuattn_cuda_tests
{
  for bias in 0 1; do
    echo "== D64 cases, KSPLIT bias $bias"
    GPUATTN_KSPLIT=1 GPUATTN_KSPLIT_BIAS=$bias timeout 200 $T --gtest_brief=1 --gtest_filter='*D64*'
    echo "rc $?"
  done
  d64='AwkwardLengths/*D64*:Varlen/*H8_D64*:GroupedHeads/*H32kv8_S1000_D64:SeqlenMismatch/*D64*:-*compensated*'
  big='*S4097_D64*:*B4_H16_S1000_D64*:*B8_H16_S1000_D64_causal*:*varlen_q1500*D64:-*compensated*:*_w*:*_g*:*_b*'
  for tool in memcheck racecheck; do
    echo "== $tool"
    GPUATTN_KSPLIT=1 timeout 200 compute-sanitizer --tool $tool --error-exitcode 1 $T --gtest_brief=1 --gtest_filter="$d64:$big"
    echo "rc $?"
  done
} > $OUT/tests.log 2>&1
ts "tests"; grep -E '^== |^rc |PASSED|FAILED|ERROR SUMMARY|Hazard' $OUT/tests.log | head -40
G=build-gpu/tools/gpuattn
one() {  # one VARIANT SHAPES ONLY -> prints ms
  local env=()
  case $1 in B) env=(GPUATTN_KSPLIT=1 GPUATTN_KSPLIT_BIAS=0);; C) env=(GPUATTN_KSPLIT=1 GPUATTN_KSPLIT_BIAS=1);; esac
  env "${env[@]}" timeout 30 $G bench --shapes "$2" --only "$3" --json /tmp/one.json > /dev/null 2>&1 &&
    python3 -c "import json;r=json.load(open('/tmp/one.json'))['results'];print(' '.join('%s:%.5f:%s'%(x['label'].replace(' ','_'),x['ours_ms'],x['config'].replace(' ','_')) for x in r))"
}
cases=("default|B1 D64" "sweep|S512 D64 causal" "sweep|S1024 D64 causal" "sweep|S2048 D64 causal"
       "sweep|S512 D64 non-causal" "sweep|S1024 D64 non-causal" "sweep|S4096 D64 non-causal")
for round in 1 2 3; do
  for c in "${cases[@]}"; do
    for v in A B C C B A; do
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
print("%-32s %9s %9s %9s %7s %7s" % ("shape", "A ms", "B ms", "C ms", "B/A", "C/A"))
for lab, v in d.items():
    a, b, c = (st.median(v[k]) if v[k] else float('nan') for k in "ABC")
    print("%-32s %9.5f %9.5f %9.5f %7.3f %7.3f" % (lab, a, b, c, b / a, c / a))
PY
