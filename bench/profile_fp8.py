"""Runs one FP8 attention call, ours or cuDNN's FP8 SDPA, on bench/fp8_attention.py's inputs,
with only that call inside a CUDA profiler range, for ncu's pipes and stall reasons side by side:

    PYTHONPATH=<build>/python:bench ncu --profile-from-start off -o ours \\
        --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \\
        python3 bench/profile_fp8.py --head-dim 128 --batch 2 --seqlen 8192
    ... the same with --backend cudnn-fp8 (needs nvidia-cudnn-frontend), then
    python3 bench/ncu_pipes.py ours=ours-raw.csv cudnn_fp8=cudnn-raw.csv

Both run once before the range (warm-up, plan build); the range holds one call, so ncu needs no
kernel filter. Ours takes per-head scales and writes 16-bit out; cuDNN's takes one scale a tensor
and writes E4M3 out (bf16 out needs Blackwell), as in fp8_attention.py --cudnn-fp8.
"""
import argparse
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", choices=["ours", "cudnn-fp8"], default="ours")
    ap.add_argument("--head-dim", type=int, choices=(64, 128, 256), default=128)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--heads", type=int, default=None,
                    help="default: 2048 / head dim (fp8_attention.py's grid)")
    ap.add_argument("--seqlen", type=int, default=8192)
    ap.add_argument("--causal", action="store_true")
    args = ap.parse_args()
    for name in ("batch", "seqlen"):
        if getattr(args, name) < 1:
            ap.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    heads = args.heads if args.heads is not None else 2048 // args.head_dim
    if heads < 1:
        ap.error(f"--heads must be at least 1, got {heads}")
    try:
        import torch
        import fp8_attention
    except ImportError as e:
        sys.exit(f"profile_fp8: needs torch, triton and the gpu_attention module on PYTHONPATH ({e})")
    rows, _ = fp8_attention.case_rows(args.batch, heads, args.seqlen, args.head_dim, args.causal,
                                      cudnn_fp8=args.backend == "cudnn-fp8")
    run = rows["fp8" if args.backend == "ours" else "cudnn_fp8"]
    run()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    run()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print(f"profile_fp8: {args.backend} B{args.batch} H{heads} S{args.seqlen} D{args.head_dim}"
          f"{' causal' if args.causal else ''}: one call in the profiler range")


if __name__ == "__main__":
    main()
