#!/usr/bin/env python3
"""FP8 attention against 16-bit attention on the same inputs, in one run: ours on FP8 E4M3 q, k and
v (a scale per head, out bfloat16), ours on bfloat16, and torch SDPA's cuDNN and flash backends on
bfloat16, at head dim 128 (DESIGN.md's shapes and the FA3 figure's sequence sweep: 16K tokens a
call, 16 heads, S = 512 ... 16384) or, with --head-dim 64 / 256, at that head dim with 32 / 8 heads
(the FA3 grid's H x D = 2048; the named shapes' heads scaled alike).

The FP8 row passes check_indices=False: its call then trusts the scale values rather than checking
them on a host copy, a stream synchronization that would otherwise be timed with it (the 16-bit
rows have nothing to check).

The 16-bit rows read the FP8 inputs dequantized (x * scale, exact in bfloat16), so every row
computes the same attention; "err" is ||out_fp8 - ref|| / ||ref|| against SDPA's fp32 math backend
on those inputs (shapes up to 4096 keys), the FP8 rounding of P included. Times are triton's
do_bench medians (L2 flushed), --repeats rounds with the rows in turn, the median of each row's
rounds. TFLOP/s counts 4 B H Sq Sk D (half of it causal).

    PYTHONPATH=<build>/python python3 bench/fp8_attention.py [--json out.json] [--quick]
        [--repeats N] [--head-dim 64|128|256]
"""
import argparse
import datetime
import json
import platform

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

import bench_common
import gpu_attention as ga
from gpu_attention import _C

NAMED = [(4, 16, 4096, False), (4, 16, 4096, True), (1, 32, 32768, True), (16, 16, 1024, True)]
SWEEP = [(16384 // s, 16, s, c) for c in (False, True) for s in (512, 1024, 2048, 4096, 8192, 16384)]


def shapes(head_dim, quick):
    """(B, H, S, causal) of the run: every shape's heads scaled by 128 / head_dim (H x D kept)."""
    cases = NAMED + ([] if quick else SWEEP)
    return [(B, H * 128 // head_dim, S, c) for B, H, S, c in cases]


def quantize(x):
    """x [B, S, H, D] -> (E4M3 bytes as uint8, float32 [H] scales, the dequantized bfloat16)."""
    scale = (x.float().abs().amax(dim=(0, 1, 3)) / 448.0).clamp_min(1e-8)
    q8 = (x.float() / scale[None, None, :, None]).to(torch.float8_e4m3fn)
    deq = (q8.float() * scale[None, None, :, None]).to(torch.bfloat16)
    return q8.view(torch.uint8), scale.contiguous(), deq


def case_rows(B, H, S, D, causal):
    g = torch.Generator(device="cuda").manual_seed(B * 7919 + S + int(causal))
    raw = [torch.randn(B, S, H, D, device="cuda", dtype=torch.bfloat16, generator=g)
           for _ in range(3)]
    (q8, qs, qd), (k8, ks, kd), (v8, vs, vd) = (quantize(t) for t in raw)
    out = torch.empty(B, S, H, D, device="cuda", dtype=torch.bfloat16)
    stream = torch.cuda.current_stream().cuda_stream

    def fp8():
        _C.attention_forward(q8, k8, v8, out, causal=causal, stream=stream, q_scale=qs,
                             k_scale=ks, v_scale=vs, kv_format="e4m3", check_indices=False)
        return out

    qt, kt, vt = (t.transpose(1, 2) for t in (qd, kd, vd))

    def sdpa(backend):
        def run():
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
        return run

    rows = {"fp8": fp8, "bf16": lambda: ga.flash_attn_func(qd, kd, vd, causal=causal),
            "cudnn": sdpa(SDPBackend.CUDNN_ATTENTION), "flash": sdpa(SDPBackend.FLASH_ATTENTION)}
    err = None
    if S <= 4096:
        with sdpa_kernel(SDPBackend.MATH):
            ref = F.scaled_dot_product_attention(qt.float(), kt.float(), vt.float(),
                                                 is_causal=causal).transpose(1, 2)
        got = fp8().float()
        err = ((got - ref).norm() / ref.norm()).item()
        del ref
    return rows, err


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="the named shapes only")
    ap.add_argument("--head-dim", type=int, choices=(64, 128, 256), default=128)
    args = ap.parse_args()
    D = args.head_dim
    results = []
    for B, H, S, causal in shapes(D, args.quick):
        rows, err = case_rows(B, H, S, D, causal)
        times = {k: [] for k in rows}
        for _ in range(args.repeats):
            for k, fn in rows.items():
                times[k].append(do_bench(fn, warmup=25, rep=100, return_mode="median"))
        ms = {k: bench_common.median(v) for k, v in times.items()}
        flops = 4.0 * B * H * S * S * D * (0.5 if causal else 1.0)
        tf = {k: flops / (v * 1e-3) / 1e12 for k, v in ms.items()}
        r = {"B": B, "H": H, "S": S, "D": D, "causal": causal, "ms": ms, "tflops": tf,
             "fp8_over_cudnn": ms["cudnn"] / ms["fp8"], "fp8_over_bf16": ms["bf16"] / ms["fp8"],
             "bf16_over_cudnn": ms["cudnn"] / ms["bf16"], "err": err}
        results.append(r)
        print(f"B{B:<2} H{H} S{S:<5} D{D} {'causal' if causal else 'dense ':6}  TFLOP/s fp8 "
              f"{tf['fp8']:6.1f}  bf16 {tf['bf16']:6.1f}  cuDNN {tf['cudnn']:6.1f}  flash "
              f"{tf['flash']:6.1f}  fp8/cuDNN {r['fp8_over_cudnn']:.2f}x  fp8/bf16 "
              f"{r['fp8_over_bf16']:.2f}x  err {'-' if err is None else f'{err:.4f}'}",
              flush=True)
        del rows
        torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "date": str(datetime.date.today()),
                       "commit": bench_common.git_commit(), "torch": torch.__version__,
                       "host": platform.node(), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
