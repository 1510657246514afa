#!/usr/bin/env bash
# Prepared in session 57 on branch wip/2cta-lean (not run: no device time left), which holds
# wip/own-lean too:
# (1) the own dense / causal instantiations without the window and block-layout code they never
#     run (FwdTraits::kOwnDenseCausal): fp16 3-stage D128 7640 -> 5048 instructions, its causal
#     twin 7880 -> 5048, the 4-stage causal D64 one 6264 -> 4984, the late-wait D64 one 6224 ->
#     4952;
# (2) the one-consumer two-CTA kernel (sm90_ws_64x128_2cta, the one-wave pick) without its varlen
#     code (FwdTraits::kTakesVarlen; the dispatch never gives it varlen calls, and the force now
#     leaves them to the rule): 4912 -> 3976.
# Every other sm_90a kernel is byte-identical to main's; the two touch disjoint kernels, so one
# A/B measures both. A = main (carry/base: git archive of main without bench/results), B = this
# tree; gpuattn bench a shape a process, A B B A, 3 rounds; then B's D64 / D128 GPU cases on the
# dispatch's picks, forced onto s4 and forced onto 2cta.
# Expected (s22: 287 dead instructions in the D64 tile loop cost 4-10%; 8cdd8ae: window code cost
# causal D64 S512 3.4%): 0.97-0.99x on the changed kernels' shapes if instruction fetch is part
# of their short items' fixed cost, 1.00x if the dead code never reached the instruction cache.
# If it wins: merge, then the full check (s57's call4.sh and call5.sh, back to back).
#   rm -rf carry/base && mkdir -p carry/base && git archive main -- . ':!bench/results' | tar x -C carry/base
#   run with carry ["carry/base"]: OUT=$OUT bash bench/results/2026-11-30-h200-s57/next-call-lean.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cfg() { cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON > $OUT/build-$3.log 2>&1; }
(cfg carry/base build-a a && cmake --build build-a -j8 --target gpuattn_cli >> $OUT/build-a.log 2>&1; echo "a rc $?") &
(cfg . build-gpu b && cmake --build build-gpu -j8 --target gpuattn_cli gpuattn_cuda_tests >> $OUT/build-b.log 2>&1; echo "b rc $?") &
wait
ts "builds"
one() {  # one SIDE SHAPE -> label:ms:config
  local G=build-gpu/tools/gpuattn; [ $1 = a ] && G=build-a/tools/gpuattn
  timeout 30 $G bench --shape "$2" --json /tmp/one.json > /dev/null 2>&1 &&
    python3 -c "import json;r=json.load(open('/tmp/one.json'))['results'];print(' '.join('%s:%.5f:%s'%(x['label'].replace(' ','_'),x['ours_ms'],x['config'].replace(' ','_')) for x in r))"
}
cases=("B32 H16 S512 D128" "B16 H16 S1024 D128" "B8 H16 S2048 D128" "B32 H16 S512 D128 causal"
       "B16 H16 S1024 D128 causal" "B32 H32 S512 D64 causal" "B16 H32 S1024 D64 causal"
       "B1 H8 S4096 D64" "B1 H16 S1024 D64" "B1 H16 S1024 D64 causal" "B1 H8 S1024 D64"
       "B2 H16 S1024 D64")
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
  echo "== $1: $(grep -h -E 'PASSED|FAILED  \] [0-9]' /tmp/t-$1-*.log | tr '\n' ' ')"
  grep -h -E '^\[  FAILED' /tmp/t-$1-*.log | sort -u | head -8
}
{ tests auto '*D64*:*D128*:-*compensated*'; tests s4 '*D64*causal*' GPUATTN_KERNEL=sm90_ws_128x128_s4
  tests 2cta '*D64*' GPUATTN_KERNEL=sm90_ws_64x128_2cta; } | tee $OUT/tests.txt
ts "tests"
