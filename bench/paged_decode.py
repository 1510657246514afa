"""Decode over a paged KV cache (block_table) against the dense cache: ours paged at several page
sizes, ours dense, and torch SDPA's cuDNN and flash backends on the dense cache, in one run.

The pages of every sequence sit in a shuffled pool (a serving cache after many allocations), so
no two consecutive pages of a sequence are neighbours in memory. Every call gets cache_seqlens
(the serving call), checked on a host copy like the table; the rows marked "u" pass
check_indices=False (no host copy: what a CUDA-graph decode step runs). do_bench (L2 flushed)
times the whole call, host side included; TB/s counts the K/V bytes the sequences use.

Every row of a shape is timed once a round, the rows in turn, for --repeats rounds (the median is
reported), and after each timing its host time a call is probed (bench_common.time_rows, as in
quantized_decode.py): a row whose host could not keep ahead of do_bench's L2 flush
(bench_common.host_bound) is marked HOST-BOUND and listed in the shape's host_bound, since its time
may include the host's. The checked rows copy cache_seqlens and the table to the host and
synchronize: their probe drains the GPU ("host: drained the GPU", host_us null) and they are
always marked. --device cpu: a smoke run on
small shapes (the CPU backend, SDPA's math backend as the reference, a perf_counter timer, no
host check), for the tests.

    PYTHONPATH=build-gpu/python python3 bench/paged_decode.py [--json out.json] [--quick]
        [--repeats N] [--device cpu]
"""
import bench_common
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
SMOKE_CASES = [(torch.bfloat16, 2, 4, 2, 70, 64), (torch.float16, 1, 2, 2, 33, 128)]  # --device cpu


def bench(fn):
    return do_bench(fn, warmup=25, rep=100)


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
    args, cuda, dev, timer, flush, loop = bench_common.decode_bench_setup(
        __doc__.splitlines()[0], "paged_decode", bench)
    gen = torch.Generator().manual_seed(0)
    cases = SMOKE_CASES if not cuda else CASES[:2] if args.quick else CASES
    rows = []
    for dtype, b, hq, hkv, length, d in cases:
        q = torch.randn(b, 1, hq, d, device=dev, dtype=dtype)
        k = torch.randn(b, length, hkv, d, device=dev, dtype=dtype)
        v = torch.randn(b, length, hkv, d, device=dev, dtype=dtype)
        used = torch.full((b,), length, device=dev, dtype=torch.int32)
        kv_bytes = 2 * b * hkv * length * d * 2
        qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        calls, contexts, diffs = {}, {}, {}

        def sdpa():
            return F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=hq != hkv)

        if cuda:
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                ref = sdpa().transpose(1, 2)
            for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION),
                                  ("fa2", SDPBackend.FLASH_ATTENTION)):
                calls[name], contexts[name] = sdpa, (lambda b=backend: sdpa_kernel(b))
        else:  # the math backend, in float32, as the reference
            ref = F.scaled_dot_product_attention(qt.float(), kt.float(), vt.float(),
                                                 enable_gqa=hq != hkv).transpose(1, 2)
        calls["ours dense"] = lambda: ga.flash_attn_with_kvcache(q, k, v)
        calls["ours dense+seqlens"] = lambda: ga.flash_attn_with_kvcache(q, k, v,
                                                                         cache_seqlens=used)
        calls["ours dense+seqlens u"] = lambda: ga.flash_attn_with_kvcache(
            q, k, v, cache_seqlens=used, check_indices=False)
        keep = []  # the pools, alive through the rounds
        for page in PAGES:
            kp, vp, table = paged_copy(k, v, page, gen)
            name = f"ours page {page}"
            calls[name] = (lambda kp=kp, vp=vp, table=table: ga.flash_attn_with_kvcache(
                q, kp, vp, cache_seqlens=used, block_table=table))
            calls[name + " u"] = (lambda kp=kp, vp=vp, table=table: ga.flash_attn_with_kvcache(
                q, kp, vp, cache_seqlens=used, block_table=table, check_indices=False))
            out = calls[name]()
            diffs[name] = ((out.float() - ref.float()).norm() / ref.float().norm()).item()
            keep += [kp, vp, table]
        # Page 16 with the pages in order: what the scattered pool itself costs.
        kp, vp, table = paged_copy(k, v, 16, gen, shuffled=False)
        calls["ours page 16 in order u"] = lambda: ga.flash_attn_with_kvcache(
            q, kp, vp, cache_seqlens=used, block_table=table, check_indices=False)
        keep += [kp, vp, table]
        times, rounds, host_us, bound = bench_common.time_rows(calls, args.repeats, timer, cuda,
                                                               flush, loop, contexts)
        anchor = times.get("cudnn")
        row = dict(dtype=str(dtype).split(".")[-1], batch=b, hq=hq, hkv=hkv, seqlen_k=length,
                   head_dim=d, us={n: t * 1e3 for n, t in times.items()},
                   us_rounds={n: [t * 1e3 for t in ms] for n, ms in rounds.items()},
                   tbs={n: kv_bytes / (t * 1e-3) / 1e12 for n, t in times.items()},
                   rel_diff_vs_cudnn=diffs, host_us=host_us, host_bound=bound)
        rows.append(row)
        print(f"{row['dtype']} B{b} H{hq}/{hkv} L{length} D{d} "
              f"({kv_bytes / 2**20:.0f} MiB of K/V):", flush=True)
        bench_common.print_row_times(times, kv_bytes, anchor, diffs, "rel diff", host_us, bound,
                                     24)
        del q, k, v, qt, kt, vt, ref, keep, calls
        if cuda:
            torch.cuda.empty_cache()
    bench_common.finish_rows(rows, flush, loop, args.repeats,
                             torch.cuda.get_device_name() if cuda else "cpu", args.json)

if __name__ == "__main__":
    main()
