#!/usr/bin/env bash
# Session 58, call 5: sm90_ws_128x128's dense and causal head-dim-128 calls on an instantiation
# of their own (FwdD128DenseTraits: no window or block-layout code, fp16 7904 -> 5304
# instructions), which the dispatch gives dense and causal D128 calls from 2049 keys. A = main
# before it (carry/base), B = this tree; gpuattn bench a shape a process, A B B A, 3 rounds; then
# B's D128 GPU cases on the dispatch's picks and forced onto sm90_ws_128x128 (every D128 dense /
# causal case then runs the new instantiation), and memcheck / racecheck of the forced small D128
# shapes. Expected (the 3-stage kernel's cut, call 1: 0.985-0.994x dense, 0.956-0.981x causal):
# 0.98-1.00x; long items amortize the fixed cost, so likely nearer 1.00x than the short shapes.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s58/call5.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cfg() { cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON > $OUT/build-$3.log 2>&1; }
(cfg carry/base build-a a && cmake --build build-a -j6 --target gpuattn_cli >> $OUT/build-a.log 2>&1; echo "a rc $?") &
(cfg . build-gpu b && cmake --build build-gpu -j10 --target gpuattn_cli gpuattn_cuda_tests >> $OUT/build-b.log 2>&1; echo "b rc $?") &
wait
ts "builds"
one() {  # one SIDE SHAPE -> label:ms:config
  local G=build-gpu/tools/gpuattn; [ $1 = a ] && G=build-a/tools/gpuattn
  timeout 30 $G bench --shape "$2" --json /tmp/one.json > /dev/null 2>&1 &&
    python3 -c "import json;r=json.load(open('/tmp/one.json'))['results'];print(' '.join('%s:%.5f:%s'%(x['label'].replace(' ','_'),x['ours_ms'],x['config'].replace(' ','_')) for x in r))"
}
cases=("B4 H16 S4096 D128" "B4 H16 S4096 D128 causal" "B4 H16 S4096 D128 bf16"
       "B2 H16 S8192 D128 causal bf16" "B1 H32 S32768 D128 causal" "B8 H16 S3000 D128")
for round in 1 2 3; do
  for c in "${cases[@]}"; do
    for v in a b b a; do echo "$round $v $(one $v "$c")"; done
  done
done > $OUT/ab-raw.txt 2>&1
ts "timing"
python3 - $OUT/ab-raw.txt <<'PY' | tee $OUT/ab.txt
import sys, statistics as st, collections
d = collections.defaultdict(lambda: collections.defaultdict(list)); cfg = {}
for line in open(sys.argv[1]):
    f = line.split()
    for item in f[2:]:
        lab, ms, c = item.split(':'); d[lab][f[1]].append(float(ms)); cfg[lab] = c
for lab, v in d.items():
    a, b = st.median(v['a']), st.median(v['b'])
    print("%-34s A %.5f  B %.5f  B/A %.3f  %s" % (lab, a, b, b / a, cfg[lab]))
PY
T=build-gpu/tests/gpuattn_cuda_tests
tests() {  # LABEL FILTER ENV...
  for i in 0 1 2 3; do
    env GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i "${@:3}" timeout 150 $T --gtest_brief=1 \
      --gtest_filter="$2" > /tmp/t-$1-$i.log 2>&1 &
  done
  wait
  echo "== $1: $(grep -h -E 'PASSED|FAILED  \] [0-9]|tests, listed' /tmp/t-$1-*.log | tr '\n' ' ')"
  grep -h -E '^\[  FAILED' /tmp/t-$1-*.log | sort -u | head -8
}
san() {  # TOOL
  GPUATTN_KERNEL=sm90_ws_128x128 timeout 200 compute-sanitizer --tool $1 --error-exitcode 1 $T \
    --gtest_brief=1 --gtest_filter='AwkwardLengths/*D128*:SeqlenMismatch/*D128*:HalfLastTile/*D128*:-*compensated*' \
    > /tmp/san-$1.log 2>&1
  echo "== $1 rc $? $(grep -h -E 'PASSED|ERROR SUMMARY' /tmp/san-$1.log | tr '\n' ' ')"
}
{ tests auto '*D128*'; tests forced '*D128*:-*compensated*' GPUATTN_KERNEL=sm90_ws_128x128
  ts "tests"; san memcheck & san racecheck & wait; ts "sanitizer"; } 2>&1 | tee $OUT/tests.txt
