"""Logit soft-capping (softcap * tanh(score / softcap), Gemma 2's attention) timed side by side:
gpu_attention.flash_attn_func(softcap=...) against torch's compiled FlexAttention with the same
score_mod, and each against the same call without the cap (ours; and torch SDPA's cuDNN backend,
which has no soft-capping: what an uncapped call costs there). Outputs are checked against an
fp64 reference on sampled rows of batch 0 (ours and Flex's). One row a shape: times (do_bench
median, L2 flushed), TFLOP/s, ours/Flex, and what the cap costs each side.

    PYTHONPATH=<build>/python python3 bench/softcap_bench.py [--json F] [--md F] [--cap 50]
        [--only WORD...] [--device cuda|cpu]

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

# (label, batch, q heads, kv heads, q length, k length, head dim, causal, dtype). Gemma 2 9B is
# 16 q / 8 kv heads of 256, 27B 32 / 16 of 128 (its query scale aside); decode rows are one query
# a sequence over a cache of Sk keys.
CASES = [
    ("B4 H16 S4096 D128", 4, 16, 16, 4096, 4096, 128, False, "float16"),
    ("B4 H16 S4096 D128 causal", 4, 16, 16, 4096, 4096, 128, True, "float16"),
    ("B2 Hq32 Hkv16 S4096 D128 causal bf16", 2, 32, 16, 4096, 4096, 128, True, "bfloat16"),
    ("B2 Hq16 Hkv8 S4096 D256 causal bf16", 2, 16, 8, 4096, 4096, 256, True, "bfloat16"),
    ("B4 H16 S4096 D64 causal", 4, 16, 16, 4096, 4096, 64, True, "float16"),
    ("B1 H16 S1024 D64", 1, 16, 16, 1024, 1024, 64, False, "float16"),
    ("decode B32 Hq16 Hkv8 Sk4096 D256 bf16", 32, 16, 8, 1, 4096, 256, False, "bfloat16"),
    ("decode B32 Hq32 Hkv8 Sk8192 D128", 32, 32, 8, 1, 8192, 128, False, "float16"),
]
SMOKE_CASES = [
    ("B1 H2 S128 D64 causal", 1, 2, 2, 128, 128, 64, True, "float32"),
    ("decode B2 Hq4 Hkv2 Sk200 D64", 2, 4, 2, 1, 200, 64, False, "float32"),
]


def fail_missing(what, err):
    bench_common.fail_missing("softcap_bench", what, err)


try:
    import torch
except ImportError as e:
    fail_missing("torch", e)
try:
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
except ImportError as e:
    fail_missing("torch.nn.attention.flex_attention (torch >= 2.5)", e)
try:
    import gpu_attention as ga
except ImportError as e:
    fail_missing("gpu_attention (build with GPUATTN_PYTHON=ON, put <build>/python on PYTHONPATH)",
                 e)


def flops(b, hq, sq, sk, d, causal):
    """4 * visible pairs * d (the two GEMMs); causal bottom-right aligned."""
    if causal:
        pairs = sum(max(0, min(sk, i + sk - sq + 1)) for i in range(sq)) if sq != sk else \
            sq * (sq + 1) // 2
    else:
        pairs = sq * sk
    return 4.0 * b * hq * pairs * d


def reference_rows(q, k, v, rows, heads, scale, cap, causal):
    """fp64 soft-capped attention of batch 0's `rows` and `heads` ([B, S, H, D] inputs)."""
    sq, sk = q.shape[1], k.shape[1]
    group = q.shape[2] // k.shape[2]
    out = torch.empty(len(heads), len(rows), q.shape[3], dtype=torch.float64)
    for a, h in enumerate(heads):
        kk = k[0, :, h // group].double().cpu()
        vv = v[0, :, h // group].double().cpu()
        for b, r in enumerate(rows):
            n = min(sk, r + sk - sq + 1) if causal else sk
            s = (kk[:n] @ q[0, r, h].double().cpu()) * scale
            s = cap * torch.tanh(s / cap)
            out[a, b] = torch.softmax(s, 0) @ vv[:n]
    return out


def worst_error(out, ref, rows, heads):
    got = out[0].double().cpu()[rows][:, heads].permute(1, 0, 2)
    return (got - ref).abs().max().item()


def run_case(case, args, timer, flex, dev, gen):
    label, b, hq, hkv, sq, sk, d, causal, dtype_name = case
    dtype = getattr(torch, dtype_name)
    cap = args.cap
    row = dict(case=label, batch=b, hq=hq, hkv=hkv, seqlen_q=sq, seqlen_k=sk, head_dim=d,
               causal=causal, dtype=dtype_name, softcap=cap,
               flops=flops(b, hq, sq, sk, d, causal))
    q = torch.randn(b, sq, hq, d, device=dev, dtype=dtype, generator=gen) * args.q_times
    k, v = (torch.randn(b, sk, hkv, d, device=dev, dtype=dtype, generator=gen) for _ in range(2))
    qf, kf, vf = (x.transpose(1, 2) for x in (q, k, v))  # [B, H, S, D] views, as SDPA's
    scale = 1.0 / math.sqrt(d)

    def softcap_mod(score, bi, hi, qi, ki):
        return cap * torch.tanh(score / cap)

    block_mask = None
    if causal:
        off = sk - sq

        def causal_fn(bi, hi, qi, ki):
            return qi + off >= ki

        block_mask = create_block_mask(causal_fn, None, None, sq, sk, device=str(dev))
    gqa = dict(enable_gqa=True) if hq != hkv else {}

    sides = {
        "ours": lambda: ga.flash_attn_func(q, k, v, causal=causal, softcap=cap),
        "ours_uncapped": lambda: ga.flash_attn_func(q, k, v, causal=causal),
        "flex": lambda: flex(qf, kf, vf, score_mod=softcap_mod, block_mask=block_mask, **gqa),
        "flex_uncapped": lambda: flex(qf, kf, vf, block_mask=block_mask, **gqa),
    }
    if dev.type == "cuda":
        from torch.nn.attention import SDPBackend, sdpa_kernel

        def cudnn():
            with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                return torch.nn.functional.scaled_dot_product_attention(
                    qf, kf, vf, is_causal=causal and sq == sk, **gqa)

        if not causal or sq == sk:
            sides["cudnn_uncapped"] = cudnn
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
    ref = reference_rows(q, k, v, rows, heads, scale, cap, causal)
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
        if row.get(f"{name}_ms") and row.get(f"{name}_uncapped_ms"):
            row[f"{name}_cap_cost"] = row[f"{name}_ms"] / row[f"{name}_uncapped_ms"]
    return row


def f(x, fmt):
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def markdown(result):
    lines = [f"### Soft-capped attention (softcap {result['softcap']}): gpu_attention vs "
             f"FlexAttention, {result['device']}, {result['date']}, commit {result['commit']}",
             "", f"{result['torch']}; {result['timer']}; Flex: {result['flex_mode']}. Speed-up: "
             "Flex's time / ours (> 1: ours faster); cap cost: a side's capped time / its "
             "uncapped time. max_err: the largest |out - fp64 reference| over sampled rows.", "",
             "| shape | ours µs | ours TFLOP/s | Flex µs | speed-up vs Flex | ours cap cost | "
             "Flex cap cost | ours uncapped µs | cuDNN uncapped µs | ours max_err | Flex max_err |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result["rows"]:
        us = lambda k: f(r.get(k) and r[k] * 1e3, ".1f")  # noqa: E731
        lines.append(
            f"| {r['case']} | {us('ours_ms')} | {f(r.get('ours_tflops'), '.1f')} | "
            f"{us('flex_ms')} | {f(r.get('ours_over_flex'), '.2f')}x | "
            f"{f(r.get('ours_cap_cost'), '.3f')} | {f(r.get('flex_cap_cost'), '.3f')} | "
            f"{us('ours_uncapped_ms')} | {us('cudnn_uncapped_ms')} | "
            f"{f(r.get('ours_max_err'), '.1e')} | {f(r.get('flex_max_err'), '.1e')} |")
        for k in sorted(r):
            if k.endswith("_error"):
                lines.append(f"|   {k}: {r[k][:200]} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--cap", type=float, default=50.0, help="softcap (Gemma 2's attention: 50)")
    ap.add_argument("--q-times", type=float, default=8.0,
                    help="q ~ N(0, q_times^2): logits of about q_times sigma, which the cap bends")
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
    if not args.cap > 0:
        ap.error(f"--cap {args.cap} must be > 0")
    dev = torch.device(args.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        print("softcap_bench: --device cuda but torch sees no GPU", file=sys.stderr)
        return 2
    cases = SMOKE_CASES if dev.type == "cpu" else CASES
    if args.only:
        cases = [c for c in cases if all(w in c[0].split() for w in args.only)]
        if not cases:
            ap.error(f"--only {' '.join(args.only)} matches no case")
    timer, timer_desc = bench_common.do_bench_timer("softcap_bench", args.warmup, args.rep, dev,
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
        timer=timer_desc, flex_mode=flex_mode, softcap=args.cap, q_times=args.q_times,
        rows=rows)
    md = markdown(result)
    print(md)
    bench_common.write_outputs(result, md, args.json, args.md)
    bad = [r["case"] for r in rows
           if "ours_error" in r or r.get("ours_max_err", 0.0) > args.tol]
    if bad:
        print(f"softcap_bench: ours failed or beyond --tol {args.tol} on: {', '.join(bad)}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
