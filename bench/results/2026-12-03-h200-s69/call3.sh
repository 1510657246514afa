#!/usr/bin/env bash
# Session 69, call 3: the GPU check of the session's last state: soft-capped calls above the fast
# tanh's cap routed to the sm_80 kernel (the sm_90a kernels compile the fast loop only, as call
# 2's side a), HostCopies' review mends, the 8-bit kernel's 64-bit two-page test. The whole CUDA
# test binary (carry/s69.tar.xz) in 8 shards beside the Python module's build; memcheck of the
# changed suites; the Python files on CUDA; every kernel's stack frame (from the test binary);
# do_bench of flash_attn_func uncapped, capped at 50 and at 1000 (the sm_80 kernel now).
#   OUT=$OUT bash bench/results/2026-12-03-h200-s69/call3.sh   (carry ["carry"])
set -u
cd "$(dirname "$0")/../../.." || exit 1
start=$(date +%s)
mkdir -p /tmp/s69 /tmp/logs
tar xJf carry/s69.tar.xz -C /tmp/s69 --strip-components 1
(cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON > /tmp/logs/build.log 2>&1 && cmake --build build-gpu -j8 --target _C \
  >> /tmp/logs/build.log 2>&1; echo "build rc $?" >> /tmp/logs/build.log) &
for i in 0 1 2 3 4 5 6 7; do
  GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i timeout 300 /tmp/s69/gpuattn_cuda_tests \
    > /tmp/logs/shard$i.log 2>&1 &
done
wait
echo "shards and build done after $(( $(date +%s) - start )) s"; tail -1 /tmp/logs/build.log
for i in 0 1 2 3 4 5 6 7; do
  echo "shard $i: $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' /tmp/logs/shard$i.log | tr '\n' ' ')"
done
grep -h '^\[  FAILED  \] [A-Z]' /tmp/logs/shard*.log | sort -u | head -20
timeout 200 compute-sanitizer --tool memcheck /tmp/s69/gpuattn_cuda_tests \
  --gtest_filter='QuantizedKvCuda.Leftpad*:PagedKvCuda.CheckedCalls*:PagedKvCuda.Leftpad*:AttentionCudaTest.Softcapped*:Softcap/AttentionCuda.*' \
  > /tmp/logs/memcheck.log 2>&1 &
export PYTHONPATH=$PWD/build-gpu/python:$PWD/tests/python:$PWD/bench
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/python/test_softcap.py \
  tests/python/test_cache_leftpad.py tests/python/test_cache_batch_idx.py \
  tests/python/test_fast_path.py tests/python/test_rotary.py tests/python/test_flash_api.py \
  > /tmp/logs/pytest.log 2>&1 &
wait
echo "memcheck: $(grep -E 'ERROR SUMMARY' /tmp/logs/memcheck.log)"
grep -E '^\[  (PASSED|FAILED)' /tmp/logs/memcheck.log | head -5
echo "pytest: $(tail -1 /tmp/logs/pytest.log)"; grep -E '^FAILED|^ERROR' /tmp/logs/pytest.log | head
cuobjdump --dump-resource-usage /tmp/s69/gpuattn_cuda_tests 2>/dev/null | grep -E 'Function|REG' |
  sed -E 's/^[[:space:]]*//' | paste - - |
  sed -E 's/Function ([^:]*):.*REG:([0-9]+) STACK:([0-9]+).*/\2 \3 \1/' | c++filt |
  sed -E 's/gpuattn:://g; s/\(FwdParams.*//' | sort -u > $OUT/stack.txt
echo "kernels with a stack frame: $(awk '$2 > 0' $OUT/stack.txt | wc -l) of $(wc -l < $OUT/stack.txt)"
grep "sm90::fwd_kernel" $OUT/stack.txt | awk '$2 > 0' | cut -c1-140
python3 - <<'PY' 2>&1 | tee $OUT/caps.txt
import torch, triton.testing as tt, gpu_attention as ga
torch.manual_seed(0)
for (b, h, s, d, causal) in [(4, 32, 4096, 64, False), (4, 16, 4096, 128, True)]:
    q, k, v = (torch.randn(b, s, h, d, dtype=torch.float16, device="cuda") for _ in range(3))
    row = []
    for cap in (0.0, 50.0, 1000.0):
        f = lambda: ga.flash_attn_func(q, k, v, causal=causal, softcap=cap)
        f(); torch.cuda.synchronize()
        row.append(tt.do_bench(f, warmup=25, rep=200))
    print(f"B{b} H{h} S{s} D{d}{' causal' if causal else ''}: uncapped {row[0]:.4f} ms, "
          f"cap 50 {row[1]:.4f} ({row[1]/row[0]:.2f}x), cap 1000 {row[2]:.4f} ({row[2]/row[0]:.2f}x)")
PY
tar czf $OUT/logs.tar.gz -C /tmp logs
echo "done after $(( $(date +%s) - start )) s"
