"""ALiBi (a bias of -slope_h * |i + Sk - Sq - j| on each score; BLOOM, MPT) timed side by side:
gpu_attention.flash_attn_func(alibi_slopes=...) against torch's compiled FlexAttention with the
same score_mod, and each against the same call without the bias (ours; and torch SDPA's cuDNN
backend, which takes no ALiBi: what an unbiased call costs there). Outputs are checked against an
fp64 reference on sampled rows of batch 0 (ours and Flex's). One row a shape: times (do_bench
median, L2 flushed), TFLOP/s, ours/Flex, and what the bias costs each side. On CUDA our ALiBi
calls run the portable sm_80 kernel (the unbiased ones the sm_90a or decode kernels on Hopper).

    PYTHONPATH=<build>/python python3 bench/alibi_bench.py [--json F] [--md F] [--only WORD...]
        [--device cuda|cpu]

--device cpu is a smoke run of the script (our CPU backend, Flex unfused, small shapes).
"""
import argparse
import math
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_common  # noqa: E402
# The flops count, the error measure and the number format are softcap_bench's (which also
# imports torch, FlexAttention and gpu_attention, naming any that is missing).
from softcap_bench import f, flops, worst_error  # noqa: E402
import torch  # noqa: E402
from torch.nn.attention.flex_attention import create_block_mask, flex_attention  # noqa: E402
import gpu_attention as ga  # noqa: E402

# (label, batch, q heads, kv heads, q length, k length, head dim, causal, dtype). BLOOM-176B is
# 112 heads of 128, MPT-7B 32 of 128 (both ALiBi, no GQA); decode rows are one query a sequence
# over a cache of Sk keys.
CASES = [
    ("B4 H16 S4096 D128", 4, 16, 16, 4096, 4096, 128, False, "float16"),
    ("B4 H16 S4096 D128 causal", 4, 16, 16, 4096, 4096, 128, True, "float16"),
    ("B2 H32 S4096 D128 causal bf16", 2, 32, 32, 4096, 4096, 128, True, "bfloat16"),
    ("B4 H16 S4096 D64 causal", 4, 16, 16, 4096, 4096, 64, True, "float16"),
    ("B2 H8 S4096 D256 causal bf16", 2, 8, 8, 4096, 4096, 256, True, "bfloat16"),
    ("B16 H16 S1024 D128 causal", 16, 16, 16, 1024, 1024, 128, True, "float16"),
    ("decode B32 H32 Sk4096 D128", 32, 32, 32, 1, 4096, 128, False, "float16"),
    ("decode B32 Hq32 Hkv8 Sk8192 D128 bf16", 32, 32, 8, 1, 8192, 128, False, "bfloat16"),
]
SMOKE_CASES = [
    ("B1 H2 S128 D64 causal", 1, 2, 2, 128, 128, 64, True, "float32"),
    ("decode B2 Hq4 Hkv2 Sk200 D64", 2, 4, 2, 1, 200, 64, False, "float32"),
]


def slopes_of(hq):
    """The ALiBi paper's slopes for hq heads: 2^(-8 (h + 1) / hq)."""
    return [2.0 ** (-8.0 * (h + 1) / hq) for h in range(hq)]


def reference_rows(q, k, v, rows, heads, scale, slopes, causal):
    """fp64 ALiBi attention of batch 0's `rows` and `heads` ([B, S, H, D] inputs)."""
    sq, sk = q.shape[1], k.shape[1]
    group = q.shape[2] // k.shape[2]
    out = torch.empty(len(heads), len(rows), q.shape[3], dtype=torch.float64)
    for a, h in enumerate(heads):
        kk = k[0, :, h // group].double().cpu()
        vv = v[0, :, h // group].double().cpu()
        for b, r in enumerate(rows):
            n = min(sk, r + sk - sq + 1) if causal else sk
            s = (kk[:n] @ q[0, r, h].double().cpu()) * scale
            dist = (torch.arange(n, dtype=torch.float64) - (r + sk - sq)).abs()
            s = s - slopes[h] * dist
            out[a, b] = torch.softmax(s, 0) @ vv[:n]
    return out


def run_case(case, args, timer, flex, dev, gen):
    label, b, hq, hkv, sq, sk, d, causal, dtype_name = case
    dtype = getattr(torch, dtype_name)
    row = dict(case=label, batch=b, hq=hq, hkv=hkv, seqlen_q=sq, seqlen_k=sk, head_dim=d,
               causal=causal, dtype=dtype_name, flops=flops(b, hq, sq, sk, d, causal))
    q = torch.randn(b, sq, hq, d, device=dev, dtype=dtype, generator=gen)
    k, v = (torch.randn(b, sk, hkv, d, device=dev, dtype=dtype, generator=gen) for _ in range(2))
    qf, kf, vf = (x.transpose(1, 2) for x in (q, k, v))  # [B, H, S, D] views, as SDPA's
    scale = 1.0 / math.sqrt(d)
    slope_list = slopes_of(hq)
    slopes = torch.tensor(slope_list, device=dev, dtype=torch.float32)
    off = sk - sq

    def alibi_mod(score, bi, hi, qi, ki):
        return score - slopes[hi] * (qi + off - ki).abs()

    block_mask = None
    if causal:
        def causal_fn(bi, hi, qi, ki):
            return qi + off >= ki

        block_mask = create_block_mask(causal_fn, None, None, sq, sk, device=str(dev))
    gqa = dict(enable_gqa=True) if hq != hkv else {}

    sides = {
        "ours": lambda: ga.flash_attn_func(q, k, v, causal=causal, alibi_slopes=slopes),
        "ours_plain": lambda: ga.flash_attn_func(q, k, v, causal=causal),
        "flex": lambda: flex(qf, kf, vf, score_mod=alibi_mod, block_mask=block_mask, **gqa),
        "flex_plain": lambda: flex(qf, kf, vf, block_mask=block_mask, **gqa),
    }
    if dev.type == "cuda":
        from torch.nn.attention import SDPBackend, sdpa_kernel

        def cudnn():
            with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                return torch.nn.functional.scaled_dot_product_attention(
                    qf, kf, vf, is_causal=causal and sq == sk, **gqa)

        if not causal or sq == sk:
            sides["cudnn_plain"] = cudnn
    outs = {}
    for name, fn in sides.items():
        t0 = time.perf_counter()
        try:
            o = fn()
            if dev.type == "cuda":
                torch.cuda.synchronize(dev)
            outs[name] = o if name.startswith("ours") else o.transpose(1, 2)
            row[f"{name}_first_call_s"] = time.perf_counter() - t0
        except Exception as e:  # reported in the table
            traceback.print_exc()
            row[f"{name}_error"] = f"{type(e).__name__}: {str(e)[:300]}"

    g = torch.Generator().manual_seed(args.seed)
    rows = sorted(set(torch.randint(0, sq, (args.ref_rows,), generator=g).tolist()) | {sq - 1})
    heads = sorted({0, hq - 1})
    ref = reference_rows(q, k, v, rows, heads, scale, slope_list, causal)
    for name in ("ours", "flex"):
        if name in outs:
            row[f"{name}_max_err"] = worst_error(outs[name], ref, rows, heads)
    outs.clear()
    for name, fn in sides.items():
        if f"{name}_error" not in row:
            row[f"{name}_ms"] = timer(fn)
            row[f"{name}_tflops"] = row["flops"] / (row[f"{name}_ms"] * 1e-3) / 1e12
    if row.get("ours_ms") and row.get("flex_ms"):
        row["ours_over_flex"] = row["flex_ms"] / row["ours_ms"]  # > 1: ours faster
    for name in ("ours", "flex"):
        if row.get(f"{name}_ms") and row.get(f"{name}_plain_ms"):
            row[f"{name}_bias_cost"] = row[f"{name}_ms"] / row[f"{name}_plain_ms"]
    return row


def markdown(result):
    lines = [f"### ALiBi attention: gpu_attention vs FlexAttention, {result['device']}, "
             f"{result['date']}, commit {result['commit']}",
             "", f"{result['torch']}; {result['timer']}; Flex: {result['flex_mode']}; slopes "
             "2^(-8 (h + 1) / H). Speed-up: Flex's time / ours (> 1: ours faster); bias cost: a "
             "side's ALiBi time / its time without the bias. max_err: the largest |out - fp64 "
             "reference| over sampled rows.", "",
             "| shape | ours µs | ours TFLOP/s | Flex µs | speed-up vs Flex | ours bias cost | "
             "Flex bias cost | ours plain µs | cuDNN plain µs | ours max_err | Flex max_err |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result["rows"]:
        us = lambda k: f(r.get(k) and r[k] * 1e3, ".1f")  # noqa: E731
        lines.append(
            f"| {r['case']} | {us('ours_ms')} | {f(r.get('ours_tflops'), '.1f')} | "
            f"{us('flex_ms')} | {f(r.get('ours_over_flex'), '.2f')}x | "
            f"{f(r.get('ours_bias_cost'), '.3f')} | {f(r.get('flex_bias_cost'), '.3f')} | "
            f"{us('ours_plain_ms')} | {us('cudnn_plain_ms')} | "
            f"{f(r.get('ours_max_err'), '.1e')} | {f(r.get('flex_max_err'), '.1e')} |")
        for k in sorted(r):
            if k.endswith("_error"):
                lines.append(f"|   {k}: {r[k][:200]} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--only", nargs="*", default=None, help="cases whose label has all WORDs")
    ap.add_argument("--warmup", type=int, default=25)
    ap.add_argument("--rep", type=int, default=100)
    ap.add_argument("--ref-rows", type=int, default=6)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tol", type=float, default=2e-2,
                    help="max |ours - fp64| allowed (outputs are O(1)); exit 1 beyond it")
    ap.add_argument("--json")
    ap.add_argument("--md")
    args = ap.parse_args()
    dev = torch.device(args.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        print("alibi_bench: --device cuda but torch sees no GPU", file=sys.stderr)
        return 2
    cases = SMOKE_CASES if dev.type == "cpu" else CASES
    if args.only:
        cases = [c for c in cases if all(w in c[0].split() for w in args.only)]
        if not cases:
            ap.error(f"--only {' '.join(args.only)} matches no case")
    timer, timer_desc = bench_common.do_bench_timer("alibi_bench", args.warmup, args.rep, dev,
                                                    "every side")
    if dev.type == "cuda":
        flex = torch.compile(flex_attention, dynamic=False)
        flex_mode = "torch.compile(flex_attention, dynamic=False)"
    else:
        flex = flex_attention
        flex_mode = "flex_attention eager (cpu smoke run)"
    gen = torch.Generator(device=dev).manual_seed(args.seed)
    rows = []
    for case in cases:
        print(f"== {case[0]}", flush=True)
        rows.append(run_case(case, args, timer, flex, dev, gen))
    result = dict(
        device=torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
        date=time.strftime("%Y-%m-%d"), commit=bench_common.git_commit(),
        torch=f"torch {torch.__version__}" + (
            f", cuDNN {torch.backends.cudnn.version()}" if dev.type == "cuda" else ""),
        timer=timer_desc, flex_mode=flex_mode, rows=rows)
    md = markdown(result)
    print(md)
    bench_common.write_outputs(result, md, args.json, args.md)
    bad = [r["case"] for r in rows
           if "ours_error" in r or r.get("ours_max_err", 0.0) > args.tol]
    if bad:
        print(f"alibi_bench: ours failed or beyond --tol {args.tol} on: {', '.join(bad)}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
