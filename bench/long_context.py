#!/usr/bin/env python3
"""Long-context sparse attention through gpu_attention.sparse_attn_func on one GPU: peak memory,
an fp64 check on sampled rows, and the time.

B1 H16 D128 bf16 at S = 131072 and 524288 (--seqlens), mask (--mask):
  causal      (default) causal=True, window_size=(4096, 0) -- each row sees itself and the 4096
              keys before it -- plus 128 global tokens: every row also sees keys 0..127 (attention
              sinks); rows < 128 are global too, but causal caps them at their own position.
  longformer  causal=False, window_size=(2048, 2048) plus 128 global tokens (rows < 128 see all S
              keys, every row sees keys < 128).

Memory (the goal: the library allocates nothing but the output, so peak <= 1.1 x bytes(Q, K, V, O)):
before anything is allocated the script records torch.cuda.mem_get_info() and resets torch's peak
statistics; it allocates q, k, v in place (normal_, no temporaries), calls sparse_attn_func (which
allocates out itself: that is O), and reports
  - torch peak: torch.cuda.max_memory_allocated() above the starting point, / bytes(QKVO);
  - driver peak: the largest drop of mem_get_info()'s free memory seen by a thread polling it
    during the call (and after it), which catches allocations outside torch's allocator
    (cudaMalloc inside the library), / bytes(QKVO).
A small call with the same mask runs first, so that loading the kernels is not counted.

Then the time (CUDA events, median of --reps calls after the measured one) with useful TFLOP/s
(4 * D * visible (query, key) pairs, counted exactly per row), and the fp64 check: --ref-rows
random rows of two heads plus the rows where the mask changes (first, last, global edge, window
edge), each computed in float64 on the GPU over the keys the mask rule gives it; pass when
|ours - ref| <= 1e-2 + 1e-2 |ref| everywhere and the whole output is finite.

Exits 1 on a failed check or a memory ratio above --max-ratio (1.1), 2 when torch or gpu_attention
are missing or there is no GPU.

    PYTHONPATH=<build>/python python3 bench/long_context.py [--quick] [--json F] [--md F]
"""

import argparse
import datetime
import gc
import math
import platform
import sys
import threading
import time
import traceback

import numpy as np

import bench_common
import sparse_masks as sm


def fail_missing(what, err):
    bench_common.fail_missing("long_context", what, err)


try:
    import torch
except ImportError as e:
    fail_missing("torch", e)
try:
    import gpu_attention as ga
except ImportError as e:
    fail_missing("gpu_attention (build with GPUATTN_PYTHON=ON, put <build>/python on PYTHONPATH)",
                 e)

MASKS = {
    "causal": lambda w, g: sm.MaskRule(causal=True, left=w, right=0, global_tokens=g),
    "longformer": lambda w, g: sm.MaskRule(causal=False, left=w // 2, right=w // 2,
                                           global_tokens=g),
}
GIB = float(1 << 30)


class FreeMemoryPoller:
    """Polls torch.cuda.mem_get_info() on a thread and keeps the smallest free memory seen: the
    driver-level peak of whatever runs meanwhile (torch's allocator or not)."""

    def __init__(self, dev, interval_s=2e-4):
        self.dev, self.interval_s = dev, interval_s
        self.min_free = torch.cuda.mem_get_info(dev)[0]
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.min_free = min(self.min_free, torch.cuda.mem_get_info(self.dev)[0])
            self.samples += 1
            time.sleep(self.interval_s)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.min_free = min(self.min_free, torch.cuda.mem_get_info(self.dev)[0])


def reference_rows(q, k, v, rule, rows, heads, scale):
    """fp64 attention of `rows` of `heads` (batch 0, [B, S, H, D] inputs), each row over the keys
    the rule gives it: [len(heads), len(rows), D] float64."""
    s = q.shape[1]
    out = torch.empty(len(heads), len(rows), q.shape[3], dtype=torch.float64, device=q.device)
    for a, h in enumerate(heads):
        for b, r in enumerate(rows):
            keys = torch.as_tensor(sm.row_keys(rule, s, r, h), device=q.device)
            if keys.numel() == 0:
                out[a, b] = 0
                continue
            sc = (k[0, keys, h].double() @ q[0, r, h].double()) * scale
            out[a, b] = torch.softmax(sc, 0) @ v[0, keys, h].double()
    return out


def measure_memory(row, kwargs, args, dev, gen, dtype, qkvo):
    """Allocates q, k, v, makes the measured call and records the peaks in `row`; nothing of ours
    is allocated before this point. Returns (q, k, v, out)."""
    b, s, h, d = row["batch"], row["seqlen"], row["heads"], row["head_dim"]
    gc.collect()
    torch.cuda.synchronize(dev)
    torch.cuda.empty_cache()
    free0, total = torch.cuda.mem_get_info(dev)
    torch.cuda.reset_peak_memory_stats(dev)
    alloc0 = torch.cuda.memory_allocated(dev)
    reserved0 = torch.cuda.memory_reserved(dev)
    q, k, v = (torch.empty(b, s, h, d, dtype=dtype, device=dev).normal_(generator=gen)
               for _ in range(3))
    torch.cuda.synchronize(dev)
    with FreeMemoryPoller(dev) as poller:
        out = ga.sparse_attn_func(q, k, v, **kwargs)
        torch.cuda.synchronize(dev)
    peak_alloc = torch.cuda.max_memory_allocated(dev) - alloc0
    peak_reserved = torch.cuda.max_memory_reserved(dev) - reserved0
    driver_peak = free0 - poller.min_free
    driver_after = free0 - torch.cuda.mem_get_info(dev)[0]
    reserved_after = torch.cuda.memory_reserved(dev) - reserved0
    row.update(
        gpu_total_bytes=total, torch_peak_allocated=peak_alloc, torch_peak_reserved=peak_reserved,
        driver_peak=driver_peak, driver_after=driver_after,
        outside_torch_after=driver_after - reserved_after, poll_samples=poller.samples,
        torch_ratio=peak_alloc / qkvo, driver_ratio=driver_peak / qkvo)
    row["memory_ok"] = row["torch_ratio"] <= args.max_ratio and \
        row["driver_ratio"] <= args.max_ratio
    return q, k, v, out


def run_seqlen(s, rule, args, dev, gen):
    b, h, d = 1, args.heads, args.head_dim
    dtype = getattr(torch, args.dtype)
    elem = torch.tensor([], dtype=dtype).element_size()
    tensor_bytes = b * s * h * d * elem
    qkvo = 4 * tensor_bytes
    kwargs = rule.sparse_attn_kwargs()
    row = dict(dtype=args.dtype, batch=b, heads=h, seqlen=s, head_dim=d, mask=rule.describe(),
               causal=rule.causal, window_size=[rule.left, rule.right],
               global_tokens=rule.global_tokens, bytes_qkvo=qkvo)

    if dev.type == "cpu":  # smoke run: no memory figures, perf_counter times
        q, k, v = (torch.randn(b, s, h, d, dtype=dtype, generator=gen) for _ in range(3))
        out = ga.sparse_attn_func(q, k, v, **kwargs)
        row["memory_ok"] = True
        times = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            ga.sparse_attn_func(q, k, v, **kwargs)
            times.append((time.perf_counter() - t0) * 1e3)
    else:
        q, k, v, out = measure_memory(row, kwargs, args, dev, gen, dtype, qkvo)
        times = []
        for _ in range(args.reps):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            ga.sparse_attn_func(q, k, v, **kwargs)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    visible = h * int(sm.row_counts(rule, s, np.arange(s, dtype=np.int64)).sum())
    row.update(ms=float(np.median(times)), ms_min=float(min(times)), reps=args.reps,
               visible_pairs=visible, visible_fraction=visible / (h * s * s),
               flops=sm.attention_flops(visible, d))
    row["tflops"] = row["flops"] / (row["ms"] * 1e-3) / 1e12

    # ---- fp64 check on sampled rows ----
    rows = sm.sample_rows(rule, s, args.ref_rows, seed=args.seed + s)
    heads = sorted({0, h - 1})
    ref = reference_rows(q, k, v, rule, rows, heads, 1.0 / math.sqrt(d))
    got = out[0][torch.as_tensor(rows, device=dev)][:, torch.as_tensor(heads, device=dev)]
    err = (got.permute(1, 0, 2).double() - ref).abs()
    ratio = (err / (args.atol + args.rtol * ref.abs())).max().item()
    finite = all(bool(torch.isfinite(out[0, :, hh]).all()) for hh in range(h))
    row.update(ref_rows=len(rows) * len(heads), max_abs_err=err.max().item(), err_ratio=ratio,
               output_finite=finite)
    row["correct"] = finite and ratio <= 1.0  # NaN fails
    del q, k, v, out, ref, got, err
    return row


def markdown(result):
    lines = [f"### Long context: gpu_attention.sparse_attn_func, {result['device']}, "
             f"{result['date']}, commit {result['commit']}", "",
             f"{result['mask']}; {result['timer']}; peak = torch max_memory_allocated and the "
             "driver's free-memory drop (polled during the call) from before q/k/v were "
             f"allocated; goal peak <= {result['max_ratio']} x bytes(Q, K, V, O); fp64 check on "
             f"sampled rows: |err| <= {result['atol']} + {result['rtol']} |ref|.", "",
             "| shape | QKVO GiB | torch peak GiB | ratio | driver peak GiB | ratio | memory | "
             "ms | TFLOP/s | visible | rows checked | max abs err | check |",
             "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---|"]
    for r in result["cases"]:
        shape = f"{r.get('dtype')} B{r.get('batch')} H{r.get('heads')} S{r.get('seqlen')} " \
                f"D{r.get('head_dim')}"
        if "error" in r:
            lines.append(f"| {shape} | | | | | | | | | | | | error: {r['error'][:120]} |")
            continue
        if "torch_ratio" in r:
            mem = (f"{r['torch_peak_allocated'] / GIB:.3f} | {r['torch_ratio']:.3f} | "
                   f"{r['driver_peak'] / GIB:.3f} | {r['driver_ratio']:.3f} | "
                   f"{'ok' if r['memory_ok'] else 'OVER'}")
        else:
            mem = "n/a | n/a | n/a | n/a | not measured"
        lines.append(
            f"| {shape} | {r['bytes_qkvo'] / GIB:.2f} | {mem} | {r['ms']:.2f} | "
            f"{r['tflops']:.1f} | {100 * r['visible_fraction']:.3f}% | {r['ref_rows']} | "
            f"{r['max_abs_err']:.2e} | {'ok' if r['correct'] else 'FAIL'} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--md", help="write the markdown table here")
    ap.add_argument("--quick", action="store_true", help="S = 32768 and 131072 only")
    ap.add_argument("--seqlens", type=int, nargs="+", default=[131072, 524288])
    ap.add_argument("--mask", choices=sorted(MASKS), default="causal")
    ap.add_argument("--window", type=int, default=4096,
                    help="causal: window_size=(W, 0); longformer: (W/2, W/2)")
    ap.add_argument("--global-tokens", type=int, default=128)
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16"])
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--reps", type=int, default=5, help="timed calls after the measured one")
    ap.add_argument("--ref-rows", type=int, default=64,
                    help="random rows per checked head (heads 0 and H-1)")
    ap.add_argument("--atol", type=float, default=1e-2)
    ap.add_argument("--rtol", type=float, default=1e-2)
    ap.add_argument("--max-ratio", type=float, default=1.1,
                    help="peak memory / bytes(Q, K, V, O) allowed")
    ap.add_argument("--seed", type=int, default=20261121)
    ap.add_argument("--device", default="cuda",
                    help="cuda (default), or cpu: a smoke run of the script (S 2048 and 4096, "
                         "window 256, 16 globals, H2 D64; no memory figures)")
    args = ap.parse_args()
    if args.quick:
        args.seqlens = [32768, 131072]
    dev = torch.device(args.device)
    if dev.type == "cpu":
        args.seqlens, args.window, args.global_tokens = [2048, 4096], 256, 16
        args.heads, args.head_dim, args.reps, args.ref_rows = 2, 64, 1, 8
    elif not torch.cuda.is_available():
        print("long_context: no CUDA device visible to torch", file=sys.stderr)
        return 2
    elif not ga.cuda_available():
        print("long_context: gpu_attention was built without the CUDA backend (or sees no device)",
              file=sys.stderr)
        return 2
    else:
        dev = torch.device("cuda", torch.cuda.current_device())
    rule = MASKS[args.mask](args.window, args.global_tokens)
    gen = torch.Generator(device=dev).manual_seed(args.seed)

    if dev.type == "cuda":
        # Load the kernels (lazy module loading) on a small call with the same mask, outside the
        # measurement.
        dtype = getattr(torch, args.dtype)
        warm = [torch.randn(1, 2048, args.heads, args.head_dim, dtype=dtype, device=dev)
                for _ in range(3)]
        ga.sparse_attn_func(*warm, **rule.sparse_attn_kwargs())
        torch.cuda.synchronize(dev)
        del warm

    rows = []
    start = time.perf_counter()
    for s in args.seqlens:
        print(f"== S{s} ({time.perf_counter() - start:.0f} s)", flush=True)
        try:
            row = run_seqlen(s, rule, args, dev, gen)
            mem = (f"peak torch {row['torch_ratio']:.3f}x / driver {row['driver_ratio']:.3f}x "
                   "QKVO, " if "torch_ratio" in row else "")
            print(f"   {mem}{row['ms']:.2f} ms, {row['tflops']:.1f} TFLOP/s, max abs err "
                  f"{row['max_abs_err']:.2e}", flush=True)
        except Exception as e:  # out of memory, a library error: reported, and fails the run
            traceback.print_exc()
            row = dict(dtype=args.dtype, batch=1, heads=args.heads, seqlen=s,
                       head_dim=args.head_dim, error=f"{type(e).__name__}: {e}")
        rows.append(row)
        gc.collect()
        if dev.type == "cuda":
            torch.cuda.empty_cache()

    failed = [r for r in rows if "error" in r or not (r["memory_ok"] and r["correct"])]
    result = {
        "benchmark": "long_context",
        "device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else
        platform.processor() or "cpu",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": bench_common.git_commit(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda if dev.type == "cuda" else None,
        "gpu_attention": ga.__version__,
        "python": platform.python_version(),
        "mask": f"{args.mask}: {rule.describe()}",
        "timer": f"{'CUDA events' if dev.type == 'cuda' else 'perf_counter'}, median of "
                 f"{args.reps} calls after the measured one",
        "atol": args.atol, "rtol": args.rtol, "max_ratio": args.max_ratio,
        "seconds": time.perf_counter() - start,
        "ok": not failed,
        "cases": rows,
    }
    md = markdown(result)
    bench_common.write_outputs(result, md, args.json, args.md)
    print()
    print(md)
    if failed:
        print(f"FAIL: {len(failed)} sequence length(s): memory over {args.max_ratio}x QKVO, a "
              "failed fp64 check or an error")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
