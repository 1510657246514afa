#!/usr/bin/env bash
# Session 57, call 6 (branch wip/s4-turns; experiment macros, default off = main's code): the
# 4-stage causal D64 kernel (sm90_ws_128x128_s4) since s56's half last tiles and one tile loop,
# without its exponential turns (B), and without them with the late P V wait (C). Both were
# measured on the 2-consumer kernel before s56 (exp turns 0.98-0.99x at causal S512-S1024, the late
# wait 1.01-1.035x); the step's code changed since. A B C C B A, 2 rounds, gpuattn bench.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s57/call6.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
build() {  # build NAME FLAGS
  cmake -S . -B build-$1 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DGPUATTN_CUDA=ON -DGPUATTN_BUILD_TESTS=OFF "-DCMAKE_CUDA_FLAGS=$2" > $OUT/build-$1.log 2>&1 &&
    cmake --build build-$1 -j5 --target gpuattn_cli >> $OUT/build-$1.log 2>&1
  echo "$1 rc $?"
}
build a "" & build b "-DGPUATTN_X_S4_NO_EXP_TURNS=1" &
build c "-DGPUATTN_X_S4_NO_EXP_TURNS=1 -DGPUATTN_X_S4_LATE=1" &
wait
ts "builds"; grep -h -E "error|serialized|spill" $OUT/build-*.log | sort | uniq -c | head
one() {
  timeout 30 build-$1/tools/gpuattn bench --shape "$2" --json /tmp/one.json > /dev/null 2>&1 &&
    python3 -c "import json;r=json.load(open('/tmp/one.json'))['results'];print(' '.join('%s:%.5f:%s'%(x['label'].replace(' ','_'),x['ours_ms'],x['config'].replace(' ','_')) for x in r))"
}
cases=("B32 H32 S512 D64 causal" "B16 H32 S1024 D64 causal" "B8 H32 S512 D64 causal bf16")
for round in 1 2; do
  for c in "${cases[@]}"; do
    for v in a b c c b a; do echo "$round $v $(one $v "$c")"; done
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
    a = st.median(v['a'])
    print("%-34s A %.5f ms  B/A %.3f  C/A %.3f  %s" % (lab, a, st.median(v['b']) / a,
                                                      st.median(v['c']) / a, cfg[lab]))
PY
