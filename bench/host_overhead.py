#!/usr/bin/env python3
"""Host time per call of gpu_attention.flash_attn_func against torch SDPA (cuDNN, flash).

compare_torch.py times every backend with triton's do_bench (CUDA events around each call), so a
call whose host side takes longer than its kernel shows the host's time, not the kernel's: at fp16
B1 H16 S1024 D64 ours came out at 25 us there against 18 us in `gpuattn bench` (C++, the same
protocol). This script measures the host side alone: a long GPU sleep (torch.cuda._sleep) keeps
the stream busy while N calls are issued, so their wall time is the host's (the script checks that
the sleep outlasted them). It reports, per backend, the median over --rounds of the host us per
call (for ours: flash_attn_func on its fast path and on the general path, and a decode step
through flash_attn_with_kvcache, without and with a new key and value appended, and over an FP8
E4M3 cache with tensor scales, the same call and its general path); then, for ours,
the parts: the Python wrapper, torch.cuda.current_stream, torch.empty and the native call with
prebuilt arguments (_C.attention_forward); and the top of a cProfile of the wrapper. With
--device cpu (a tiny shape, for the CPU tests) the calls run the CPU backend, so the times include
the attention itself and there is no sleep.

    PYTHONPATH=<build>/python python3 bench/host_overhead.py [--json FILE]
"""

import argparse
import cProfile
import io
import json
import pstats
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import gpu_attention as ga
from gpu_attention import _C
from bench_common import host_us, median, time_in_rounds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--calls", type=int, default=200, help="calls per round (default 200)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds; the median is reported")
    ap.add_argument("--json", help="write the results as JSON to this file")
    args = ap.parse_args()
    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        sys.exit("host_overhead.py: --device cuda but torch sees no CUDA device")
    # fp16 B1 H16 S1024 D64 on the GPU (the shape where do_bench showed the host); tiny on the CPU.
    b, s, h, d = (1, 1024, 16, 64) if cuda else (1, 16, 2, 64)
    q, k, v = (torch.randn(b, s, h, d, device=args.device, dtype=torch.float16) for _ in range(3))
    out = torch.empty_like(q)
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))  # SDPA's (B, H, S, D) views

    # A decode step's call (fp16 B8, one query row, Hq32 over Hkv8 D128, 4096 cached keys, used
    # lengths as a tensor; check_indices=False keeps the call asynchronous, as in a CUDA graph).
    db, dk = (8, 4096) if cuda else (2, 16)
    qd = torch.randn(db, 1, 32, 128, device=args.device, dtype=torch.float16)
    kc, vc = (torch.randn(db, dk, 8, 128, device=args.device, dtype=torch.float16)
              for _ in range(2))
    used = torch.full((db,), dk - 3, dtype=torch.int32, device=args.device)
    kn, vn = (torch.randn(db, 1, 8, 128, device=args.device, dtype=torch.float16) for _ in range(2))
    # the same cache quantized to FP8 E4M3, a scale per KV head (as tensors: the serving call)
    k8, v8 = (x.to(torch.float8_e4m3fn) for x in (kc, vc))
    scale = torch.ones(8, dtype=torch.float32, device=args.device)

    backends = {
        "ours flash_attn_func": lambda: ga.flash_attn_func(q, k, v),
        # window_size as a list is the same call through the general path (flash_attn_interface's
        # fast path takes plain torch calls with flash-attn's defaults only)
        "ours flash_attn_func, general path": lambda: ga.flash_attn_func(q, k, v,
                                                                         window_size=[-1, -1]),
        "ours flash_attn_with_kvcache (decode)": lambda: ga.flash_attn_with_kvcache(
            qd, kc, vc, cache_seqlens=used, check_indices=False),
        # the step's new key and value written into the cache first (the same row each call)
        "ours flash_attn_with_kvcache (decode, k/v appended)": lambda: ga.flash_attn_with_kvcache(
            qd, kc, vc, kn, vn, cache_seqlens=used, check_indices=False),
        "ours flash_attn_with_kvcache (decode, E4M3 cache)": lambda: ga.flash_attn_with_kvcache(
            qd, k8, v8, cache_seqlens=used, check_indices=False, k_scale=scale, v_scale=scale),
        "ours flash_attn_with_kvcache (decode, E4M3 cache, general path)":
            lambda: ga.flash_attn_with_kvcache(qd, k8, v8, cache_seqlens=used, check_indices=False,
                                               k_scale=scale, v_scale=scale,
                                               window_size=[-1, -1]),
    }
    parts = {
        "ours _C.attention_forward (prebuilt args)":
            lambda: _C.attention_forward(q, k, v, out, stream=0),
        "torch.empty_like(q)": lambda: torch.empty_like(q),
    }
    if cuda:
        stream = torch.cuda.current_stream(q.device).cuda_stream
        parts["ours _C.attention_forward (prebuilt args)"] = (
            lambda: _C.attention_forward(q, k, v, out, stream=stream))
        parts["torch.cuda.current_stream(dev).cuda_stream"] = (
            lambda: torch.cuda.current_stream(q.device).cuda_stream)

        def sdpa(backend):
            def run():
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(qt, kt, vt)
            return run
        backends["torch SDPA cuDNN"] = sdpa(SDPBackend.CUDNN_ATTENTION)
        backends["torch SDPA flash"] = sdpa(SDPBackend.FLASH_ATTENTION)

    # One round of a row: its host us a call over args.calls calls.
    rounds = {name: (lambda fn=fn: host_us(fn, args.calls, 1, cuda))
              for name, fn in dict(backends, **parts).items()}
    if cuda:  # without the sdpa_kernel context around each call (compare_torch.py has it)
        def sdpa_context_outside():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return host_us(lambda: F.scaled_dot_product_attention(qt, kt, vt), args.calls,
                               1, cuda)
        rounds["torch SDPA cuDNN, context outside the calls"] = sdpa_context_outside
    # Rounds interleaved, one round of every row in turn: the GPU machine's host speeds up and
    # slows down within a run (2026-11-28: SDPA's host time 38-74 us across one call's runs), and
    # rows timed one after another would take that drift for a difference.
    per_round = time_in_rounds(rounds, args.rounds)
    results = {name: median(times) for name, times in per_round.items()}

    shape = f"float16 B{b} H{h} S{s} D{d} on {args.device}"
    print(f"host us per call, median of {args.rounds} rounds of {args.calls} calls; {shape}"
          + ("; GPU kept busy by torch.cuda._sleep" if cuda else "; CPU backend: includes the "
             "attention itself"))
    for name, us in results.items():
        print(f"  {name:48s} {us:8.2f}")

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(args.calls):
        ga.flash_attn_func(q, k, v)
    prof.disable()
    if cuda:
        torch.cuda.synchronize()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(15)
    print(f"\ncProfile of {args.calls} flash_attn_func calls (tottime; cProfile itself adds time "
          "per Python call):")
    print(text.getvalue())

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"shape": shape, "calls": args.calls, "rounds": args.rounds,
                       "host_us_per_call": results, "host_us_per_round": per_round,
                       "torch": torch.__version__}, f, indent=1)


if __name__ == "__main__":
    main()
