"""The side-by-side harness of softcap_bench.py and alibi_bench.py: a score modification (a soft-cap,
an ALiBi bias) in gpu_attention.flash_attn_func against torch's compiled FlexAttention with the same
score_mod, each against its call without the modification, cuDNN's plain time beside them; outputs
checked against an fp64 reference on sampled rows of batch 0. Each script keeps its cases, its
reference and its table; this module the inputs, the sides' runs and timings, and main().

The scripts import torch, FlexAttention and gpu_attention first, each naming a missing one as
itself (exit 2); this module then imports torch and FlexAttention plainly."""
import argparse
import math
import sys
import time
import traceback

import bench_common
import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention


def flops(b, hq, sq, sk, d, causal, window=None):
    """4 * visible pairs * d (the two GEMMs); causal bottom-right aligned. window: (left, right)
    as flash-attn's window_size (-1: unbounded on that side), row i at key position i + sk - sq
    sees keys [pos - left, pos + right]."""
    if window is not None:
        left, right = window
        pairs = 0
        for i in range(sq):
            pos = i + sk - sq
            lo = 0 if left < 0 else max(0, pos - left)
            hi = sk - 1 if right < 0 else min(sk - 1, pos + right)
            if causal:
                hi = min(hi, pos)
            pairs += max(0, hi - lo + 1)
    elif causal:
        pairs = sum(max(0, min(sk, i + sk - sq + 1)) for i in range(sq)) if sq != sk else \
            sq * (sq + 1) // 2
    else:
        pairs = sq * sk
    return 4.0 * b * hq * pairs * d


def worst_error(out, ref, rows, heads):
    got = out[0].double().cpu()[rows][:, heads].permute(1, 0, 2)
    return (got - ref).abs().max().item()


def f(x, fmt):
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


class Inputs:
    """One case's tensors: q ([B, S, H, D], times q_times), k, v, their [B, H, S, D] views for SDPA
    and Flex (qf, kf, vf), the softmax scale, the block mask of causal and window (None without
    either), Flex's and SDPA's GQA keyword, and the row that the timings go into. window: None or
    (left, right), flash-attn's window_size (-1: unbounded on that side)."""

    def __init__(self, case, dev, gen, q_times=1.0, window=None, **row_extra):
        label, b, hq, hkv, sq, sk, d, causal, dtype_name = case
        dtype = getattr(torch, dtype_name)
        self.hq, self.sq, self.sk, self.causal, self.dev = hq, sq, sk, causal, dev
        self.window = window
        self.row = dict(case=label, batch=b, hq=hq, hkv=hkv, seqlen_q=sq, seqlen_k=sk,
                        head_dim=d, causal=causal, dtype=dtype_name, **row_extra,
                        flops=flops(b, hq, sq, sk, d, causal, window))
        if window is not None:
            self.row["window"] = list(window)
        self.q = torch.randn(b, sq, hq, d, device=dev, dtype=dtype, generator=gen)
        if q_times != 1.0:
            self.q = self.q * q_times
        self.k, self.v = (torch.randn(b, sk, hkv, d, device=dev, dtype=dtype, generator=gen)
                          for _ in range(2))
        self.qf, self.kf, self.vf = (x.transpose(1, 2) for x in (self.q, self.k, self.v))
        self.scale = 1.0 / math.sqrt(d)
        self.block_mask = None
        off = sk - sq
        if window is not None:
            left, right = window

            def window_fn(bi, hi, qi, ki):
                pos = qi + off
                seen = (pos - ki <= left) if left >= 0 else (ki >= 0)
                if right >= 0:
                    seen = seen & (ki - pos <= right)
                if causal:
                    seen = seen & (pos >= ki)
                return seen

            self.block_mask = create_block_mask(window_fn, None, None, sq, sk, device=str(dev))
        elif causal:

            def causal_fn(bi, hi, qi, ki):
                return qi + off >= ki

            self.block_mask = create_block_mask(causal_fn, None, None, sq, sk, device=str(dev))
        self.gqa = dict(enable_gqa=True) if hq != hkv else {}

    def cudnn(self):
        """torch SDPA on its cuDNN backend, without the modification."""
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            return torch.nn.functional.scaled_dot_product_attention(
                self.qf, self.kf, self.vf, is_causal=self.causal and self.sq == self.sk,
                **self.gqa)


def run_sides(x, sides, plain, cost, reference, args, timer):
    """Runs every side of `sides` once (first-call time, or its error in the row), checks ours and
    Flex's outputs against reference(rows, heads), times every side that ran, and fills x.row:
    <side>_ms / _tflops / _max_err, ours_over_flex (> 1: ours faster) and <ours|flex>_<cost>
    (a side's time over that of its `<side>_<plain>` twin). With a GPU, `cudnn_<plain>` joins
    the sides where SDPA takes the shape (not causal with Sq != Sk, no window). Returns the row."""
    row = x.row
    if x.dev.type == "cuda" and (not x.causal or x.sq == x.sk) and x.window is None:
        sides[f"cudnn_{plain}"] = x.cudnn
    outs = {}
    for name, fn in sides.items():
        t0 = time.perf_counter()
        try:
            o = fn()
            if x.dev.type == "cuda":
                torch.cuda.synchronize(x.dev)
            outs[name] = o if name.startswith("ours") else o.transpose(1, 2)
            row[f"{name}_first_call_s"] = time.perf_counter() - t0
        except Exception as e:  # reported in the table
            traceback.print_exc()
            row[f"{name}_error"] = f"{type(e).__name__}: {str(e)[:300]}"

    g = torch.Generator().manual_seed(args.seed)
    rows = sorted(set(torch.randint(0, x.sq, (args.ref_rows,), generator=g).tolist()) | {x.sq - 1})
    heads = sorted({0, x.hq - 1})
    ref = reference(rows, heads)
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
        if row.get(f"{name}_ms") and row.get(f"{name}_{plain}_ms"):
            row[f"{name}_{cost}"] = row[f"{name}_ms"] / row[f"{name}_{plain}_ms"]
    return row


def main(script, doc, cases, smoke_cases, run_case, markdown, add_args=None, check_args=None,
         result_extra=None):
    """The scripts' command line: --device, --only, --warmup, --rep, --ref-rows, --seed, --tol,
    --json, --md, and what add_args(parser) adds (check_args(parser, args) refuses bad values);
    every case run by run_case(case, args, timer, flex, dev, gen), the rows and result_extra(args)
    written as JSON and as markdown(result). Exit 1 when ours failed or missed --tol on a case;
    `script` names the messages."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    if add_args:
        add_args(ap)
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
    if check_args:
        check_args(ap, args)
    dev = torch.device(args.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        print(f"{script}: --device cuda but torch sees no GPU", file=sys.stderr)
        return 2
    chosen = smoke_cases if dev.type == "cpu" else cases
    if args.only:
        chosen = [c for c in chosen if all(w in c[0].split() for w in args.only)]
        if not chosen:
            ap.error(f"--only {' '.join(args.only)} matches no case")
    timer, timer_desc = bench_common.do_bench_timer(script, args.warmup, args.rep, dev,
                                                    "every side")
    if dev.type == "cuda":
        flex = torch.compile(flex_attention, dynamic=False)
        flex_mode = "torch.compile(flex_attention, dynamic=False)"
    else:
        flex = flex_attention
        flex_mode = "flex_attention eager (cpu smoke run)"
    gen = torch.Generator(device=dev).manual_seed(args.seed)
    rows = []
    for case in chosen:
        print(f"== {case[0]}", flush=True)
        rows.append(run_case(case, args, timer, flex, dev, gen))
    result = dict(
        device=torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
        date=time.strftime("%Y-%m-%d"), commit=bench_common.git_commit(),
        torch=f"torch {torch.__version__}" + (
            f", cuDNN {torch.backends.cudnn.version()}" if dev.type == "cuda" else ""),
        timer=timer_desc, flex_mode=flex_mode, **(result_extra(args) if result_extra else {}),
        rows=rows)
    md = markdown(result)
    print(md)
    bench_common.write_outputs(result, md, args.json, args.md)
    bad = [r["case"] for r in rows
           if "ours_error" in r or r.get("ours_max_err", 0.0) > args.tol]
    if bad:
        print(f"{script}: ours failed or beyond --tol {args.tol} on: {', '.join(bad)}",
              file=sys.stderr)
        return 1
    return 0
