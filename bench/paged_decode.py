"""Decode over a paged KV cache (block_table) against the dense cache: ours paged at several page
sizes, ours dense, and torch SDPA's cuDNN and flash backends on the dense cache, in one run.

The pages of every sequence sit in a shuffled pool (a serving cache after many allocations), so
no two consecutive pages of a sequence are neighbours in memory. Every call gets cache_seqlens
(the serving call), checked on a host copy like the table; the rows marked "u" pass
check_indices=False (no host copy: what a CUDA-graph decode step runs). do_bench (L2 flushed)
times the whole call, host side included; TB/s counts the K/V bytes the sequences use.

    PYTHONPATH=build-gpu/python python3 bench/paged_decode.py [--json out.json] [--quick]
"""
import argparse
import json

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

import gpu_attention as ga

CASES = [  # dtype, B, Hq, Hkv, L (keys per sequence), D: DESIGN.md's decode rows
    (torch.bfloat16, 32, 32, 8, 4096, 128),
    (torch.bfloat16, 8, 32, 8, 32768, 128),
    (torch.bfloat16, 1, 32, 8, 131072, 128),
    (torch.bfloat16, 8, 32, 8, 4096, 128),
    (torch.float16, 16, 16, 16, 2048, 64),
]
PAGES = [16, 64, 256]


def paged_copy(k, v, page, gen, shuffled=True):
    """k/v [B, L, H, D] -> pools [pages, page, H, D] in a shuffled (or the dense) order, and the
    table."""
    b, length, h, d = k.shape
    per_seq = -(-length // page)
    order = (torch.randperm(b * per_seq, generator=gen) if shuffled
             else torch.arange(b * per_seq)).to(k.device)
    table = order.view(b, per_seq).to(torch.int32)
    pad = per_seq * page - length
    kp = torch.empty(b * per_seq, page, h, d, device=k.device, dtype=k.dtype)
    vp = torch.empty_like(kp)
    kpad = F.pad(k, (0, 0, 0, 0, 0, pad)).view(b * per_seq, page, h, d)
    vpad = F.pad(v, (0, 0, 0, 0, 0, pad)).view(b * per_seq, page, h, d)
    kp[order] = kpad
    vp[order] = vpad
    return kp, vp, table


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--quick", action="store_true", help="the first two shapes only")
    args = ap.parse_args()
    gen = torch.Generator().manual_seed(0)
    rows = []
    for dtype, b, hq, hkv, length, d in CASES[:2] if args.quick else CASES:
        q = torch.randn(b, 1, hq, d, device="cuda", dtype=dtype)
        k = torch.randn(b, length, hkv, d, device="cuda", dtype=dtype)
        v = torch.randn(b, length, hkv, d, device="cuda", dtype=dtype)
        used = torch.full((b,), length, device="cuda", dtype=torch.int32)
        kv_bytes = 2 * b * hkv * length * d * 2
        qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        times = {}
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            times["cudnn"] = do_bench(
                lambda: F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True),
                warmup=25, rep=100)
            ref = F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True).transpose(1, 2)
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            times["fa2"] = do_bench(
                lambda: F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True),
                warmup=25, rep=100)
        times["ours dense"] = do_bench(lambda: ga.flash_attn_with_kvcache(q, k, v), warmup=25,
                                       rep=100)
        times["ours dense+seqlens"] = do_bench(
            lambda: ga.flash_attn_with_kvcache(q, k, v, cache_seqlens=used), warmup=25, rep=100)
        times["ours dense+seqlens u"] = do_bench(
            lambda: ga.flash_attn_with_kvcache(q, k, v, cache_seqlens=used, check_indices=False),
            warmup=25, rep=100)
        diffs = {}
        for page in PAGES:
            kp, vp, table = paged_copy(k, v, page, gen)
            name = f"ours page {page}"
            times[name] = do_bench(
                lambda: ga.flash_attn_with_kvcache(q, kp, vp, cache_seqlens=used,
                                                   block_table=table), warmup=25, rep=100)
            out = ga.flash_attn_with_kvcache(q, kp, vp, cache_seqlens=used, block_table=table)
            diffs[name] = ((out.float() - ref.float()).norm() / ref.float().norm()).item()
            times[name + " u"] = do_bench(
                lambda: ga.flash_attn_with_kvcache(q, kp, vp, cache_seqlens=used,
                                                   block_table=table, check_indices=False),
                warmup=25, rep=100)
            del kp, vp
        # Page 16 with the pages in order: what the scattered pool itself costs.
        kp, vp, table = paged_copy(k, v, 16, gen, shuffled=False)
        times["ours page 16 in order u"] = do_bench(
            lambda: ga.flash_attn_with_kvcache(q, kp, vp, cache_seqlens=used, block_table=table,
                                               check_indices=False), warmup=25, rep=100)
        del kp, vp
        row = dict(dtype=str(dtype).split(".")[-1], batch=b, hq=hq, hkv=hkv, seqlen_k=length,
                   head_dim=d, us={n: t * 1e3 for n, t in times.items()},
                   tbs={n: kv_bytes / (t * 1e-3) / 1e12 for n, t in times.items()},
                   rel_diff_vs_cudnn=diffs)
        rows.append(row)
        print(f"{row['dtype']} B{b} H{hq}/{hkv} L{length} D{d} "
              f"({kv_bytes / 2**20:.0f} MiB of K/V):", flush=True)
        for n, t in times.items():
            print(f"  {n:20} {t * 1e3:8.1f} us  {kv_bytes / (t * 1e-3) / 1e12:5.2f} TB/s  "
                  f"cuDNN/this {times['cudnn'] / t:5.2f}"
                  + (f"  rel diff {diffs[n]:.1e}" if n in diffs else ""), flush=True)
        del q, k, v, qt, kt, vt, ref
        torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
