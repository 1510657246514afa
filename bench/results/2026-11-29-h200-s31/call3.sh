#!/usr/bin/env bash
# Device call 3: counters kept per stream (sm80::LaunchCounters; each kernel leaves them zeroed),
# so causal / masked prefill and split decode calls outside graph capture need no memset node.
# Old side = HEAD (.snap, git archive). Builds both; the counter-using GPU suites (the new graph /
# stream tests among AttentionCudaTest.*), the engine's CUDA suite, racecheck and memcheck on a
# few; then A/B: gpuattn bench on the causal S512 / S1024 sweep points and the default shapes,
# and decode_ab.py (ours on 9 decode shapes), old and new in turn.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
R=bench/results/2026-11-29-h200-s31
W=$OUT/work; mkdir -p $W
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
CM="-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON"
(cmake -S . -B build-gpu $CM > /dev/null && cmake --build build-gpu -j10 > $W/build.log 2>&1; echo "new build rc $?") &
(cmake -S .snap -B build-old $CM -DGPUATTN_BUILD_TESTS=OFF > /dev/null && cmake --build build-old -j6 > $W/build-old.log 2>&1; echo "old build rc $?") &
wait; ts builds
T=build-gpu/tests/gpuattn_cuda_tests
F='AttentionCudaTest.*:ManyRowBlocks/*:ShortItems/*:LongMasked/*:Decode/*:PagedKvCuda.*:QuantizedKvCuda.*:SeqUsedKCuda.*:Gpt2EngineCuda.*:BlockSparseCudaTest.*'
timeout 200 $T --gtest_filter="$F" --gtest_brief=1 > $W/cuda_tests.log 2>&1; ts "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED) |tests ran|FAILED  " $W/cuda_tests.log | tail -8
(timeout 120 compute-sanitizer --tool racecheck $T --gtest_filter='Decode/*B1*:AttentionCudaTest.Concurrent*' --gtest_brief=1 > $W/racecheck.log 2>&1; echo "racecheck rc $?" > $W/racecheck.rc) &
(timeout 120 compute-sanitizer --tool memcheck $T --gtest_filter='AttentionCudaTest.GraphReplays*:AttentionCudaTest.NewStreams*:AttentionCudaTest.Captured*' --gtest_brief=1 > $W/memcheck.log 2>&1; echo "memcheck rc $?" > $W/memcheck.rc) &
wait; ts sanitizers
cat $W/racecheck.rc; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $W/racecheck.log | tail -3
cat $W/memcheck.rc; grep -E "ERROR SUMMARY|PASSED|FAILED" $W/memcheck.log | tail -3
for r in 1 2 3; do
  for side in old new; do
    B=build-$side; [ $side = new ] && B=build-gpu
    $B/tools/gpuattn bench --device cuda --shapes sweep --only "causal S512" --json $W/bench-$side-s512-$r.json > /dev/null 2>&1
    $B/tools/gpuattn bench --device cuda --shapes sweep --only "causal S1024" --json $W/bench-$side-s1024-$r.json > /dev/null 2>&1
    $B/tools/gpuattn bench --device cuda --shapes default --only "causal" --json $W/bench-$side-def-$r.json > /dev/null 2>&1
  done
done
ts "bench A/B"
python3 - "$W" <<'PY'
import glob, json, statistics, sys, collections
w = sys.argv[1]
t = collections.defaultdict(lambda: collections.defaultdict(list))
for f in glob.glob(w + "/bench-*.json"):
    side = f.split("/")[-1].split("-")[1]
    for row in json.load(open(f)).get("results", []):
        if row.get("ours_ms"): t[row.get("label", str(row))][side].append(row["ours_ms"])
for k, v in sorted(t.items()):
    o, n = statistics.median(v["old"]), statistics.median(v["new"])
    print(f"{k:40s} old {o:.4f} new {n:.4f} new/old {n/o:.3f}  (rounds {len(v['old'])}/{len(v['new'])})")
PY
for i in 1 2; do
  for side in old new; do
    P=$PWD/build-$side/python; [ $side = new ] && P=$PWD/build-gpu/python
    PYTHONPATH=$P timeout 70 python3 $R/decode_ab.py $side --json $W/dab-$side-$i.json > $W/dab-$side-$i.log 2>&1
    echo "-- $side $i rc $?"; grep -v -i warn $W/dab-$side-$i.log | tail -9
  done
  [ $(( $(date +%s) - t0 )) -gt 500 ] && break
done
ts done
tar -C $OUT -czf $OUT/logs.tar.gz work && rm -rf $W
