#!/usr/bin/env python3
"""gpu_attention.sparse_attn_func against torch's compiled FlexAttention on the same sparse masks.

Same inputs, same mask, same run, same GPU, both timed by triton.testing.do_bench (median, L2
flushed before each run), as bench/compare_torch.py does for dense attention. Shapes (bf16, B1
H16 D128 by default; DESIGN.md's goal for the sliding windows: ours <= 0.7x Flex's time):

  window W1024     S16384  causal, window_size=(1023, 0): every row sees itself and the 1023 keys
                           before it (W keys; Flex mask: q - kv < W), as shared/tools/anchors.py
  window W4096     S65536  causal, window_size=(4095, 0)
  window+global    S131072 non-causal (Longformer): window_size=(2048, 2048) (4097 keys) plus 128
                           global tokens (rows < 128 see every key, every row sees keys < 128)
  block-sparse 50% S16384  non-causal, a random layout per head of 128x128 blocks, exactly half
  block-sparse 90% S16384  of the blocks on (10% for 90%), the diagonal always on (no empty row)

Flex gets a BlockMask built from exact per-block visible counts (full / partial / empty blocks, as
create_block_mask would make it, but never materializing S x S) and a mask_mod of the same rule
(bench/sparse_masks.py). Reported per shape: both times, ours/Flex, useful TFLOP/s (4 * D * visible
(query, key) pairs, counted exactly), max |ours - Flex| and an fp64 check of both on sampled rows.
torch SDPA is not timed: none of its fused backends (flash, cuDNN) takes a window, global tokens
or a block layout; it could only run these with a dense S x S attn_mask and no tile skipping.

Exits 1 when ours fails (other than NotImplementedError, reported as 'unsupported'), when
|ours - Flex| > --tol + --flex-rtol * |Flex| anywhere (2e-2 + 2e-2 |Flex| for bf16), or when ours
or Flex misses the fp64 reference on the sampled rows (|err| <= 1e-2 + 1e-2 |ref|); 2 when torch,
triton, FlexAttention or gpu_attention are missing.

    PYTHONPATH=<build>/python python3 bench/sparse_bench.py [--quick] [--json F] [--md F]
"""

import argparse
import datetime
import gc
import importlib
import math
import platform
import sys
import time
import traceback

import bench_common
import sparse_masks as sm

# name, seqlen, rule fields, block sparsity (None: no layout). B, H, D and dtype come from the
# command line (defaults B1 H16 D128 bf16).
CASES = [
    ("window W1024", 16384, dict(causal=True, left=1023, right=0), None),
    ("window W4096", 65536, dict(causal=True, left=4095, right=0), None),
    ("window 4096 + 128 global", 131072,
     dict(causal=False, left=2048, right=2048, global_tokens=128), None),
    ("block-sparse 50%", 16384, dict(causal=False), 0.5),
    ("block-sparse 90%", 16384, dict(causal=False), 0.9),
]
# --quick: one of each kind on shorter sequences (three Flex compilations instead of five).
QUICK_CASES = [
    ("window W1024", 8192, dict(causal=True, left=1023, right=0), None),
    ("window 4096 + 128 global", 16384,
     dict(causal=False, left=2048, right=2048, global_tokens=128), None),
    ("block-sparse 90%", 8192, dict(causal=False), 0.9),
]
# --device cpu: a smoke run of this script without a GPU (our CPU backend, Flex unfused).
SMOKE_CASES = [
    ("window W64", 512, dict(causal=True, left=63, right=0), None),
    ("window 64 + 16 global", 512, dict(causal=False, left=32, right=32, global_tokens=16), None),
    ("block-sparse 50%", 512, dict(causal=False), 0.5),
]


def fail_missing(what, err):
    bench_common.fail_missing("sparse_bench", what, err)


try:
    import torch
except ImportError as e:
    fail_missing("torch", e)
try:
    from torch.nn.attention.flex_attention import flex_attention
except ImportError as e:
    fail_missing("torch.nn.attention.flex_attention (torch >= 2.5)", e)
try:
    import gpu_attention as ga
except ImportError as e:
    fail_missing("gpu_attention (build with GPUATTN_PYTHON=ON, put <build>/python on PYTHONPATH)",
                 e)


def make_timer(warmup, rep, dev):
    return bench_common.do_bench_timer("sparse_bench", warmup, rep, dev, "both sides")


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def compare_outputs(ours, theirs, atol, rtol):
    """(max |ours - theirs|, worst |ours - theirs| / (atol + rtol |theirs|)) over [B, S, H, D]
    tensors, one head at a time in float32 (bounded memory); NaN when either holds a NaN. The
    relative part keeps a one-ulp bf16 difference on a large output (a row that sees few keys)
    from failing the comparison."""
    worst, worst_ratio = 0.0, 0.0
    for h in range(ours.shape[2]):
        a, b = ours[:, :, h].float(), theirs[:, :, h].float()
        d = (a - b).abs()
        m, r = d.max().item(), (d / (atol + rtol * b.abs())).max().item()
        if math.isnan(m) or math.isnan(r):
            return math.nan, math.nan
        worst, worst_ratio = max(worst, m), max(worst_ratio, r)
    return worst, worst_ratio


def reference_rows(q, k, v, rule, rows, heads, scale):
    """fp64 attention of the given rows and heads of batch 0 ([B, S, H, D] inputs), each row over
    the keys the rule gives it (sparse_masks.row_keys): [len(heads), len(rows), D] float64."""
    s = q.shape[1]
    out = torch.empty(len(heads), len(rows), q.shape[3], dtype=torch.float64, device=q.device)
    hkv = k.shape[2]
    group = q.shape[2] // hkv
    for a, h in enumerate(heads):
        for b, r in enumerate(rows):
            keys = torch.as_tensor(sm.row_keys(rule, s, r, h), device=q.device)
            if keys.numel() == 0:  # a row that sees nothing: out 0 (gpu_attention's convention)
                out[a, b] = 0
                continue
            kk = k[0, keys, h // group].double()
            sc = (kk @ q[0, r, h].double()) * scale
            out[a, b] = torch.softmax(sc, 0) @ v[0, keys, h // group].double()
    return out


def check_rows(out, ref, rows, heads, atol, rtol):
    """(max |out - ref|, worst |out - ref| / (atol + rtol |ref|)): passes when the second <= 1."""
    got = out[0][torch.as_tensor(rows, device=out.device)][:, torch.as_tensor(heads,
                                                                             device=out.device)]
    got = got.permute(1, 0, 2).double()
    err = (got - ref).abs()
    bound = atol + rtol * ref.abs()
    return err.max().item(), (err / bound).max().item()


def run_case(case, args, timer, flex, dev, gen):
    name, s, fields, sparsity = case
    b, h, d = args.batch, args.heads, args.head_dim
    dtype = getattr(torch, args.dtype)
    layout = None
    if sparsity is not None:
        nb = math.ceil(s / 128)
        layout = sm.random_block_layout(h, nb, nb, sparsity, seed=args.seed)
    rule = sm.MaskRule(layout=layout, **fields)
    row = dict(case=name, dtype=args.dtype, batch=b, heads=h, seqlen=s, head_dim=d,
               mask=rule.describe(), causal=rule.causal, window_size=[rule.left, rule.right],
               global_tokens=rule.global_tokens, block_sparsity=sparsity,
               sdpa="not expressible by SDPA's fused backends (dense S x S attn_mask only)")

    t0 = time.perf_counter()
    counts = sm.block_counts(rule, s, xp=torch, device=dev)
    visible = b * sm.visible_pairs_from_counts(rule, counts, h)
    block_mask, _ = sm.flex_block_mask(rule, s, h, dev, counts)
    row.update(visible_pairs=visible, visible_fraction=visible / (b * h * s * s),
               flops=sm.attention_flops(visible, d), flex_block_mask_s=time.perf_counter() - t0,
               flex_block_mask=f"{block_mask.sparsity():.1f}% of 128x128 blocks skipped")
    del counts

    q, k, v = (torch.randn(b, s, h, d, device=dev, dtype=dtype, generator=gen) for _ in range(3))
    if args.flex_layout == "bhsd":  # Flex's own contiguous layout: copies of the same values
        qf, kf, vf = (x.transpose(1, 2).contiguous() for x in (q, k, v))
    else:  # [B, H, S, D] views of our [B, S, H, D] memory
        qf, kf, vf = (x.transpose(1, 2) for x in (q, k, v))
    layout_t = None if layout is None else torch.as_tensor(layout, device=dev)
    kwargs = rule.sparse_attn_kwargs(layout_t)

    def ours():
        return ga.sparse_attn_func(q, k, v, **kwargs)

    def theirs():
        return flex(qf, kf, vf, block_mask=block_mask)

    out = None
    try:
        out = ours()
        sync(dev)
    except NotImplementedError as e:
        row["ours_unsupported"] = f"NotImplementedError: {e}"
    except Exception as e:  # reported in the table, and fails the run
        traceback.print_exc()
        row["ours_error"] = f"{type(e).__name__}: {e}"

    t0 = time.perf_counter()
    fo = None
    if args.no_flex:
        row["flex_skipped"] = True
    else:
        try:
            fo = theirs()  # the first call compiles (dynamic=False: once per shape and mask)
            sync(dev)
            row["flex_first_call_s"] = time.perf_counter() - t0
            fo = fo.transpose(1, 2)  # [B, S, H, D] like ours
        except Exception as e:
            traceback.print_exc()
            row["flex_error"] = f"{type(e).__name__}: {str(e)[:300]}"

    scale = 1.0 / math.sqrt(d)
    rows = sm.sample_rows(rule, s, args.ref_rows, seed=args.seed)
    heads = sorted({0, h - 1})
    ref = reference_rows(q, k, v, rule, rows, heads, scale)
    row["ref_rows"] = len(rows) * len(heads)
    if out is not None:
        if fo is not None:
            row["ours_vs_flex"], row["ours_flex_ratio"] = compare_outputs(out, fo, args.tol,
                                                                          args.flex_rtol)
        row["ours_vs_ref"], row["ours_ref_ratio"] = check_rows(out, ref, rows, heads, args.atol,
                                                               args.rtol)
    if fo is not None:
        row["flex_vs_ref"], row["flex_ref_ratio"] = check_rows(fo, ref, rows, heads, args.atol,
                                                               args.rtol)
    del ref, fo, out
    gc.collect()

    if "ours_error" not in row and "ours_unsupported" not in row:
        row["ours_ms"] = timer(ours)
    if "flex_error" not in row and not args.no_flex:
        row["flex_ms"] = timer(theirs)
    for key in ("ours", "flex"):
        if row.get(f"{key}_ms"):
            row[f"{key}_tflops"] = row["flops"] / (row[f"{key}_ms"] * 1e-3) / 1e12
    if row.get("ours_ms") and row.get("flex_ms"):
        row["ours_over_flex"] = row["ours_ms"] / row["flex_ms"]
        row["goal_met"] = row["ours_over_flex"] <= args.goal
    return row


def failures_of(row, tol, flex_rtol):
    why = []
    for key in ("setup_error", "ours_error", "flex_error"):
        if key in row:
            why.append(key)
    if "ours_flex_ratio" in row and not row["ours_flex_ratio"] <= 1.0:  # NaN fails too
        why.append(f"|ours - flex| up to {row['ours_vs_flex']:.3g}: over {tol} + {flex_rtol} "
                   "|flex|")
    for key in ("ours", "flex"):
        r = row.get(f"{key}_ref_ratio")
        if r is not None and not r <= 1.0:
            why.append(f"{key} misses the fp64 reference ({row[f'{key}_vs_ref']:.3g})")
    return why


def f(x, fmt, na="n/a"):
    return format(x, fmt) if isinstance(x, (int, float)) and x is not None else na


def status(row):
    if "setup_error" in row:
        return "setup error"
    if "ours_unsupported" in row:
        return "unsupported"
    if "ours_error" in row:
        return "error"
    return "FAIL" if row.get("failures") else "ok"


def markdown(result):
    lines = [f"### Sparse masks: gpu_attention vs FlexAttention (torch.compile), "
             f"{result['device']}, {result['date']}, commit {result['commit']}", "",
             f"torch {result['torch']}; {result['timer']}; Flex inputs {result['flex_layout']}, "
             f"ours [B, S, H, D]; ours/Flex is ours ms / Flex ms (below 1: ours faster; the "
             f"other tables' ratios are anchor ms / ours ms); goal ours/Flex <= {result['goal']}; "
             f"TFLOP/s count visible "
             f"pairs only; |ours - Flex| <= {result['tolerance']} + {result['flex_rtol']} |Flex|; "
             f"fp64 check of both on sampled rows: |err| <= {result['atol']} + {result['rtol']} "
             f"|ref|. {result['sdpa']}.", "",
             "| case | shape | mask | visible | ours ms | Flex ms | ours/Flex (ms) | goal | "
             "ours TFLOP/s | Flex TFLOP/s | max abs ours-Flex | fp64 check | Flex 1st call s |",
             "|---|---|---|---:|---:|---:|---:|---|---:|---:|---:|---|---:|"]
    for r in result["cases"]:
        if "setup_error" in r:
            lines.append(f"| {r.get('case')} | | | | | | | | | | | setup error: "
                         f"{r['setup_error'][:80]} | |")
            continue
        shape = f"{r['dtype']} B{r['batch']} H{r['heads']} S{r['seqlen']} D{r['head_dim']}"
        goal = "n/a" if "goal_met" not in r else ("yes" if r["goal_met"] else "no")
        check = status(r)
        if "ours_unsupported" in r:
            check = "ours: unsupported (NotImplementedError)"
        lines.append(
            f"| {r['case']} | {shape} | {r['mask']} | {100 * r['visible_fraction']:.2f}% | "
            f"{f(r.get('ours_ms'), '.3f')} | {f(r.get('flex_ms'), '.3f')} | "
            f"{f(r.get('ours_over_flex'), '.2f')} | {goal} | {f(r.get('ours_tflops'), '.1f')} | "
            f"{f(r.get('flex_tflops'), '.1f')} | {f(r.get('ours_vs_flex'), '.2e')} | {check} | "
            f"{f(r.get('flex_first_call_s'), '.1f')} |")
    for r in result["cases"]:
        for key in ("ours_unsupported", "ours_error", "flex_error"):
            if key in r:
                lines.append(f"\n{r['case']}: {key}: {r[key][:300]}")
        if r.get("failures"):
            lines.append(f"\n{r['case']}: FAIL: {'; '.join(r['failures'])}")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--md", help="write the markdown table here")
    ap.add_argument("--quick", action="store_true", help="one case of each kind, shorter sequences")
    ap.add_argument("--device", default="cuda",
                    help="cuda (default), or cpu: a smoke run on small shapes (Flex unfused)")
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16"])
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--flex-layout", choices=["bhsd", "bshd"], default="bhsd",
                    help="bhsd: contiguous [B, H, S, D] copies for Flex (its native layout, as in "
                         "shared/tools/anchors.py); bshd: transposed views of our tensors")
    ap.add_argument("--warmup", type=int, default=25, help="do_bench warmup, ms")
    ap.add_argument("--rep", type=int, default=100, help="do_bench repetition time, ms")
    ap.add_argument("--tol", type=float, default=2e-2,
                    help="|ours - Flex| <= tol + flex-rtol * |Flex| everywhere")
    ap.add_argument("--flex-rtol", type=float, default=2e-2,
                    help="relative part of the ours-vs-Flex bound (bf16 ulp is 2^-8 relative)")
    ap.add_argument("--atol", type=float, default=1e-2, help="fp64 check: absolute part")
    ap.add_argument("--rtol", type=float, default=1e-2, help="fp64 check: relative part")
    ap.add_argument("--ref-rows", type=int, default=64,
                    help="random rows per checked head (heads 0 and H-1) for the fp64 check, "
                         "besides the rows where the mask changes")
    ap.add_argument("--no-flex", action="store_true",
                    help="time ours only (A/B runs of our kernels; no Flex compile or timing)")
    ap.add_argument("--goal", type=float, default=0.7, help="target ours/Flex time ratio")
    ap.add_argument("--seed", type=int, default=20261121)
    ap.add_argument("--cases", metavar="TEXT",
                    help="only the cases whose name holds TEXT (e.g. 'W1024', 'block-sparse'); "
                         "for profiling one case under ncu or nsys")
    args = ap.parse_args()
    dev = torch.device(args.device)

    if dev.type == "cuda":
        if not torch.cuda.is_available():
            print("sparse_bench: no CUDA device visible to torch", file=sys.stderr)
            return 2
        if not ga.cuda_available():
            print("sparse_bench: gpu_attention was built without the CUDA backend (or sees no "
                  "device)", file=sys.stderr)
            return 2
        cases = QUICK_CASES if args.quick else CASES
    else:
        cases = SMOKE_CASES[:1] if args.quick else SMOKE_CASES
        args.heads = min(args.heads, 2)
        args.head_dim = 64 if args.head_dim not in (64, 128) else args.head_dim
    if args.cases is not None:
        picked = [c for c in cases if args.cases in c[0]]
        if not picked:
            print(f"sparse_bench: no case name holds {args.cases!r} (cases: "
                  f"{', '.join(c[0] for c in cases)})", file=sys.stderr)
            return 2
        cases = picked

    timer, timer_name = make_timer(args.warmup, args.rep, dev)
    if dev.type == "cuda":
        # one compiled graph per (shape, mask): raise dynamo's recompile limit above the count
        dyn = importlib.import_module("torch._dynamo").config
        for key in ("recompile_limit", "cache_size_limit"):
            if hasattr(dyn, key):
                setattr(dyn, key, max(getattr(dyn, key), 4 * len(cases)))
        flex = torch.compile(flex_attention, dynamic=False)
        flex_mode = "torch.compile(flex_attention, dynamic=False)"
    else:
        flex = flex_attention
        flex_mode = "flex_attention eager (cpu smoke run)"
    gen = torch.Generator(device=dev).manual_seed(args.seed)

    rows = []
    start = time.perf_counter()
    for case in cases:
        print(f"== {case[0]} S{case[1]} ({time.perf_counter() - start:.0f} s)", flush=True)
        try:
            row = run_case(case, args, timer, flex, dev, gen)
        except Exception as e:  # a case that could not even be set up (e.g. out of memory)
            traceback.print_exc()
            row = {"case": case[0], "seqlen": case[1], "setup_error": f"{type(e).__name__}: {e}"}
        row["failures"] = failures_of(row, args.tol, args.flex_rtol)
        rows.append(row)
        print(f"   ours {f(row.get('ours_ms'), '.3f')} ms, Flex {f(row.get('flex_ms'), '.3f')} ms"
              f", ours/Flex {f(row.get('ours_over_flex'), '.2f')}, |ours-Flex| "
              f"{f(row.get('ours_vs_flex'), '.2e')}: {status(row)}", flush=True)
        gc.collect()
        if dev.type == "cuda":
            torch.cuda.empty_cache()

    failed = [r for r in rows if r["failures"]]
    triton_version = None
    try:
        import triton
        triton_version = triton.__version__
    except ImportError:
        pass
    result = {
        "benchmark": "sparse_bench",
        "device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else
        platform.processor() or "cpu",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": bench_common.git_commit(),
        "torch": torch.__version__,
        "triton": triton_version,
        "cuda": torch.version.cuda if dev.type == "cuda" else None,
        "gpu_attention": ga.__version__,
        "python": platform.python_version(),
        "timer": f"{timer_name} (warmup {args.warmup} ms, rep {args.rep} ms)",
        "flex": flex_mode,
        "flex_block_mask": "BlockMask.from_kv_blocks of exact per-block counts (128x128 blocks; "
                           "full blocks skip the mask_mod), mask_mod of the same rule",
        "flex_layout": "[B, H, S, D] contiguous copies" if args.flex_layout == "bhsd"
        else "[B, H, S, D] views of [B, S, H, D]",
        "sdpa": "torch SDPA not timed: its fused backends (flash, cuDNN) cannot express a window, "
                "global tokens or a block layout",
        "window_semantics": "flash-attn window_size=(left, right): row i sees keys "
                            "[i - left, i + right]; causal=True caps at i; global rows (< G) "
                            "see every key, every row sees the keys < G",
        "tolerance": args.tol, "flex_rtol": args.flex_rtol, "atol": args.atol, "rtol": args.rtol,
        "goal": args.goal,
        "seconds": time.perf_counter() - start,
        "ok": not failed,
        "cases": rows,
    }
    md = markdown(result)
    bench_common.write_outputs(result, md, args.json, args.md)
    print()
    print(md)
    if failed:
        print(f"FAIL: {len(failed)} case(s): " + "; ".join(
            f"{r['case']}: {', '.join(r['failures'])}" for r in failed))
        return 1
    unsupported = [r["case"] for r in rows if "ours_unsupported" in r]
    print("OK" + (f" (ours unsupported on this backend: {', '.join(unsupported)})"
                  if unsupported else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
