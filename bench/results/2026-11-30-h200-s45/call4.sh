#!/usr/bin/env bash
# Session 45, call 4: the varlen V tail map as committed: the sequence end in shared memory
# (Barriers::seq_end) and, in the dense kernel, two copies of the producer loop (varlen and not),
# so that the dense calls' producer is as before (call 3's version spilled a prologue value: B1
# H16 S1024 D64 4% slower in 16 of 16 runs). VarlenNeighbours + Varlen under every
# GPUATTN_KERNEL, the whole GPU suite, memcheck and racecheck of the varlen suites, then A B B A
# rounds of gpuattn bench (A: main 86f8544's CLI): 3 of D64 S1024, 1 of the default shapes.
# Carry s45d (gpuattn, gpuattn-old, gpuattn_cuda_tests from build-s38).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s45/call4.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/s45d && tar xJf carry/s45d.tar.xz -C /tmp/s45d --strip-components 1
T=/tmp/s45d/gpuattn_cuda_tests
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
  only='S1024 D64'; [ $r = 4 ] && only=''
  for side in A B B A; do
    bin=/tmp/s45d/gpuattn; [ $side = A ] && bin=/tmp/s45d/gpuattn-old
    timeout 90 $bin bench --shapes default --only "$only" --json /tmp/ab/bench-r$r-$side-$RANDOM.json > /dev/null 2>&1 \
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
