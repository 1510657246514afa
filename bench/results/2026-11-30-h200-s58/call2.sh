#!/usr/bin/env bash
# Session 58 call 2: the 4-stage causal D64 kernel with and without its block-layout code.
# Call 1 (wip/2cta-lean vs main) measured the lean s4 kernel 0.979x at causal B32 H32 S512 D64
# but 1.024x at B16 H32 S1024. A = main (carry/base), B = this tree (lean s4: 4984 instructions),
# C = this tree with the s4 kernel's kListed code back (carry/c: s4 byte-identical to main's,
# everything else as B). Causal D64 shapes that take s4 (under 2048 rows), a b c c b a, 3 rounds.
# Expected: C = A on every shape (same s4 code); B/A decides whether s4 stays lean.
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cfg() { cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON > $OUT/build-$3.log 2>&1; }
for v in a b c; do
  src=.; [ $v = a ] && src=carry/base; [ $v = c ] && src=carry/c
  (cfg $src build-$v $v && cmake --build build-$v -j5 --target gpuattn_cli >> $OUT/build-$v.log 2>&1; echo "$v rc $?") &
done
wait
ts "builds"
one() {  # one SIDE SHAPE -> label:ms:config
  timeout 30 build-$1/tools/gpuattn bench --shape "$2" --json /tmp/one.json > /dev/null 2>&1 &&
    python3 -c "import json;r=json.load(open('/tmp/one.json'))['results'];print(' '.join('%s:%.5f:%s'%(x['label'].replace(' ','_'),x['ours_ms'],x['config'].replace(' ','_')) for x in r))"
}
cases=("B32 H32 S512 D64 causal" "B16 H32 S1024 D64 causal" "B16 H32 S768 D64 causal"
       "B8 H32 S1536 D64 causal" "B64 H32 S256 D64 causal" "B32 H16 S1024 D64 causal bf16")
for round in 1 2 3; do
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
    a, b, c = st.median(v['a']), st.median(v['b']), st.median(v['c'])
    print("%-34s A %.5f  B %.5f  C %.5f  B/A %.3f  C/A %.3f  %s" % (lab, a, b, c, b / a, c / a, cfg[lab]))
PY
