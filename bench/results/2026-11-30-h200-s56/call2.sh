#!/usr/bin/env bash
# Session 56, call 2: half last tiles (FwdTraits::kHalfLast) against the tree before them
# (carry/base: git archive of the session's first commit, bench/results and docs left out; the kernels of 44f3c9f). First the D64 and
# D128 GPU cases on every 16-bit sm_90a instantiation that runs them, then gpuattn bench a shape a
# process, A B B A, 2 rounds (A = base, B = this tree).
# Expected: causal D64 S512 0.95-0.97x the time, S1024 0.97-0.98x; D128 causal S512 ~0.97x,
# S1024 ~0.98x; the one-wave causal call (2cta, half of its 64-row items end on a half tile) ~0.95x;
# long causal 0.99-1.00x; non-causal 1.00x (a tail of 64 keys: below 1).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s56/call2.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cfg() { cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON > $OUT/build-$3.log 2>&1; }
(cfg carry/base build-a a && cmake --build build-a -j8 --target gpuattn_cli >> $OUT/build-a.log 2>&1; echo "a rc $?") &
(cfg . build-gpu b && cmake --build build-gpu -j8 --target gpuattn_cli gpuattn_cuda_tests >> $OUT/build-b.log 2>&1; echo "b rc $?") &
wait
ts "builds"; grep -h -E "error|serialized" $OUT/build-*.log | head
T=build-gpu/tests/gpuattn_cuda_tests
tests() {  # tests LABEL FILTER ENV... : 4 shards at once
  for i in 0 1 2 3; do
    env GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i "${@:3}" timeout 200 $T --gtest_brief=1 \
      --gtest_filter="$2" > $OUT/t-$1-$i.log 2>&1 &
  done
  wait
  echo "== $1: $(cat $OUT/t-$1-*.log | grep -E -c '^\[  FAILED  \].*MatchesReference|^\[  FAILED  \] [A-Z]') failed lines; $(grep -h -E 'PASSED' $OUT/t-$1-*.log | tr '\n' ' ')"
  grep -h -E '^\[  FAILED' $OUT/t-$1-*.log | sort -u | head -8
}
{
  tests auto '*D64*:*D128*:-*compensated*'
  tests two '*D64*:*D128*:-*compensated*' GPUATTN_KERNEL=sm90_ws_128x128
  tests 2cta '*D64*:-*compensated*' GPUATTN_KERNEL=sm90_ws_64x128_2cta
  tests 192 '*D64*:-*compensated*' GPUATTN_KERNEL=sm90_ws_192x128
  tests s4 '*D64*causal*:-*compensated*' GPUATTN_KERNEL=sm90_ws_128x128_s4
  tests s3 '*D128*:-*compensated*' GPUATTN_KERNEL=sm90_ws_128x128_s3
} > $OUT/tests.txt 2>&1
ts "tests"; cat $OUT/tests.txt
one() {  # one SIDE SHAPE -> label:ms:config
  local G=build-gpu/tools/gpuattn; [ $1 = A ] && G=build-a/tools/gpuattn
  timeout 30 $G bench --shape "$2" --json /tmp/one.json > /dev/null 2>&1 &&
    python3 -c "import json;r=json.load(open('/tmp/one.json'))['results'];print(' '.join('%s:%.5f:%s'%(x['label'].replace(' ','_'),x['ours_ms'],x['config'].replace(' ','_')) for x in r))"
}
cases=("B32 H32 S512 D64 causal" "B16 H32 S1024 D64 causal" "B1 H16 S1024 D64 causal"
       "B2 H16 S1024 D64 causal" "B32 H16 S512 D128 causal" "B16 H16 S1024 D128 causal"
       "B8 H16 S2048 D128 causal" "B4 H16 S4096 D128 causal" "B2 H16 S8192 D64 causal"
       "B2 H16 S1088 D64" "B1 H16 S1024 D64" "B4 H16 S4096 D128")
for round in 1 2; do
  for c in "${cases[@]}"; do
    for v in A B B A; do echo "$round $v $(one $v "$c")"; done
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
print("%-34s %9s %9s %7s %7s %7s  %s" % ("shape", "A ms", "B ms", "B/A", "min", "max", "config"))
for lab, v in d.items():
    a, b = st.median(v['A']), st.median(v['B'])
    # per-round ratios: each round's B pair against its A pair
    rs = [sum(v['B'][2*i:2*i+2]) / sum(v['A'][2*i:2*i+2]) for i in range(len(v['A']) // 2)]
    print("%-34s %9.5f %9.5f %7.3f %7.3f %7.3f  %s" % (lab, a, b, b / a, min(rs), max(rs), cfg[lab]))
PY
