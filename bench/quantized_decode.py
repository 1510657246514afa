"""Decode over a quantized KV cache (FP8 E4M3 and int8, a scale per KV head) against a 16-bit one:
ours on the 8-bit cache (dense, and paged with the pages shuffled), ours on the bf16 cache, and
torch SDPA's cuDNN and flash backends on the bf16 cache, in one run, on DESIGN.md's decode rows.

The 8-bit caches are the bf16 cache quantized by gpu_attention's own append (scale = the head's
absolute maximum / 448 for E4M3, / 127 for int8). Every call gets cache_seqlens (the serving call)
with check_indices=False, as a CUDA-graph decode step runs; do_bench (L2 flushed) times the whole
call, host side included. TB/s counts the bytes of K/V each call reads (1 byte an element for the
8-bit caches). "rel err" is ||out - out_bf16_cudnn|| / ||out_bf16_cudnn||: the quantization's
error, not a kernel's.

Every row of a shape is timed once a round, the rows in turn, for --repeats rounds (the median is
reported), so that a slow spell of the machine touches every row alike. After each round each
row's host time a call is measured too (bench_common.host_us, the GPU kept busy): a row whose host
could not keep ahead of do_bench's L2 flush (bench_common.host_bound, as in compare_torch.py) is
marked HOST-BOUND and listed in the shape's host_bound, since its time may include the host's
(2026-11-28, E4M3 at B8 L4096 measured 15 us slower in one run with no host check: its calls then
took the general Python path, 34-67 us of host time; with tensor scales they now take the fast
path, 16-29 us; bench/results/2026-11-29-h200-s30). The rows go through bench_common.time_rows,
as paged_decode.py's do. --device cpu: a smoke run on small shapes (the CPU backend, SDPA's
math backend as the reference, a perf_counter timer, no host check), for the tests.

--alibi adds ALiBi rows (BLOOM's slopes, 2^(-8 (h + 1) / Hq)) beside the plain ones: ours on each
8-bit cache and on the bf16 cache with the slopes, and "int8 alibi via copy": the int8 cache
dequantized to bf16 by torch, then ours on the copy with the slopes, a stand-in for the path such
calls took before the 8-bit decode kernel added the bias (the library's own dequantizing gather,
then the 16-bit decode kernel; torch's three float32 passes move more bytes than that gather did,
so the row overstates the former path: time it with the former build instead, as
bench/results/2026-12-03-h200-s71/call2.sh does). Their "rel err" is against ours bf16 alibi's
output; the copy row's TB/s counts the 8-bit cache's bytes, as the in-place rows' do.

    PYTHONPATH=build-gpu/python python3 bench/quantized_decode.py [--json out.json] [--quick]
        [--repeats N] [--device cpu] [--alibi]
"""
import bench_common
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
SMOKE_CASES = [(2, 4, 2, 40, 64), (1, 2, 2, 33, 128)]  # --device cpu


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


def rel_err(out, ref):
    return ((out.float() - ref.float()).norm() / ref.float().norm()).item()


def add_alibi_rows(calls, nbytes, errs, alibi, kind, q, k, v, kq, vq, ks, vs, used, elems):
    """--alibi: the rows of the 8-bit cache `kind` with BLOOM's slopes. `alibi` (a dict a shape)
    keeps the slopes and the reference of the rows' errors, ours bf16 alibi's output, made with
    the shape's first kind (and its row); with int8, the dequantized-copy row too."""
    if not alibi:
        hq = q.shape[2]
        alibi["slopes"] = (2.0 ** (-8.0 * (torch.arange(hq, dtype=torch.float64) + 1) / hq)
                           ).float().to(q.device)
        calls["ours bf16 alibi"] = lambda: ga.flash_attn_with_kvcache(
            q, k, v, cache_seqlens=used, alibi_slopes=alibi["slopes"], check_indices=False)
        alibi["ref"] = calls["ours bf16 alibi"]()
        errs["ours bf16 alibi"] = 0.0
        nbytes["ours bf16 alibi"] = 2 * elems
    slopes, ref = alibi["slopes"], alibi["ref"]
    name = f"ours {kind} alibi"
    calls[name] = lambda: ga.flash_attn_with_kvcache(
        q, kq, vq, cache_seqlens=used, check_indices=False, k_scale=ks, v_scale=vs,
        alibi_slopes=slopes)
    nbytes[name] = elems
    errs[name] = rel_err(calls[name](), ref)
    if kind == "int8":
        def via_copy():
            kd = (kq.float() * ks[None, None, :, None]).to(k.dtype)
            vd = (vq.float() * vs[None, None, :, None]).to(v.dtype)
            return ga.flash_attn_with_kvcache(q, kd, vd, cache_seqlens=used,
                                              check_indices=False, alibi_slopes=slopes)
        calls["int8 alibi via copy"] = via_copy
        nbytes["int8 alibi via copy"] = elems
        errs["int8 alibi via copy"] = rel_err(via_copy(), ref)


def main():
    args, cuda, dev, timer, flush, loop = bench_common.decode_bench_setup(
        __doc__.splitlines()[0], "quantized_decode", bench,
        alibi_help="add ALiBi rows (ours with BLOOM's slopes; an int8 row through a dequantized "
                   "copy)")
    gen = torch.Generator().manual_seed(0)
    cases = SMOKE_CASES if not cuda else CASES[:2] if args.quick else CASES
    rows = []
    for b, hq, hkv, length, d in cases:
        q = torch.randn(b, 1, hq, d, device=dev, dtype=torch.bfloat16)
        k = torch.randn(b, length, hkv, d, device=dev, dtype=torch.bfloat16)
        v = torch.randn(b, length, hkv, d, device=dev, dtype=torch.bfloat16)
        used = torch.full((b,), length, device=dev, dtype=torch.int32)
        elems = 2 * b * hkv * length * d
        qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        calls, nbytes, errs, contexts = {}, {}, {}, {}

        def sdpa():
            return F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=hq != hkv)

        if cuda:
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                ref = sdpa().transpose(1, 2)
            for name, backend in (("cudnn bf16", SDPBackend.CUDNN_ATTENTION),
                                  ("fa2 bf16", SDPBackend.FLASH_ATTENTION)):
                calls[name], contexts[name] = sdpa, backend
        else:  # the math backend, in float32, as the reference
            ref = F.scaled_dot_product_attention(qt.float(), kt.float(), vt.float(),
                                                 enable_gqa=hq != hkv).transpose(1, 2)
        calls["ours bf16"] = lambda: ga.flash_attn_with_kvcache(
            q, k, v, cache_seqlens=used, check_indices=False)
        for name in calls:
            nbytes[name] = 2 * elems
        keep = []  # the 8-bit caches, alive through the rounds
        alibi = {}  # --alibi: the slopes and the reference of the ALiBi rows (add_alibi_rows)
        for kind in ("e4m3", "int8"):
            kq, vq, ks, vs = quantized(k, v, used, kind)
            name = f"ours {kind}"
            calls[name] = (lambda kq=kq, vq=vq, ks=ks, vs=vs: ga.flash_attn_with_kvcache(
                q, kq, vq, cache_seqlens=used, check_indices=False, k_scale=ks, v_scale=vs))
            out = ga.flash_attn_with_kvcache(q, kq, vq, cache_seqlens=used, k_scale=ks,
                                             v_scale=vs)
            errs[name] = rel_err(out, ref)
            nbytes[name] = elems
            keep += [kq, vq]
            if kind == "e4m3":
                kp, vp, table = paged_copy(kq.view(torch.uint8), vq.view(torch.uint8), 16, gen)
                kp, vp = kp.view(torch.float8_e4m3fn), vp.view(torch.float8_e4m3fn)
                pname = "ours e4m3 page 16"
                calls[pname] = (lambda kp=kp, vp=vp, table=table, ks=ks, vs=vs:
                                ga.flash_attn_with_kvcache(
                                    q, kp, vp, cache_seqlens=used, block_table=table,
                                    check_indices=False, k_scale=ks, v_scale=vs))
                out = ga.flash_attn_with_kvcache(q, kp, vp, cache_seqlens=used,
                                                 block_table=table, k_scale=ks, v_scale=vs)
                errs[pname] = rel_err(out, ref)
                nbytes[pname] = elems
                keep += [kp, vp]
            if args.alibi:
                add_alibi_rows(calls, nbytes, errs, alibi, kind, q, k, v, kq, vq, ks, vs, used,
                               elems)
        times, rounds, host_us, bound = bench_common.time_rows(
            calls, args.repeats, timer, cuda, flush, loop,
            {name: (lambda b=backend: sdpa_kernel(b)) for name, backend in contexts.items()})
        anchor = times.get("cudnn bf16")
        row = dict(dtype="bfloat16", batch=b, hq=hq, hkv=hkv, seqlen_k=length, head_dim=d,
                   us={n: t * 1e3 for n, t in times.items()},
                   us_rounds={n: [t * 1e3 for t in ms] for n, ms in rounds.items()},
                   tbs={n: nbytes[n] / (t * 1e-3) / 1e12 for n, t in times.items()},
                   cudnn_over_this={n: anchor / t for n, t in times.items()} if anchor else {},
                   rel_err_vs_cudnn_bf16=errs, host_us=host_us, host_bound=bound)
        rows.append(row)
        print(f"bf16 B{b} H{hq}/{hkv} L{length} D{d} ({2 * elems / 2**20:.0f} MiB of bf16 K/V):",
              flush=True)
        bench_common.print_row_times(times, nbytes, anchor, errs, "rel err", host_us, bound, 18)
        del q, k, v, qt, kt, vt, ref, keep, calls, alibi
        if cuda:
            torch.cuda.empty_cache()
    bench_common.finish_rows(rows, flush, loop, args.repeats,
                             torch.cuda.get_device_name() if cuda else "cpu", args.json)

if __name__ == "__main__":
    main()
