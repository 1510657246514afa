#!/usr/bin/env bash
# s28 call 4: call 3's host probe alone (its import was wrong: gpu_attention). Call 3: was call 2's compare_torch anomaly (Sq1 / Sq4 / Sq!=Sk causal cases 1.5-3x slower
# for ours and cuDNN alike, paged_decode.py normal in the same run) the host? Host facts, the decode
# GPU tests at this commit, compare_torch twice, and each backend's host time a call.
set -u
cd "$(dirname "$0")/../../.."
export GPUATTN_COMMIT=$(cat .commit)
{ nproc; uptime; lscpu | grep -E "Model name|MHz|^CPU\(s\)"; nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv; } > $OUT/host.log 2>&1
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON > /dev/null && cmake --build build-gpu -j16 > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
export PYTHONPATH=$PWD/build-gpu/python
for i in 1 2; do
python3 - >> $OUT/host-probe.log 2>&1 <<'PY'
import time, torch, torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
import gpu_attention as ga
dev = torch.device("cuda")
cases = [("bf16 B8 H32/8 Sq1 Sk4096 D128", 8, 32, 8, 1, 4096, 128, False),
         ("bf16 B2 H32/8 Sq4 Sk4096 D128 causal", 2, 32, 8, 4, 4096, 128, True),
         ("bf16 B2 H8 Sq1000 Sk1536 D128 causal", 2, 8, 8, 1000, 1536, 128, True),
         ("fp16 B1 H16 S1024 D64", 1, 16, 16, 1024, 1024, 64, False)]
cache = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device=dev)
for label, b, hq, hkv, sq, sk, d, causal in cases:
    dt = torch.float16 if label.startswith("fp16") else torch.bfloat16
    q = torch.randn(b, sq, hq, d, device=dev, dtype=dt)
    k = torch.randn(b, sk, hkv, d, device=dev, dtype=dt)
    v = torch.randn(b, sk, hkv, d, device=dev, dtype=dt)
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    mask = None
    if causal and sq != sk:
        i = torch.arange(sq, device=dev)[:, None]; j = torch.arange(sk, device=dev)[None, :]
        mask = j <= i + (sk - sq)
    kw = {"enable_gqa": True} if hq != hkv else {}
    fns = {"ours": lambda: ga.flash_attn_func(q, k, v, causal=causal)}
    def cud():
        with torch.no_grad(), sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return F.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask,
                                                  is_causal=causal and sq == sk, **kw)
    fns["cudnn"] = cud
    for name, fn in fns.items():
        for _ in range(20): fn()
        torch.cuda.synchronize()
        n = 200
        t0 = time.perf_counter()
        for _ in range(n): fn()
        host = (time.perf_counter() - t0) / n * 1e6
        torch.cuda.synchronize()
        gpu_total = (time.perf_counter() - t0) / n * 1e6
        # the flush alone, for the budget do_bench gives the host each iteration
        t0 = time.perf_counter()
        for _ in range(n): cache.zero_()
        torch.cuda.synchronize()
        flush = (time.perf_counter() - t0) / n * 1e6
        print(f"{label:<40} {name:<6} host {host:7.1f} us/call  host+gpu {gpu_total:7.1f} us/call  flush {flush:6.1f} us")
PY
done
cat $OUT/host-probe.log
# The hypothesis under test: with the host's cores busy, the cases whose calls cost the host most
# inflate as in call 2 (do_bench's flush no longer covers the host's time a call).
CASES="--case bfloat16,8,32,8,1,4096,128,0 --case bfloat16,2,32,8,4,4096,128,1 --case bfloat16,2,8,8,1000,1536,128,1 --case float16,1,16,16,1024,1024,64,0 --case bfloat16,2,8,8,1000,1536,128,0"
python3 bench/compare_torch.py $CASES --json $OUT/quiet.json > $OUT/quiet.log 2>&1
pids=(); for i in $(seq 16); do (while :; do :; done) & pids+=($!); done
python3 bench/compare_torch.py $CASES --json $OUT/busy.json > $OUT/busy.log 2>&1
kill "${pids[@]}"
echo "== quiet"; grep -E "^(fp16|bf16)" $OUT/quiet.log; echo "== host busy (16 spinning shells)"; grep -E "^(fp16|bf16)" $OUT/busy.log
