"""s30: ours (and, with --anchors, torch SDPA cuDNN) on decode shapes, triton do_bench (L2
flushed, median), `--repeats` rounds with the shapes in turn; one line a shape. The build and its
GPUATTN_DIAG_* variables are the process's: run it once per variant, the variants in turn.

    PYTHONPATH=<build>/python python3 decode_ab.py LABEL [--anchors] [--repeats N] [--json F]
"""
import argparse
import json
import statistics

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

import gpu_attention as ga

SHAPES = [  # dtype, B, Hq, Hkv, Sk, D
    ("bfloat16", 1, 32, 8, 4096, 128),
    ("float16", 4, 32, 8, 1024, 128),
    ("float16", 4, 16, 1, 8192, 64),
    ("bfloat16", 8, 32, 8, 4096, 128),
    ("float16", 1, 32, 8, 32768, 128),
    ("bfloat16", 32, 32, 8, 2048, 128),
    ("bfloat16", 16, 32, 8, 8192, 64),
    ("bfloat16", 64, 32, 32, 512, 128),
    ("float16", 1, 8, 8, 131072, 256),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("label")
    ap.add_argument("--anchors", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json")
    a = ap.parse_args()
    torch.manual_seed(0)
    calls = []
    for dt, b, hq, hkv, sk, d in SHAPES:
        dtype = getattr(torch, dt)
        q = torch.randn(b, 1, hq, d, device="cuda", dtype=dtype)
        k = torch.randn(b, sk, hkv, d, device="cuda", dtype=dtype)
        v = torch.randn_like(k)
        name = f"{dt[:4]} B{b} H{hq}/{hkv} Sk{sk} D{d}"
        out = ga.flash_attn_func(q, k, v)
        qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            ref = F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=hq != hkv).transpose(1, 2)
        err = ((out.float() - ref.float()).norm() / ref.float().norm()).item()
        assert err < 1e-2, (name, err)
        fns = {"ours": lambda q=q, k=k, v=v: ga.flash_attn_func(q, k, v)}
        if a.anchors:
            def cudnn(qt=qt, kt=kt, vt=vt, g=hq != hkv):
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=g)
            fns["cudnn"] = cudnn
        calls.append((name, fns))
    times = {name: {k: [] for k in fns} for name, fns in calls}
    for _ in range(a.repeats):
        for name, fns in calls:
            for key, fn in fns.items():
                times[name][key].append(1e3 * do_bench(fn, warmup=25, rep=100))
    res = {}
    for name, _ in calls:
        res[name] = {k: statistics.median(v) for k, v in times[name].items()}
        extra = f"  cudnn {res[name]['cudnn']:7.2f} us" if "cudnn" in res[name] else ""
        print(f"{a.label:10s} {name:32s} ours {res[name]['ours']:7.2f} us{extra}")
    if a.json:
        json.dump({"label": a.label, "times": times, "median": res}, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
