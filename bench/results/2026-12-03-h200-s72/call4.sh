#!/usr/bin/env bash
# Session 72, call 4: ALiBi calls at head dim 128 of up to kD128ThreeStageMaxKeys keys take the
# 3-stage kernel (sm90_ws_128x128_s3) as plain calls do, in instantiations with the bias
# (FwdD128ShortAlibiTraits and its causal twin), not the 2-stage one. s70: B16 H16 S1024 D128
# causal ALiBi cost 1.255x the plain call on the 2-stage kernel. Expectation: ALiBi / plain ~1.10
# at S512-S2048, i.e. ~0.88-0.92x the 2-stage ALiBi time (GPUATTN_KERNEL=sm90_ws_128x128 in the
# same binary), order A B B A; no spill in the new kernels (ptxas on the CPU machine: none).
# Tests: the ALiBi suite under the default dispatch, sm90_ws_128x128_s3 (every length) and
# sm90_ws_128x128; TileConfig; memcheck / racecheck of the D128 ALiBi cases on the 3-stage kernel.
#   OUT=$OUT bash bench/results/2026-12-03-h200-s72/call4.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-s72-call4}
start=$(date +%s)
mkdir -p /tmp/logs
GPU_CHECK_TESTS=0 GPU_CHECK_BENCH=0 scripts/gpu-check.sh > /tmp/logs/build.log 2>&1
echo "build rc $? after $(( $(date +%s) - start )) s"
T=build-gpu/tests/gpuattn_cuda_tests
for i in 0 1; do
  GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=$i timeout 200 $T --gtest_filter='*Alibi*' > /tmp/logs/shard$i.log 2>&1 &
done
GPUATTN_KERNEL=sm90_ws_128x128_s3 timeout 200 $T --gtest_filter='*Alibi*D128*' > /tmp/logs/sm90_s3.log 2>&1 &
GPUATTN_KERNEL=sm90_ws_128x128 timeout 200 $T --gtest_filter='*Alibi*D128*' > /tmp/logs/sm90_2stage.log 2>&1 &
wait
echo "tests done after $(( $(date +%s) - start )) s"
for f in shard0 shard1 sm90_s3 sm90_2stage; do
  echo "$f: $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' /tmp/logs/$f.log | tr '\n' ' ')"
done
grep -h '^\[  FAILED  \] [A-Z]' /tmp/logs/*.log | sort -u | head -20
build-gpu/tests/gpuattn_tests --gtest_filter='TileConfig.*' 2>&1 | tail -1
for tool in memcheck racecheck; do
  GPUATTN_KERNEL=sm90_ws_128x128_s3 timeout 150 compute-sanitizer --tool $tool $T \
    --gtest_filter='Alibi/AttentionCuda.*D128*' > /tmp/logs/$tool.log 2>&1 &
done
wait
for tool in memcheck racecheck; do
  echo "$tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/logs/$tool.log) $(grep -E '^\[  (PASSED|FAILED)' /tmp/logs/$tool.log | head -2 | tr '\n' ' ')"
done
cuobjdump -res-usage build-gpu/libgpuattn.a 2>/dev/null | grep -A1 'FwdTraitsI.*Li128ELb0ELi2ELi0ELb0ELi3' > /tmp/logs/res-d128-s3.txt
echo "3-stage D128 kernels: $(grep -c Function /tmp/logs/res-d128-s3.txt), with stack or local: $(grep -cE 'STACK:[1-9]|LOCAL:[1-9]' /tmp/logs/res-d128-s3.txt)"
G=build-gpu/tools/gpuattn
S="B16 H16 S1024 D128 causal alibi; B16 H16 S1024 D128 causal; B16 H16 S1024 D128 alibi; B16 H16 S1024 D128; B8 H16 S2048 D128 causal bf16 alibi; B8 H16 S2048 D128 causal bf16; B32 H16 S512 D128 causal alibi; B32 H16 S512 D128 causal"
n=0
for side in three two two three; do
  n=$((n + 1))
  if [ $side = two ]; then export GPUATTN_KERNEL=sm90_ws_128x128; else unset GPUATTN_KERNEL; fi
  timeout 100 $G bench --shape "$S" --rep 300 --json /tmp/logs/b-$n-$side.json > /tmp/logs/b-$n-$side.log 2>&1
  echo "bench ($side) rc $? after $(( $(date +%s) - start )) s"
done
unset GPUATTN_KERNEL
python3 - <<'PY'
import json
runs = {n: json.load(open(f"/tmp/logs/b-{n}.json"))["results"]
        for n in ("1-three", "2-two", "3-two", "4-three")}
ms = lambda ns, i: sum(runs[n][i]["ours_ms"] for n in ns) / len(ns)
for i, row in enumerate(runs["1-three"]):
    a, b = ms(("1-three", "4-three"), i), ms(("2-two", "3-two"), i)
    cfg = runs["1-three"][i]["config"] + " / " + runs["2-two"][i]["config"]
    line = f"{row['label']:42s} default {a * 1e3:8.1f} us  2-stage force {b * 1e3:8.1f} us  ratio {a / b:.3f}  ({cfg})"
    if row["alibi"]:
        line += f"  alibi/plain default {a / ms(('1-three', '4-three'), i + 1):.3f}"
    print(line)
PY
PYTHONPATH=build-gpu/python:bench timeout 150 python3 bench/alibi_bench.py --only S1024 --json $OUT/alibi_bench_s1024.json > /tmp/logs/ab.log 2>&1
echo "alibi_bench S1024 rc $? after $(( $(date +%s) - start )) s"
grep -E "^\| " /tmp/logs/ab.log | grep -v -- "---" | head -4
tar czf $OUT/logs.tar.gz -C /tmp logs
echo "done after $(( $(date +%s) - start )) s"
