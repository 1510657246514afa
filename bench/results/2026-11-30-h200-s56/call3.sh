#!/usr/bin/env bash
# Session 56, call 3: call 2 found half last tiles slower on the 2-consumer kernels (causal D64
# S512 1.09x the time on sm90_ws_128x128_s4, D128 S512 1.05x) and faster on the 3-consumer one's
# 64-key tail (B2 H16 S1088 0.97x). The s4 kernel grew from 6296 to 6752 instructions (a second
# copy of the tile step, run once an item), and short causal items run much of their kernel's
# code once an item. Variants (experiment macros, one build each), against A = carry/base:
#   B: half last tiles on the 3-consumer kernel only
#   C: B, and the s4 kernel with one tile loop (no whole-tile loop: 5832 instructions)
#   D: C, and half last tiles on the s4 kernel too (6296 instructions, as A's)
# Expected: B 0.97-0.99x on the 3-consumer shapes, 1.00 elsewhere; C: if code size is what the
# short causal items pay for, 0.97-0.99x at causal S512 / S1024; D between.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s56/call3.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
build() {  # build NAME SRC FLAGS TARGETS...
  cmake -S "$2" -B build-$1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DGPUATTN_CUDA=ON "-DCMAKE_CUDA_FLAGS=$3" > $OUT/build-$1.log 2>&1 &&
    cmake --build build-$1 -j4 --target "${@:4}" >> $OUT/build-$1.log 2>&1
  echo "$1 rc $?"
}
X=-DGPUATTN_X_HALF_MIN_CONSUMERS=3
build a carry/base "" gpuattn_cli &
build b . "$X -DGPUATTN_X_HALF_S4=0" gpuattn_cli gpuattn_cuda_tests &
build c . "$X -DGPUATTN_X_HALF_S4=0 -DGPUATTN_X_S4_ONE_LOOP=1" gpuattn_cli gpuattn_cuda_tests &
build d . "$X -DGPUATTN_X_HALF_S4=1 -DGPUATTN_X_S4_ONE_LOOP=1" gpuattn_cli gpuattn_cuda_tests &
wait
ts "builds"; grep -h -E "error|serialized" $OUT/build-*.log | head
tests() {  # tests LABEL BUILD FILTER ENV... : 4 shards at once
  for i in 0 1 2 3; do
    env GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i "${@:4}" timeout 200 build-$2/tests/gpuattn_cuda_tests \
      --gtest_brief=1 --gtest_filter="$3" > $OUT/t-$i.log 2>&1 &
  done
  wait
  echo "== $1: $(grep -h -E 'PASSED|FAILED  \] [0-9]' $OUT/t-*.log | tr '\n' ' ')"
  grep -h -E '^\[  FAILED' $OUT/t-*.log | sort -u | head -8
}
{
  tests b-192 b '*D64*:-*compensated*' GPUATTN_KERNEL=sm90_ws_192x128
  tests c-auto c '*D64*:-*compensated*'
  tests d-auto d '*D64*:-*compensated*'
} > $OUT/tests.txt 2>&1
rm -f $OUT/t-*.log
ts "tests"; cat $OUT/tests.txt
one() {  # one SIDE SHAPE -> label:ms:config
  timeout 30 build-$1/tools/gpuattn bench --shape "$2" --json /tmp/one.json > /dev/null 2>&1 &&
    python3 -c "import json;r=json.load(open('/tmp/one.json'))['results'];print(' '.join('%s:%.5f:%s'%(x['label'].replace(' ','_'),x['ours_ms'],x['config'].replace(' ','_')) for x in r))"
}
cases=("B32 H32 S512 D64 causal" "B16 H32 S1024 D64 causal" "B2 H16 S1024 D64 causal"
       "B8 H32 S512 D64 causal bf16" "B4 H16 S1024 D64 causal"
       "B2 H16 S1088 D64" "B2 H16 S8192 D64 causal" "B4 H32 S4000 D64 causal" "B4 H32 S4096 D64")
for round in 1 2; do
  for c in "${cases[@]}"; do
    for v in a b c d d c b a; do echo "$round $v $(one $v "$c")"; done
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
print("%-32s %8s %6s %6s %6s  %s" % ("shape", "A ms", "B/A", "C/A", "D/A", "config"))
for lab, v in d.items():
    a = st.median(v['a'])
    print("%-32s %8.5f %6.3f %6.3f %6.3f  %s" % (lab, a, st.median(v['b']) / a, st.median(v['c']) / a,
                                              st.median(v['d']) / a, cfg[lab]))
# per round, each side's pair against A's pair
print("per round (B/A C/A D/A):")
for lab, v in d.items():
    rs = []
    for i in range(len(v['a']) // 2):
        A = sum(v['a'][2*i:2*i+2])
        rs.append("/".join("%.3f" % (sum(v[k][2*i:2*i+2]) / A) for k in "bcd"))
    print("  %-32s %s" % (lab, "  ".join(rs)))
PY
