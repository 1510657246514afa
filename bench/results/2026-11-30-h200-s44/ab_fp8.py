#!/usr/bin/env python3
"""The FP8 row of bench/fp8_attention.py alone (do_bench medians, L2 flushed, 3 rounds), for a
same-run A/B of two builds of the module: PYTHONPATH=<build>/python python3 ab_fp8.py TAG"""
import sys

import torch
from triton.testing import do_bench

sys.path.insert(0, "bench")
import bench_common  # noqa: E402
import fp8_attention as fa  # noqa: E402

tag = sys.argv[1]
for B, H, S, causal in fa.NAMED + fa.SWEEP:
    torch.manual_seed(0)
    g = torch.Generator(device="cuda").manual_seed(B * 7919 + S + int(causal))
    raw = [torch.randn(B, S, H, fa.D, device="cuda", dtype=torch.bfloat16, generator=g)
           for _ in range(3)]
    (q8, qs, _), (k8, ks, _), (v8, vs, _) = (fa.quantize(t) for t in raw)
    out = torch.empty(B, S, H, fa.D, device="cuda", dtype=torch.bfloat16)
    stream = torch.cuda.current_stream().cuda_stream

    def fp8():
        fa._C.attention_forward(q8, k8, v8, out, causal=causal, stream=stream, q_scale=qs,
                                k_scale=ks, v_scale=vs, kv_format="e4m3", check_indices=False)

    ms = bench_common.median([do_bench(fp8, warmup=25, rep=100, return_mode="median")
                              for _ in range(3)])
    flops = 4.0 * B * H * S * S * fa.D * (0.5 if causal else 1.0)
    print(f"{tag} B{B} H{H} S{S} {'causal' if causal else 'dense'} {ms * 1e3:.1f} us "
          f"{flops / (ms * 1e-3) / 1e12:.1f} TFLOP/s", flush=True)
    del raw, q8, k8, v8, out
