#!/usr/bin/env bash
# Session 45, call 3: as call 2, with the tail map in out's place of QkvTensorMaps (a union: varlen
# stores out from the threads), so that the kernel's parameters are as large as before, and two
# VarlenNeighbours cases of the decode kernel. The A/B: D64 S1024 (call 2: B/A 1.04 in one round,
# the other shapes +-4%), 4 rounds. The varlen V tail map (a sequence's last key tile reads zeros, not the next
# sequence's V). VarlenNeighbours under every GPUATTN_KERNEL, the whole GPU suite, memcheck and
# racecheck of the varlen suites, then gpuattn bench --shapes default in A B B A order (A: main
# 86f8544's CLI, B: this tree's; dense calls never take the tail map, so B/A should be 1 within
# noise). Carry s45c (gpuattn, gpuattn-old, gpuattn_cuda_tests built from build-s38).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s45/call3.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/s45c && tar xJf carry/s45c.tar.xz -C /tmp/s45c --strip-components 1
T=/tmp/s45c/gpuattn_cuda_tests
for k in auto sm80 sm90_ws_192x128 sm90_ws_128x128; do
  GPUATTN_KERNEL=$k timeout 120 $T --gtest_filter='*VarlenNeighbours*:Varlen/*' > /tmp/neigh-$k.txt 2>&1
  rc=$?; cat /tmp/neigh-$k.txt >> $OUT/neigh.txt
  echo "varlen $k rc $rc $(grep -E '^\[  (PASSED|FAILED)' /tmp/neigh-$k.txt | tr '\n' ' ')"
  grep -E "^\[  FAILED  \]" /tmp/neigh-$k.txt | head -5
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
mkdir -p /tmp/ab
for r in 1 2 3 4; do
  for side in A B B A; do
    bin=/tmp/s45c/gpuattn; [ $side = A ] && bin=/tmp/s45c/gpuattn-old
    timeout 90 $bin bench --shapes default --only 'S1024 D64' --json /tmp/ab/bench-r$r-$side-$RANDOM.json > /dev/null 2>&1 \
      || echo "bench $side failed"
  done
done
tar czf $OUT/bench-json.tgz -C /tmp ab
python3 - /tmp/ab <<'PY'
import glob, json, sys, statistics as st
t = {}
for f in glob.glob(sys.argv[1] + "/bench-*.json"):
    side = f.split("-")[-2]
    for r in json.load(open(f))["results"]:
        t.setdefault(r["label"], {}).setdefault(side, []).append(r["ours_ms"] * 1000)
for k, v in t.items():
    a, b = st.median(v.get("A", [0])), st.median(v.get("B", [0]))
    print(f"{k:55s} A {a:9.1f} B {b:9.1f} B/A {b / a if a else 0:.3f}")
for f in sorted(glob.glob(sys.argv[1] + "/bench-*.json"), key=lambda f: json.load(open(f))["date"]):
    print(f.split("/")[-1], " ".join(f'{r["ours_ms"] * 1000:.2f}' for r in json.load(open(f))["results"]))
PY
