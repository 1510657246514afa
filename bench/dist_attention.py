#!/usr/bin/env python3
"""Sequence-parallel attention over every GPU (`gpuattn dist`) against one GPU's torch SDPA.

For each whole-sequence length: torch SDPA with the cuDNN and flash backends on GPU 0 (the whole
sequence, the same dtype, heads and causal flag), then `gpuattn dist --json` (ours on one GPU, and
ring / all-gather over every GPU in zigzag and contiguous splits, each checked against ours on one
GPU). Prints one table with each run's time and its speedup over cuDNN on one GPU, and writes JSON
and markdown with device, date and commit.

    python3 bench/dist_attention.py --gpuattn build/tools/gpuattn --out bench/results/X/dist
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

import bench_common

try:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
except ImportError as err:  # pragma: no cover
    bench_common.fail_missing("dist_attention.py", "torch", err)


def sdpa_ms(backend, s, heads, kv_heads, dim, dtype, causal, rep):
    """Median ms of torch SDPA over the whole sequence on GPU 0 (CUDA events)."""
    dev = torch.device("cuda:0")
    g = torch.Generator(device=dev).manual_seed(0)
    q = torch.randn(1, heads, s, dim, device=dev, dtype=dtype, generator=g)
    k = torch.randn(1, kv_heads, s, dim, device=dev, dtype=dtype, generator=g)
    v = torch.randn(1, kv_heads, s, dim, device=dev, dtype=dtype, generator=g)
    if kv_heads != heads:  # SDPA backends take equal heads: the expanded K/V (a view)
        k = k.repeat_interleave(heads // kv_heads, dim=1)
        v = v.repeat_interleave(heads // kv_heads, dim=1)
    try:
        with sdpa_kernel(backend):
            F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            torch.cuda.synchronize()
            times = []
            for _ in range(rep):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                b.record()
                b.synchronize()
                times.append(a.elapsed_time(b))
        return bench_common.median(times)
    except RuntimeError as e:  # a backend that does not take the shape
        print(f"dist_attention.py: {backend} at S={s}: {e}", file=sys.stderr)
        return None
    finally:
        del q, k, v
        torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpuattn", default="build/tools/gpuattn", help="the gpuattn binary")
    ap.add_argument("--seq", default="16384,32768,65536,131072")
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=0, help="default: --heads")
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--dtype", choices=["f16", "bf16"], default="bf16")
    ap.add_argument("--full", action="store_true", help="non-causal (default causal)")
    ap.add_argument("--transport", default="nccl")
    ap.add_argument("--rep", type=int, default=5)
    ap.add_argument("--out", default=None, help="path prefix for .json and .md")
    args = ap.parse_args()
    kv_heads = args.kv_heads or args.heads
    dtype = torch.float16 if args.dtype == "f16" else torch.bfloat16
    causal = not args.full
    seqs = [int(s) for s in args.seq.split(",")]

    anchors = {}
    for s in seqs:
        anchors[s] = {name: sdpa_ms(b, s, args.heads, kv_heads, args.dim, dtype, causal, args.rep)
                      for name, b in (("cudnn", SDPBackend.CUDNN_ATTENTION),
                                      ("flash", SDPBackend.FLASH_ATTENTION))}

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "dist.json")
        cmd = [args.gpuattn, "dist", "--device", "cuda", "--seq", args.seq, "--heads",
               str(args.heads), "--kv-heads", str(kv_heads), "--dim", str(args.dim), "--dtype",
               args.dtype, "--transport", args.transport, "--rep", str(args.rep), "--json", path]
        if args.full:
            cmd.append("--full")
        print(" ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
        with open(path) as fh:
            ours = json.load(fh)

    rows = []
    for r in ours["rows"]:
        a = anchors[r["seq"]]
        rows.append(dict(r, cudnn_ms=a["cudnn"], flash_ms=a["flash"],
                         vs_cudnn=(a["cudnn"] / r["ms"]) if a["cudnn"] else None,
                         vs_flash=(a["flash"] / r["ms"]) if a["flash"] else None))

    def f(v, fmt):
        return "n/a" if v is None else format(v, fmt)

    head = ("| S | run | layout | ms | TFLOP/s | cuDNN 1 GPU ms | speedup vs cuDNN 1 GPU "
            "| vs flash 1 GPU | vs ours 1 GPU | rel diff vs ours 1 GPU |")
    lines = [head, "|" + "---|" * 10]
    for r in rows:
        run = "1 GPU" if r["ranks"] == 1 else f"{r['ranks']} GPUs {r['strategy']}"
        lines.append(f"| {r['seq']} | {run} | {r.get('layout', '-')} | {r['ms']:.3f} "
                     f"| {r['tflops']:.1f} | {f(r['cudnn_ms'], '.3f')} | {f(r['vs_cudnn'], '.2f')} "
                     f"| {f(r['vs_flash'], '.2f')} | {f(r.get('speedup'), '.2f')} "
                     f"| {f(r.get('rel_diff_vs_one_rank'), '.1e')} |")
    md = (f"# gpuattn dist vs torch SDPA on one GPU\n\n{ours['device']} x {ours['ranks']} "
          f"({ours['transport']}), {ours['dtype']}, Hq {args.heads} Hkv {kv_heads} D {args.dim}, "
          f"{'causal' if causal else 'non-causal'}; {datetime.date.today().isoformat()}, commit "
          f"{bench_common.git_commit()}\n\n" + "\n".join(lines) + "\n")
    print(md)
    result = {"device": ours["device"], "ranks": ours["ranks"], "transport": ours["transport"],
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
              "commit": bench_common.git_commit(), "torch": torch.__version__, "rows": rows}
    if args.out:
        bench_common.write_outputs(result, md, args.out + ".json", args.out + ".md")


if __name__ == "__main__":
    main()
