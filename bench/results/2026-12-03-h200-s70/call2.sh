#!/usr/bin/env bash
# Session 70, call 2: ALiBi (AttentionArgs::alibi_slopes) on the GPU. Built here on the device
# (the Python module is needed); then
#  1. the whole CUDA test binary in 8 shards (the new AttentionCuda Alibi cases,
#     AlibiCallsTakeTheSm80Kernel, BadAlibiSlopesAreNamed, PagedKvCuda.AlibiCallsMatchTheReference,
#     and every other test: the sm_80 kernel's masked instantiations changed), memcheck of the
#     ALiBi tests;
#  2. pytest tests/python/test_alibi.py on CUDA;
#  3. bench/alibi_bench.py: ours (sm_80) against compiled FlexAttention with the same score_mod,
#     each against its call without the bias, cuDNN's plain time beside. Expectation: ours with
#     ALiBi ~1.6-1.9x our plain (sm_90a) time at the prefill shapes (the sm_80 kernel runs at
#     FA2's level, ~0.55x the sm_90a kernel), and faster than Flex's ALiBi by 1.0-1.5x; decode
#     rows much slower than our plain decode (no split-KV on sm_80);
#  4. gpuattn bench under GPUATTN_KERNEL=sm80: the same shapes plain and with alibi (the bias's
#     cost on one kernel family: the masked instantiation and a multiply-add an element),
#     expected 1.03-1.10x.
#   OUT=$OUT bash bench/results/2026-12-03-h200-s70/call2.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-s70-call2}
start=$(date +%s)
mkdir -p /tmp/logs
GPU_CHECK_TESTS=0 GPU_CHECK_BENCH=0 scripts/gpu-check.sh > /tmp/logs/build.log 2>&1
echo "build rc $? after $(( $(date +%s) - start )) s"
T=build-gpu/tests/gpuattn_cuda_tests
for i in 0 1 2 3 4 5 6 7; do
  GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i timeout 300 $T > /tmp/logs/shard$i.log 2>&1 &
done
wait
echo "shards done after $(( $(date +%s) - start )) s"
for i in 0 1 2 3 4 5 6 7; do
  echo "shard $i: $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' /tmp/logs/shard$i.log | tr '\n' ' ')"
done
grep -h '^\[  FAILED  \] [A-Z]' /tmp/logs/shard*.log | sort -u | head -20
PYTHONPATH=build-gpu/python timeout 200 python3 -m pytest -q -x tests/python/test_alibi.py > /tmp/logs/pytest.log 2>&1
echo "pytest: $(tail -1 /tmp/logs/pytest.log)"
PYTHONPATH=build-gpu/python timeout 200 python3 bench/alibi_bench.py --json $OUT/alibi_bench.json --md /tmp/logs/alibi_bench.md > /tmp/logs/alibi_bench.log 2>&1
echo "alibi_bench rc $? after $(( $(date +%s) - start )) s"
cat /tmp/logs/alibi_bench.md
SH="B4 H16 S4096 D128; B4 H16 S4096 D128 causal; B4 H16 S4096 D64 causal; B2 H8 S4096 D256 causal bf16; B16 H16 S1024 D128 causal; B32 H32 Sq1 Sk4096 D128"
AL=$(echo "$SH" | sed 's/;/ alibi;/g; s/$/ alibi/')
for r in 1 2; do
  GPUATTN_KERNEL=sm80 timeout 100 build-gpu/tools/gpuattn bench --device cuda --shape "$SH" --json /tmp/logs/sm80-plain-$r.json > /tmp/logs/sm80-plain-$r.log 2>&1 || echo "plain rc $?"
  GPUATTN_KERNEL=sm80 timeout 100 build-gpu/tools/gpuattn bench --device cuda --shape "$AL" --json /tmp/logs/sm80-alibi-$r.json > /tmp/logs/sm80-alibi-$r.log 2>&1 || echo "alibi rc $?"
done
python3 - <<'PY'
import json
for r in (1, 2):
    try:
        p = json.load(open(f"/tmp/logs/sm80-plain-{r}.json"))["results"]
        a = json.load(open(f"/tmp/logs/sm80-alibi-{r}.json"))["results"]
    except Exception as e:
        print("sm80 A/B round", r, "unreadable:", e); continue
    for x, y in zip(p, a):
        print(f"round {r}: {x['label']:40s} plain {x['ours_ms']*1e3:9.1f} us ({x.get('config')})  alibi {y['ours_ms']*1e3:9.1f} us ({y.get('config')})  {y['ours_ms']/x['ours_ms']:.3f}x")
PY
timeout 100 compute-sanitizer --tool memcheck $T --gtest_filter='*Alibi*' > /tmp/logs/memcheck.log 2>&1
echo "memcheck: $(grep -E 'ERROR SUMMARY' /tmp/logs/memcheck.log)"
grep -E '^\[  (PASSED|FAILED)' /tmp/logs/memcheck.log | head -5
tar czf $OUT/logs.tar.gz -C /tmp logs
echo "done after $(( $(date +%s) - start )) s"
