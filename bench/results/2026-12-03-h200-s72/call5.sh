#!/usr/bin/env bash
# Session 72, call 5: the sm_90a dense loop's ALiBi bias one-sided where a thread's keys of the
# tile all lie on one side of its row's position (always in causal calls, whose later keys are
# masked): fmaf(k, d0 - c, x) instead of fmaf(-slope, |d0 - c|, x), one instruction less a
# score, the same results bit for bit. Call 4 found the bias's per-score work to be what short
# ALiBi calls pay (1.18-1.33x the plain time at D128 S512-S2048). Expectation: ALiBi calls
# 0.95-0.97x the time of the tree before (HEAD, built from git archive in old-src/ in the same
# call), plain calls 1.00 (unchanged code behind the branch); order old new new old.
#   OUT=$OUT bash bench/results/2026-12-03-h200-s72/call5.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-s72-call5}
start=$(date +%s)
mkdir -p /tmp/logs
( cmake -S old-src -B build-old -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
    -DGPUATTN_CUDA=ON -DGPUATTN_BUILD_TESTS=OFF -DGPUATTN_BUILD_TOOLS=ON -DGPUATTN_PYTHON=OFF \
    > /tmp/logs/build-old.log 2>&1 &&
  cmake --build build-old -j6 --target gpuattn_cli >> /tmp/logs/build-old.log 2>&1
  echo "old build rc $?" >> /tmp/logs/build-old.log ) &
GPU_CHECK_TESTS=0 GPU_CHECK_BENCH=0 scripts/gpu-check.sh > /tmp/logs/build.log 2>&1
echo "build rc $? after $(( $(date +%s) - start )) s"
T=build-gpu/tests/gpuattn_cuda_tests
for i in 0 1; do
  GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=$i timeout 200 $T --gtest_filter='*Alibi*' > /tmp/logs/shard$i.log 2>&1 &
done
GPUATTN_KERNEL=sm90_ws_192x128 timeout 200 $T --gtest_filter='*Alibi*D64*' > /tmp/logs/sm90_192.log 2>&1 &
GPUATTN_KERNEL=sm90_ws_128x128 timeout 200 $T --gtest_filter='*Alibi*D64*:*Alibi*D128*' > /tmp/logs/sm90_2stage.log 2>&1 &
GPUATTN_KERNEL=sm90_ws_128x128_s3 timeout 200 $T --gtest_filter='*Alibi*D128*' > /tmp/logs/sm90_s3.log 2>&1 &
wait
echo "tests done after $(( $(date +%s) - start )) s"
for f in shard0 shard1 sm90_192 sm90_2stage sm90_s3; do
  echo "$f: $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' /tmp/logs/$f.log | tr '\n' ' ')"
done
grep -h '^\[  FAILED  \] [A-Z]' /tmp/logs/*.log | sort -u | head -20
cuobjdump -res-usage build-gpu/libgpuattn.a 2>/dev/null | grep -A1 'fwd_kernelINS0_9FwdTraits.*Lb0EEEvNS_9FwdParams' > /tmp/logs/res-dense.txt
echo "dense sm90 kernels: $(grep -c Function /tmp/logs/res-dense.txt), with stack or local: $(grep -cE 'STACK:[1-9]|LOCAL:[1-9]' /tmp/logs/res-dense.txt)"
while ! grep -q "old build rc" /tmp/logs/build-old.log; do sleep 2; done
tail -1 /tmp/logs/build-old.log
S="B16 H16 S1024 D128 causal alibi; B16 H16 S1024 D128 alibi; B32 H16 S512 D128 causal alibi; B8 H16 S2048 D128 causal bf16 alibi; B4 H16 S4096 D128 alibi; B4 H16 S4096 D64 causal alibi; B2 H8 S4096 D256 causal bf16 alibi; B16 H16 S1024 D128 causal; B4 H16 S4096 D128"
n=0
for side in old new new old; do
  n=$((n + 1))
  G=build-gpu/tools/gpuattn; [ $side = old ] && G=build-old/tools/gpuattn
  timeout 100 $G bench --shape "$S" --rep 300 --json /tmp/logs/b-$n-$side.json > /tmp/logs/b-$n-$side.log 2>&1
  echo "bench ($side) rc $? after $(( $(date +%s) - start )) s"
done
python3 - <<'PY'
import json
runs = {n: json.load(open(f"/tmp/logs/b-{n}.json"))["results"] for n in ("1-old", "2-new", "3-new", "4-old")}
ms = lambda ns, i: sum(runs[n][i]["ours_ms"] for n in ns) / len(ns)
for i, row in enumerate(runs["2-new"]):
    a, b = ms(("2-new", "3-new"), i), ms(("1-old", "4-old"), i)
    sp = lambda ns: abs(runs[ns[0]][i]["ours_ms"] - runs[ns[1]][i]["ours_ms"]) / min(runs[n][i]["ours_ms"] for n in ns)
    print(f"{row['label']:42s} new {a * 1e3:8.1f} us  old {b * 1e3:8.1f} us  new/old {a / b:.3f}  "
          f"spreads {sp(('2-new', '3-new')) * 100:.1f}% / {sp(('1-old', '4-old')) * 100:.1f}%  ({row['config']})")
PY
tar czf $OUT/logs.tar.gz -C /tmp logs
echo "done after $(( $(date +%s) - start )) s"
