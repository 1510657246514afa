"""Decode (one query row) with K/V in bshd against bhsd memory, ours and torch SDPA's cuDNN backend.

In bshd a KV head's consecutive keys lie hkv * d * 2 bytes apart (2 KB at 8 heads of 128), in bhsd
d * 2 bytes apart. Both go through the same calls (ours takes bhsd as a strided [B, S, H, D] view,
zero-copy; SDPA takes [B, H, S, D] views of either). If the bshd reads are what caps every decode
kernel's bandwidth, bhsd runs faster for all of them.

    PYTHONPATH=build-gpu/python python3 bench/decode_layout_probe.py [--json out.json]
"""
import argparse
import json

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

import gpu_attention as ga

CASES = [  # dtype, B, Hq, Hkv, Sk, D
    (torch.bfloat16, 8, 32, 8, 4096, 128),
    (torch.float16, 1, 32, 8, 32768, 128),
    (torch.bfloat16, 16, 32, 8, 8192, 64),
    (torch.float16, 1, 8, 8, 131072, 256),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    rows = []
    for dtype, b, hq, hkv, sk, d in CASES:
        q = torch.randn(b, 1, hq, d, device="cuda", dtype=dtype)
        kv_bytes = 2 * b * hkv * sk * d * 2
        for layout in ("bshd", "bhsd"):
            if layout == "bshd":
                k = torch.randn(b, sk, hkv, d, device="cuda", dtype=dtype)
                v = torch.randn(b, sk, hkv, d, device="cuda", dtype=dtype)
            else:  # [B, H, S, D] memory seen as [B, S, H, D]
                k = torch.randn(b, hkv, sk, d, device="cuda", dtype=dtype).transpose(1, 2)
                v = torch.randn(b, hkv, sk, d, device="cuda", dtype=dtype).transpose(1, 2)
            ours = do_bench(lambda: ga.flash_attn_func(q, k, v), warmup=25, rep=100)
            qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                cudnn = do_bench(
                    lambda: F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True),
                    warmup=25, rep=100)
                ref = F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True)
            out = ga.flash_attn_func(q, k, v).transpose(1, 2).float()
            diff = ((out - ref.float()).norm() / ref.float().norm()).item()
            row = dict(dtype=str(dtype).split(".")[-1], batch=b, hq=hq, hkv=hkv, seqlen_k=sk,
                       head_dim=d, layout=layout, ours_us=ours * 1e3, cudnn_us=cudnn * 1e3,
                       ours_tbs=kv_bytes / (ours * 1e-3) / 1e12,
                       cudnn_tbs=kv_bytes / (cudnn * 1e-3) / 1e12, rel_diff=diff)
            rows.append(row)
            print(f"{row['dtype']:9} B{b} H{hq}/{hkv} Sk{sk} D{d} {layout}: "
                  f"ours {row['ours_us']:7.1f} us ({row['ours_tbs']:.2f} TB/s)  "
                  f"cuDNN {row['cudnn_us']:7.1f} us ({row['cudnn_tbs']:.2f} TB/s)  "
                  f"cuDNN/ours {cudnn / ours:.2f}  rel diff {diff:.1e}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
