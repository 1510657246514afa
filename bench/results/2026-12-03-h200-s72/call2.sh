#!/usr/bin/env bash
# Session 72, call 2. Two changes:
# (a) The plain 8-bit decode kernel's log2-domain factor of a row (scale x log2(e) x k_scale x
#     2^shift) is kept at FLT_MIN or more: with a tiny k_scale and a tiny bf16 q row it underflowed
#     to 0, and a masked key's -inf score times 0 was NaN (s71 review, not reproduced then).
#     QuantizedKvCuda.ScoresThatVanishGiveUniformWeights, built also on the tree without the fix
#     (old-src: git archive HEAD plus the new test file): expected to FAIL there (NaN rows), pass
#     here.
# (b) ALiBi calls at head dim 64 take the 3-consumer kernel where three_consumers_pay
#     (FwdD64ThreeAlibiTraits), not the 2-consumer one. Expectation (s70 call 3 measured the
#     3-consumer kernel with the bias as a branch at 1.17x its plain time; the 2-consumer ALiBi
#     kernel is 1.30x): B4 H16 S4096 D64 causal ALiBi ~0.90x the 2-consumer ALiBi time
#     (GPUATTN_KERNEL=sm90_ws_128x128 in the same binary), order A B B A; no spill in the new kernel.
# Tests: 8-bit, ALiBi (default, sm90_192., sm90_2stage. env), tile config; memcheck and racecheck
# of the D64 ALiBi cases on the 3-consumer kernel.
#   OUT=$OUT bash bench/results/2026-12-03-h200-s72/call2.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-s72-call2}
start=$(date +%s)
mkdir -p /tmp/logs
( cmake -S old-src -B build-old -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DGPUATTN_CUDA=ON -DGPUATTN_BUILD_TESTS=ON -DGPUATTN_BUILD_TOOLS=OFF -DGPUATTN_PYTHON=OFF \
    > /tmp/logs/build-old.log 2>&1 &&
  cmake --build build-old -j6 --target gpuattn_cuda_tests >> /tmp/logs/build-old.log 2>&1
  echo "old build rc $?" >> /tmp/logs/build-old.log ) &
GPU_CHECK_TESTS=0 GPU_CHECK_BENCH=0 scripts/gpu-check.sh > /tmp/logs/build.log 2>&1
echo "build rc $? after $(( $(date +%s) - start )) s"
T=build-gpu/tests/gpuattn_cuda_tests
F='QuantizedKvCuda.*:*Alibi*'
for i in 0 1 2; do
  GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=$i timeout 200 $T --gtest_filter="$F" > /tmp/logs/shard$i.log 2>&1 &
done
GPUATTN_KERNEL=sm90_ws_192x128 timeout 200 $T --gtest_filter='*Alibi*D64*' > /tmp/logs/sm90_192.log 2>&1 &
GPUATTN_KERNEL=sm90_ws_128x128 timeout 200 $T --gtest_filter='*Alibi*D64*:*Alibi*D128*' > /tmp/logs/sm90_2stage.log 2>&1 &
wait
echo "tests done after $(( $(date +%s) - start )) s"
for f in shard0 shard1 shard2 sm90_192 sm90_2stage; do
  echo "$f: $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' /tmp/logs/$f.log | tr '\n' ' ')"
done
grep -h '^\[  FAILED  \] [A-Z]' /tmp/logs/*.log | sort -u | head -20
build-gpu/tests/gpuattn_tests --gtest_filter='TileConfig.*' 2>&1 | tail -1
for tool in memcheck racecheck; do
  GPUATTN_KERNEL=sm90_ws_192x128 timeout 150 compute-sanitizer --tool $tool $T \
    --gtest_filter='Alibi/AttentionCuda.*D64*' > /tmp/logs/$tool.log 2>&1 &
done
wait
for tool in memcheck racecheck; do
  echo "$tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/logs/$tool.log) $(grep -E '^\[  (PASSED|FAILED)' /tmp/logs/$tool.log | head -2 | tr '\n' ' ')"
done
cuobjdump -res-usage build-gpu/libgpuattn.a 2>/dev/null | grep -A1 'FwdTraitsI.*Li64ELb0ELi3' > /tmp/logs/res-d64-3.txt
echo "3-consumer D64 kernels: $(grep -c Function /tmp/logs/res-d64-3.txt), with stack or local: $(grep -cE 'STACK:[1-9]|LOCAL:[1-9]' /tmp/logs/res-d64-3.txt)"
tail -1 /tmp/logs/build-old.log
timeout 100 build-old/tests/gpuattn_cuda_tests --gtest_filter='QuantizedKvCuda.ScoresThatVanish*' > /tmp/logs/old-vanish.log 2>&1
echo "without the fix: $(grep -E '^\[  (PASSED|FAILED)  \] [0-9]' /tmp/logs/old-vanish.log | tr '\n' ' ')"
grep -E "nonfinite|Which is|not finite" /tmp/logs/old-vanish.log | head -6
G=build-gpu/tools/gpuattn
S="B4 H16 S4096 D64 causal alibi; B4 H16 S4096 D64 causal; B4 H16 S4096 D64 alibi; B4 H16 S4096 D64; B2 H32 S8192 D64 causal bf16 alibi; B2 H32 S8192 D64 causal bf16; B8 H16 S2048 D64 alibi; B8 H16 S2048 D64"
n=0
for side in three two two three; do
  n=$((n + 1))
  if [ $side = two ]; then export GPUATTN_KERNEL=sm90_ws_128x128; else unset GPUATTN_KERNEL; fi
  timeout 100 $G bench --shape "$S" --rep 300 --json /tmp/logs/b-$n-$side.json > /tmp/logs/b-$n-$side.log 2>&1
  echo "bench ($side) rc $? after $(( $(date +%s) - start )) s"
done
unset GPUATTN_KERNEL
$G bench --shape "$S" --show-config 2>&1 | grep -iE "alibi|kernel" | head -12
cat /tmp/logs/b-1-three.log | head -30
python3 - <<'PY'
import json
runs = {n: json.load(open(f"/tmp/logs/b-{n}.json"))["results"]
        for n in ("1-three", "2-two", "3-two", "4-three")}
ms = lambda ns, i: sum(runs[n][i]["ours_ms"] for n in ns) / len(ns)
for i, row in enumerate(runs["1-three"]):
    three, two = ms(("1-three", "4-three"), i), ms(("2-two", "3-two"), i)
    cfg = runs["1-three"][i]["config"] + " / " + runs["2-two"][i]["config"]
    line = f"{row['label']:40s} default {three * 1e3:8.1f} us  2-consumer force {two * 1e3:8.1f} us  ratio {three / two:.3f}  ({cfg})"
    if row["alibi"]:
        plain = ms(("1-three", "4-three"), i + 1)
        line += f"  alibi/plain default {three / plain:.3f}"
    print(line)
PY
PYTHONPATH=build-gpu/python:bench timeout 60 python3 bench/quantized_decode.py --quick --repeats 2 > /tmp/logs/qd.log 2>&1
echo "quantized_decode --quick rc $?"; grep -E "ours (e4m3|int8) " /tmp/logs/qd.log | head -8
tar czf $OUT/logs.tar.gz -C /tmp logs
echo "done after $(( $(date +%s) - start )) s"
