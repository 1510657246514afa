#!/usr/bin/env bash
# Session 45, call 2: the varlen V tail map (a sequence's last key tile reads zeros, not the next
# sequence's V). VarlenNeighbours under every GPUATTN_KERNEL, the whole GPU suite, memcheck and
# racecheck of the varlen suites, then gpuattn bench --shapes default in A B B A order (A: main
# 86f8544's CLI, B: this tree's; dense calls never take the tail map, so B/A should be 1 within
# noise). Carry s45b (gpuattn, gpuattn-old, gpuattn_cuda_tests built from build-s38).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s45/call2.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/s45b && tar xJf carry/s45b.tar.xz -C /tmp/s45b --strip-components 1
T=/tmp/s45b/gpuattn_cuda_tests
for k in auto sm80 sm90_ws_192x128 sm90_ws_128x128; do
  GPUATTN_KERNEL=$k timeout 120 $T --gtest_filter='*VarlenNeighbours*:Varlen/*' > $OUT/neigh-$k.txt 2>&1
  echo "varlen $k rc $? $(grep -E '^\[  (PASSED|FAILED)' $OUT/neigh-$k.txt | tr '\n' ' ')"
  grep -E "^\[  FAILED  \]" $OUT/neigh-$k.txt | head -5
done
timeout 330 $T --gtest_brief=1 > $OUT/suite.txt 2>&1
echo "suite rc $? $(grep -E '^\[  (PASSED|FAILED)' $OUT/suite.txt | tr '\n' ' ')"
grep -E "^\[  FAILED  \]" $OUT/suite.txt | head -10
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for tool in memcheck racecheck; do
  timeout 150 $SAN --tool $tool --error-exitcode 9 $T \
    --gtest_filter='VarlenNeighbours/*:ManyRowBlocks/*varlen*' > $OUT/$tool.txt 2>&1
  echo "$tool rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/$tool.txt | tail -1)"
done
for r in 1; do
  for side in A B B A; do
    bin=/tmp/s45b/gpuattn; [ $side = A ] && bin=/tmp/s45b/gpuattn-old
    timeout 90 $bin bench --shapes default --json $OUT/bench-r$r-$side-$RANDOM.json > /dev/null 2>&1 \
      || echo "bench $side failed"
  done
done
python3 - "$OUT" <<'PY'
import glob, json, sys, statistics as st
t = {}
for f in glob.glob(sys.argv[1] + "/bench-*.json"):
    side = f.split("-")[-2]
    for r in json.load(open(f))["results"]:
        t.setdefault(r["label"], {}).setdefault(side, []).append(r["ours_ms"] * 1000)
for k, v in t.items():
    a, b = st.median(v.get("A", [0])), st.median(v.get("B", [0]))
    print(f"{k:55s} A {a:9.1f} B {b:9.1f} B/A {b / a if a else 0:.3f}")
PY
