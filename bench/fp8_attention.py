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

With --cudnn-fp8 a row of cuDNN's own FP8 attention joins them (cudnn-frontend's sdpa_fp8, pip
nvidia-cudnn-frontend; not in the device image: carry its wheel): the stricter anchor for the FP8
row. It takes one scale a tensor (its inputs are quantized so, from the same values), writes E4M3
out on Hopper (bf16 out needs Blackwell), and aligns a causal mask top-left (ours bottom-right: the
same at Sq = Sk, as here); its "err" is against the reference on its own dequantized inputs, out's
E4M3 rounding included. Written from the frontend 1.32 API; not yet run (s50).

    PYTHONPATH=<build>/python python3 bench/fp8_attention.py [--json out.json] [--quick]
        [--repeats N] [--head-dim 64|128|256] [--cudnn-fp8]
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


def quantize(x, per_head=True):
    """x [B, S, H, D] -> (E4M3 bytes as uint8, float32 scales [H] (per_head) or [1], the
    dequantized bfloat16)."""
    amax = x.float().abs().amax(dim=(0, 1, 3) if per_head else (0, 1, 2, 3), keepdim=True)
    scale = (amax / 448.0).clamp_min(1e-8)
    q8 = (x.float() / scale).to(torch.float8_e4m3fn)
    deq = (q8.float() * scale).to(torch.bfloat16)
    return q8.view(torch.uint8), scale.flatten().contiguous(), deq


def fmt(e):
    return "-" if e is None else format(e, ".4f")


def cudnn_fp8_row(raw, causal):
    """cuDNN's FP8 SDPA on raw's values quantized with one scale a tensor: (run, its output in
    real units, its dequantized q, k, v in [B, H, S, D] for the reference)."""
    import cudnn  # nvidia-cudnn-frontend

    f32 = dict(dtype=torch.float32, device="cuda")
    e4m3 = cudnn.data_type.FP8_E4M3
    tensors, descales, deq = [], [], []
    for x in raw:
        x8, scale, xd = quantize(x, per_head=False)
        # cuDNN's dims [B, H, S, D]: views, their strides
        tensors.append(x8.view(torch.float8_e4m3fn).permute(0, 2, 1, 3))
        descales.append(scale)
        deq.append(xd.transpose(1, 2))
    qv, kv, vv = tensors
    B, H, S, D = qv.shape
    out = torch.empty(B, S, H, D, dtype=torch.float8_e4m3fn, device="cuda")  # E4M3 out (Hopper)
    ov = out.permute(0, 2, 1, 3)
    handle = cudnn.create_handle()
    cudnn.set_stream(handle, torch.cuda.current_stream().cuda_stream)
    g = cudnn.pygraph(io_data_type=e4m3, intermediate_data_type=cudnn.data_type.FLOAT,
                      compute_data_type=cudnn.data_type.FLOAT, handle=handle)
    q_t, k_t, v_t = (g.tensor(name=n, dim=list(t.shape), stride=list(t.stride()), data_type=e4m3)
                     for n, t in zip("qkv", tensors))
    names = ("descale_q", "descale_k", "descale_v", "descale_s", "scale_s", "scale_o")
    sc = {n: g.tensor(name=n, dim=[1, 1, 1, 1], stride=[1, 1, 1, 1],
                      data_type=cudnn.data_type.FLOAT) for n in names}
    # P is quantized as P * scale_s (448: E4M3's largest value, the frontend's advice), out as is.
    vals = dict(zip(names, descales + [torch.full((1,), 1 / 448.0, **f32),
                                       torch.full((1,), 448.0, **f32), torch.ones(1, **f32)]))
    mask = dict(diagonal_alignment=cudnn.diagonal_alignment.TOP_LEFT, right_bound=0) if causal else {}
    o_t, _, amax_s_t, amax_o_t = g.sdpa_fp8(
        q=q_t, k=k_t, v=v_t, **{n: sc[n] for n in names}, generate_stats=False,
        attn_scale=1.0 / D ** 0.5, name="sdpa_fp8", **mask)
    o_t.set_output(True).set_dim(list(ov.shape)).set_stride(list(ov.stride())).set_data_type(e4m3)
    amax = {t: torch.zeros(1, **f32) for t in (amax_s_t, amax_o_t)}
    for t in amax:
        t.set_output(True).set_dim([1, 1, 1, 1]).set_stride([1, 1, 1, 1]).set_data_type(
            cudnn.data_type.FLOAT)
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    g.check_support()
    g.build_plans()
    workspace = torch.empty(max(1, g.get_workspace_size()), dtype=torch.uint8, device="cuda")
    pack = {q_t: qv, k_t: kv, v_t: vv, o_t: ov, **{sc[n]: vals[n] for n in names}, **amax}

    def run():
        g.execute(pack, workspace, handle=handle)
        return out

    return run, deq


def case_rows(B, H, S, D, causal, cudnn_fp8=False):
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
    if cudnn_fp8:
        rows["cudnn_fp8"], cudnn_deq = cudnn_fp8_row(raw, causal)
    err = {"fp8": None, "cudnn_fp8": None}
    if S <= 4096:
        def rel_err(got, q_, k_, v_):
            with sdpa_kernel(SDPBackend.MATH):
                ref = F.scaled_dot_product_attention(q_.float(), k_.float(), v_.float(),
                                                     is_causal=causal).transpose(1, 2)
            return ((got.float() - ref).norm() / ref.norm()).item()

        err["fp8"] = rel_err(fp8(), qt, kt, vt)
        if cudnn_fp8:
            err["cudnn_fp8"] = rel_err(rows["cudnn_fp8"](), *cudnn_deq)
            del cudnn_deq
    return rows, err


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="the named shapes only")
    ap.add_argument("--head-dim", type=int, choices=(64, 128, 256), default=128)
    ap.add_argument("--cudnn-fp8", action="store_true",
                    help="add cuDNN's FP8 SDPA (pip nvidia-cudnn-frontend) as a row")
    args = ap.parse_args()
    if args.cudnn_fp8:
        try:
            import cudnn  # noqa: F401
        except ImportError as e:
            raise SystemExit(f"--cudnn-fp8 needs cudnn-frontend (pip install nvidia-cudnn-frontend; "
                             f"on the device, carry its wheel): {e}")
    D = args.head_dim
    results = []
    for B, H, S, causal in shapes(D, args.quick):
        rows, err = case_rows(B, H, S, D, causal, args.cudnn_fp8)
        times = {k: [] for k in rows}
        for _ in range(args.repeats):
            for k, fn in rows.items():
                times[k].append(do_bench(fn, warmup=25, rep=100, return_mode="median"))
        ms = {k: bench_common.median(v) for k, v in times.items()}
        flops = 4.0 * B * H * S * S * D * (0.5 if causal else 1.0)
        tf = {k: flops / (v * 1e-3) / 1e12 for k, v in ms.items()}
        r = {"B": B, "H": H, "S": S, "D": D, "causal": causal, "ms": ms, "tflops": tf,
             "fp8_over_cudnn": ms["cudnn"] / ms["fp8"], "fp8_over_bf16": ms["bf16"] / ms["fp8"],
             "bf16_over_cudnn": ms["cudnn"] / ms["bf16"], "err": err["fp8"]}
        if args.cudnn_fp8:
            r["fp8_over_cudnn_fp8"] = ms["cudnn_fp8"] / ms["fp8"]
            r["err_cudnn_fp8"] = err["cudnn_fp8"]
        results.append(r)
        line = (f"B{B:<2} H{H} S{S:<5} D{D} {'causal' if causal else 'dense ':6}  TFLOP/s fp8 "
                f"{tf['fp8']:6.1f}  bf16 {tf['bf16']:6.1f}  cuDNN {tf['cudnn']:6.1f}  flash "
                f"{tf['flash']:6.1f}  fp8/cuDNN {r['fp8_over_cudnn']:.2f}x  fp8/bf16 "
                f"{r['fp8_over_bf16']:.2f}x  err {fmt(err['fp8'])}")
        if args.cudnn_fp8:
            line += (f"  cuDNN fp8 {tf['cudnn_fp8']:6.1f}  fp8/cuDNN fp8 "
                     f"{r['fp8_over_cudnn_fp8']:.2f}x  err {fmt(err['cudnn_fp8'])}")
        print(line, flush=True)
        del rows
        torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "date": str(datetime.date.today()),
                       "commit": bench_common.git_commit(), "torch": torch.__version__,
                       "host": platform.node(), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
