"""Runs one attention call of a named case twice (a warm-up, then the call to profile), for
`ncu --launch-skip 1 --launch-count 1 -k regex:fwd_kernel`: the kernels behind the figures of
sparse_bench.py and the dense table, one at a time, on the same inputs those scripts use.

    PYTHONPATH=<build>/python ncu -k regex:fwd_kernel -s 1 -c 1 --section SpeedOfLight \\
        python3 bench/profile_cases.py dense-bf16

Cases: dense-fp16, dense-bf16 (B4 H16 S4096 D128, non-causal), causal-bf16 (the same, causal),
causal-short (fp16 B16 H16 S1024 D128 causal: many short work items), short-d64 (fp16 B1 H16
S1024 D64: one 8-tile work item a CTA, the issue's µs/head shape), dense-d64 (fp16 B4 H32 S4096 D64:
the head-dim-64 tile at steady state), causal-d64-512 and causal-d256-512 (fp16 B32 H32 / H8 S512
causal: the sweep's shortest causal items, 1-4 key tiles each), causal-d64-1024 (fp16 B16 H32 S1024
D64 causal: the sweep's point after it, 1-8 key tiles an item), dense-d128-512 / -1024 / -2048,
causal-d128-512 and dense-d256-512 (the sweep's short non-causal points: 4-16 key tiles an item),
window-1024 (bf16 B1 H16 S16384 D128, causal window (1023, 0)), blocks-50, blocks-90 (bf16 B1 H16
S16384 D128, a random per-head 128 x 128 layout with 50% / 90% of the blocks off, diagonal on).

--alibi adds ALiBi (the paper's slopes, 2^(-8 (h + 1) / H)) to our call (not with a block
layout), for the biased kernel beside the plain one.

--backend cudnn runs torch SDPA's cuDNN backend on the same inputs instead (dense and causal cases
only), for the anchor's kernel side by side with ours:

    ncu -k regex:'sdpa|fmha|flash|cudnn' -s 1 -c 1 --section SpeedOfLight \
        python3 bench/profile_cases.py dense-fp16 --backend cudnn
"""
import argparse
import sys

import numpy as np

import sparse_masks

CASES = {
    "dense-fp16": dict(dtype="float16", b=4, h=16, s=4096),
    "dense-bf16": dict(dtype="bfloat16", b=4, h=16, s=4096),
    "causal-bf16": dict(dtype="bfloat16", b=4, h=16, s=4096, causal=True),
    "causal-short": dict(dtype="float16", b=16, h=16, s=1024, causal=True),
    "short-d64": dict(dtype="float16", b=1, h=16, s=1024, d=64),
    "dense-d64": dict(dtype="float16", b=4, h=32, s=4096, d=64),
    "causal-d64-512": dict(dtype="float16", b=32, h=32, s=512, d=64, causal=True),
    "causal-d64-1024": dict(dtype="float16", b=16, h=32, s=1024, d=64, causal=True),
    "causal-d256-512": dict(dtype="float16", b=32, h=8, s=512, d=256, causal=True),
    "causal-d256-1024": dict(dtype="float16", b=16, h=8, s=1024, d=256, causal=True),
    # the sweep's short head-dim-128 points (FA3's grid: B * S = 16k, H * D = 2048)
    "dense-d128-512": dict(dtype="float16", b=32, h=16, s=512),
    "dense-d128-1024": dict(dtype="float16", b=16, h=16, s=1024),
    "causal-d128-512": dict(dtype="float16", b=32, h=16, s=512, causal=True),
    "dense-d128-2048": dict(dtype="float16", b=8, h=16, s=2048),
    "dense-d256-512": dict(dtype="float16", b=32, h=8, s=512, d=256),
    "window-1024": dict(dtype="bfloat16", b=1, h=16, s=16384, causal=True, window=(1023, 0)),
    "blocks-50": dict(dtype="bfloat16", b=1, h=16, s=16384, sparsity=0.5),
    "blocks-90": dict(dtype="bfloat16", b=1, h=16, s=16384, sparsity=0.9),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("--backend", choices=["ours", "cudnn"], default="ours",
                    help="ours (default) or torch SDPA's cuDNN backend (dense and causal cases)")
    ap.add_argument("--alibi", action="store_true",
                    help="our call with ALiBi slopes 2^(-8 (h + 1) / H) (not block layouts)")
    args = ap.parse_args()
    try:
        import torch
        import gpu_attention
    except ImportError as e:
        sys.exit(f"profile_cases: needs torch and the gpu_attention module on PYTHONPATH ({e})")
    c = CASES[args.case]
    dtype = getattr(torch, c["dtype"])
    gen = torch.Generator(device="cuda").manual_seed(1234)
    shape = (c["b"], c["s"], c["h"], c.get("d", 128))
    q, k, v = (torch.randn(shape, dtype=dtype, device="cuda", generator=gen) for _ in range(3))
    kwargs = dict(causal=c.get("causal", False))
    if "window" in c:
        kwargs["window_size"] = c["window"]
    if "sparsity" in c:
        n = (c["s"] + 127) // 128
        layout = sparse_masks.random_block_layout(c["h"], n, n, c["sparsity"], seed=7)
        kwargs["block_mask"] = torch.from_numpy(np.ascontiguousarray(layout)).to("cuda")
        kwargs["block_size"] = 128
    if args.alibi:
        if "sparsity" in c or args.backend == "cudnn":
            sys.exit(f"profile_cases: --alibi runs our dense, causal and window cases, not "
                     f"{args.case} on {args.backend}")
        kwargs["alibi_slopes"] = torch.tensor(
            [2.0 ** (-8.0 * (i + 1) / c["h"]) for i in range(c["h"])], device="cuda")
    sparse = "sparsity" in c or ("window" in c and not args.alibi)
    if args.backend == "cudnn":
        if sparse:
            sys.exit(f"profile_cases: --backend cudnn runs dense and causal cases, not {args.case}")
        from torch.nn.attention import SDPBackend, sdpa_kernel

        qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))  # SDPA's [B, H, S, D] views
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            for _ in range(2):
                torch.nn.functional.scaled_dot_product_attention(qt, kt, vt,
                                                                 is_causal=kwargs["causal"])
        torch.cuda.synchronize()
        print(f"profile_cases: {args.case} ran twice on cuDNN")
        return
    call = gpu_attention.sparse_attn_func if sparse else gpu_attention.flash_attn_func
    for _ in range(2):
        call(q, k, v, **kwargs)
    torch.cuda.synchronize()
    print(f"profile_cases: {args.case} ran twice")


if __name__ == "__main__":
    main()
