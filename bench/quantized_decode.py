"""Decode over a quantized KV cache (FP8 E4M3 and int8, a scale per KV head) against a 16-bit one:
ours on the 8-bit cache (dense, and paged with the pages shuffled), ours on the bf16 cache, and
torch SDPA's cuDNN and flash backends on the bf16 cache, in one run, on DESIGN.md's decode rows.

The 8-bit caches are the bf16 cache quantized by gpu_attention's own append (scale = the head's
absolute maximum / 448 for E4M3, / 127 for int8). Every call gets cache_seqlens (the serving call)
with check_indices=False, as a CUDA-graph decode step runs; do_bench (L2 flushed) times the whole
call, host side included. TB/s counts the bytes of K/V each call reads (1 byte an element for the
8-bit caches). "rel err" is ||out - out_bf16_cudnn|| / ||out_bf16_cudnn||: the quantization's
error, not a kernel's.

    PYTHONPATH=build-gpu/python python3 bench/quantized_decode.py [--json out.json] [--quick]
"""
import argparse
import json

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

import gpu_attention as ga
from paged_decode import paged_copy

CASES = [  # B, Hq, Hkv, L (keys per sequence), D: DESIGN.md's decode rows, bf16
    (32, 32, 8, 4096, 128),
    (8, 32, 8, 32768, 128),
    (1, 32, 8, 131072, 128),
    (8, 32, 8, 4096, 128),
    (16, 16, 16, 2048, 64),
]


def bench(fn):
    return do_bench(fn, warmup=25, rep=100)


def quantized(k, v, used, kind):
    """k/v [B, L, H, D] bf16 -> an 8-bit cache written by ga's append, and its scales."""
    top = 448.0 if kind == "e4m3" else 127.0
    ks = (k.float().abs().amax(dim=(0, 1, 3)) / top).clamp_min(1e-8)
    vs = (v.float().abs().amax(dim=(0, 1, 3)) / top).clamp_min(1e-8)
    dtype = torch.float8_e4m3fn if kind == "e4m3" else torch.int8
    kq = torch.empty(k.shape, device=k.device, dtype=dtype)
    vq = torch.empty_like(kq)
    zero = torch.zeros_like(used)
    q1 = torch.zeros(k.shape[0], 1, k.shape[2], k.shape[3], device=k.device, dtype=k.dtype)
    # Appending the whole cache at position 0 (the returned attention is discarded).
    ga.flash_attn_with_kvcache(q1, kq, vq, k=k, v=v, cache_seqlens=zero, k_scale=ks, v_scale=vs)
    return kq, vq, ks, vs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--quick", action="store_true", help="the first two shapes only")
    args = ap.parse_args()
    gen = torch.Generator().manual_seed(0)
    rows = []
    for b, hq, hkv, length, d in CASES[:2] if args.quick else CASES:
        q = torch.randn(b, 1, hq, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, length, hkv, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(b, length, hkv, d, device="cuda", dtype=torch.bfloat16)
        used = torch.full((b,), length, device="cuda", dtype=torch.int32)
        elems = 2 * b * hkv * length * d
        qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        times, nbytes, errs = {}, {}, {}
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            times["cudnn bf16"] = bench(
                lambda: F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True))
            ref = F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True).transpose(1, 2)
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            times["fa2 bf16"] = bench(
                lambda: F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True))
        times["ours bf16"] = bench(lambda: ga.flash_attn_with_kvcache(
            q, k, v, cache_seqlens=used, check_indices=False))
        for n in times:
            nbytes[n] = 2 * elems
        for kind in ("e4m3", "int8"):
            kq, vq, ks, vs = quantized(k, v, used, kind)
            name = f"ours {kind}"
            times[name] = bench(lambda: ga.flash_attn_with_kvcache(
                q, kq, vq, cache_seqlens=used, check_indices=False, k_scale=ks, v_scale=vs))
            out = ga.flash_attn_with_kvcache(q, kq, vq, cache_seqlens=used, k_scale=ks,
                                             v_scale=vs)
            errs[name] = ((out.float() - ref.float()).norm() / ref.float().norm()).item()
            nbytes[name] = elems
            if kind == "e4m3":
                kp, vp, table = paged_copy(kq.view(torch.uint8), vq.view(torch.uint8), 16, gen)
                kp, vp = kp.view(torch.float8_e4m3fn), vp.view(torch.float8_e4m3fn)
                pname = "ours e4m3 page 16"
                times[pname] = bench(lambda: ga.flash_attn_with_kvcache(
                    q, kp, vp, cache_seqlens=used, block_table=table, check_indices=False,
                    k_scale=ks, v_scale=vs))
                out = ga.flash_attn_with_kvcache(q, kp, vp, cache_seqlens=used,
                                                 block_table=table, k_scale=ks, v_scale=vs)
                errs[pname] = ((out.float() - ref.float()).norm() / ref.float().norm()).item()
                nbytes[pname] = elems
                del kp, vp
            del kq, vq
        row = dict(dtype="bfloat16", batch=b, hq=hq, hkv=hkv, seqlen_k=length, head_dim=d,
                   us={n: t * 1e3 for n, t in times.items()},
                   tbs={n: nbytes[n] / (t * 1e-3) / 1e12 for n, t in times.items()},
                   cudnn_over_this={n: times["cudnn bf16"] / t for n, t in times.items()},
                   rel_err_vs_cudnn_bf16=errs)
        rows.append(row)
        print(f"bf16 B{b} H{hq}/{hkv} L{length} D{d} ({2 * elems / 2**20:.0f} MiB of bf16 K/V):",
              flush=True)
        for n, t in times.items():
            print(f"  {n:18} {t * 1e3:8.1f} us  {nbytes[n] / (t * 1e-3) / 1e12:5.2f} TB/s  "
                  f"cuDNN/this {times['cudnn bf16'] / t:5.2f}"
                  + (f"  rel err {errs[n]:.1e}" if n in errs else ""), flush=True)
        del q, k, v, qt, kt, vt, ref
        torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
