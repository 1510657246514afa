#!/usr/bin/env bash
# Session 72, call 3: ALiBi with a sliding window alone at head dim 128 runs on sm90_ws_128x128's
# dense loop (Tr::kBanded and Tr::kAlibi together; the bias's key index from the window's first
# tile, t_first), not on the sm_80 kernel's masked instantiation. Expectation: the sm_90a dense
# kernel runs plain D128 calls at ~1.6-1.8x the sm_80 kernel's speed, and the bias costs ~1.1x,
# so ALiBi window calls ~0.6x their time under GPUATTN_KERNEL=sm80 (the former path), and ~1.1x
# the plain window call's. Tests: the ALiBi suite (new window cases) under the default dispatch,
# sm90_2stage., sm80.; the sliding-window suites; memcheck / racecheck of the window ALiBi cases.
# alibi_bench.py's window rows against compiled FlexAttention with the same block mask.
#   OUT=$OUT bash bench/results/2026-12-03-h200-s72/call3.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-s72-call3}
start=$(date +%s)
mkdir -p /tmp/logs
GPU_CHECK_TESTS=0 GPU_CHECK_BENCH=0 scripts/gpu-check.sh > /tmp/logs/build.log 2>&1
echo "build rc $? after $(( $(date +%s) - start )) s"
T=build-gpu/tests/gpuattn_cuda_tests
F='*Alibi*:*Window*:*window*:*Banded*:*Sliding*'
for i in 0 1 2; do
  GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=$i timeout 200 $T --gtest_filter="$F" > /tmp/logs/shard$i.log 2>&1 &
done
GPUATTN_KERNEL=sm90_ws_128x128 timeout 200 $T --gtest_filter='*Alibi*' > /tmp/logs/sm90_2stage.log 2>&1 &
GPUATTN_KERNEL=sm80 timeout 200 $T --gtest_filter='*Alibi*' > /tmp/logs/sm80.log 2>&1 &
wait
echo "tests done after $(( $(date +%s) - start )) s"
for f in shard0 shard1 shard2 sm90_2stage sm80; do
  echo "$f: $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' /tmp/logs/$f.log | tr '\n' ' ')"
done
grep -h '^\[  FAILED  \] [A-Z]' /tmp/logs/*.log | sort -u | head -20
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $tool $T --gtest_filter='Alibi/AttentionCuda.*D128*_w*' \
    > /tmp/logs/$tool.log 2>&1 &
done
wait
for tool in memcheck racecheck; do
  echo "$tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/logs/$tool.log) $(grep -E '^\[  (PASSED|FAILED)' /tmp/logs/$tool.log | head -2 | tr '\n' ' ')"
done
cat > /tmp/time_window.py <<'PY'
import json, os, sys, torch
import gpu_attention as ga
torch.manual_seed(0)
rows = []
for label, b, h, s, causal, ws, dt in [("B2 H16 S16384 causal W1024", 2, 16, 16384, True, (1023, 0), torch.float16),
                                      ("B4 H16 S8192 W512+512 bf16", 4, 16, 8192, False, (512, 512), torch.bfloat16),
                                      ("B1 H32 S32768 causal W4096", 1, 32, 32768, True, (4095, 0), torch.float16)]:
    q, k, v = (torch.randn(b, s, h, 128, device="cuda", dtype=dt) for _ in range(3))
    slopes = torch.tensor([2.0 ** (-8.0 * (i + 1) / h) for i in range(h)], device="cuda")
    row = {"case": label}
    for name, kw in (("alibi", dict(alibi_slopes=slopes)), ("plain", {})):
        fn = lambda: ga.flash_attn_func(q, k, v, causal=causal, window_size=ws, **kw)
        for _ in range(5): fn()
        torch.cuda.synchronize()
        ts = []
        for _ in range(30):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record(); fn(); e1.record(); torch.cuda.synchronize()
            ts.append(e0.elapsed_time(e1))
        row[name + "_ms"] = sorted(ts)[len(ts) // 2]
    rows.append(row)
json.dump(rows, open(sys.argv[1], "w"))
PY
n=0
for side in default sm80 sm80 default; do
  n=$((n + 1))
  if [ $side = sm80 ]; then export GPUATTN_KERNEL=sm80; else unset GPUATTN_KERNEL; fi
  PYTHONPATH=build-gpu/python timeout 100 python3 /tmp/time_window.py /tmp/logs/w-$n-$side.json > /tmp/logs/w-$n-$side.log 2>&1
  echo "window timing ($side) rc $? after $(( $(date +%s) - start )) s"
done
unset GPUATTN_KERNEL
python3 - <<'PY'
import json
r = {n: json.load(open(f"/tmp/logs/w-{n}.json")) for n in ("1-default", "2-sm80", "3-sm80", "4-default")}
for i, row in enumerate(r["1-default"]):
    m = lambda ns, k: sum(r[n][i][k] for n in ns) / 2
    a, a80 = m(("1-default", "4-default"), "alibi_ms"), m(("2-sm80", "3-sm80"), "alibi_ms")
    p, p80 = m(("1-default", "4-default"), "plain_ms"), m(("2-sm80", "3-sm80"), "plain_ms")
    print(f"{row['case']:30s} ALiBi default {a*1e3:8.1f} us  sm80 {a80*1e3:8.1f} us  ratio {a/a80:.3f} | "
          f"plain default {p*1e3:8.1f} sm80 {p80*1e3:8.1f} | ALiBi/plain default {a/p:.3f}")
PY
PYTHONPATH=build-gpu/python:bench timeout 200 python3 bench/alibi_bench.py --only W1024 --json $OUT/alibi_bench_w1.json > /tmp/logs/ab1.log 2>&1
echo "alibi_bench W1024 rc $? after $(( $(date +%s) - start )) s"
PYTHONPATH=build-gpu/python:bench timeout 200 python3 bench/alibi_bench.py --only W512+512 --json $OUT/alibi_bench_w2.json > /tmp/logs/ab2.log 2>&1
echo "alibi_bench W512+512 rc $? after $(( $(date +%s) - start )) s"
grep -E "^\| " /tmp/logs/ab1.log /tmp/logs/ab2.log | grep -v -- "---" | head -8
tar czf $OUT/logs.tar.gz -C /tmp logs
echo "done after $(( $(date +%s) - start )) s"
