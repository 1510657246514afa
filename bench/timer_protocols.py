#!/usr/bin/env python3
"""One attention call timed under several protocols, to find what separates two harnesses.

`gpuattn bench` (tools/gpuattn/device_cuda.cpp, time_sustained) and compare_torch.py (triton's
do_bench) both flush the L2 before each call and time it between two CUDA events, yet at the
one-wave shape (fp16 B1 H16 S1024 D64) the same kernel read 17.3 us in the first and 16.5 us in the
second (session 61). The protocols here differ in one thing at a time:

  do_bench   triton.testing.do_bench's median (compare_torch.py's timer)
  fill       torch's zero_() of a 256 MiB int32 buffer (triton's clear_cache), then the events
  memset     the driver's cuMemsetD32Async on the same buffer (gpuattn bench's cudaMemsetAsync)
  none       no flush (the inputs stay in L2)

for ours and for SDPA's cuDNN backend, in rounds (each protocol once a round, the median of the
rounds). Prints a table and writes JSON with device, date and commit.

    PYTHONPATH=<build>/python python3 bench/timer_protocols.py [--json out.json]
"""

import argparse
import ctypes
import datetime
import json
import os
import platform
import statistics

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import gpu_attention as ga

FLUSH_BYTES = 256 << 20


def parse_shape(text):
    """'B1 H16 S1024 D64' (+ ' causal') -> (b, h, s, d, causal)."""
    words = text.split()
    causal = "causal" in words
    vals = {}
    for w in words:
        if w == "causal":
            continue
        if len(w) < 2 or w[0] not in "BHSD" or not w[1:].isdigit():
            raise SystemExit(f"timer_protocols: bad shape word {w!r} in {text!r} "
                             "(want e.g. 'B1 H16 S1024 D64 causal')")
        vals[w[0]] = int(w[1:])
    if set(vals) != set("BHSD"):
        raise SystemExit(f"timer_protocols: shape {text!r} must give B, H, S and D")
    return vals["B"], vals["H"], vals["S"], vals["D"], causal


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", action="append", help="e.g. 'B1 H16 S1024 D64' (repeatable)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=400, help="timed calls a protocol a round")
    ap.add_argument("--json")
    args = ap.parse_args()
    shapes = args.shape or ["B1 H16 S1024 D64", "B4 H16 S4096 D128"]
    if args.rounds < 1 or args.calls < 5:
        raise SystemExit(f"timer_protocols: --rounds {args.rounds} must be >= 1 and "
                         f"--calls {args.calls} >= 5")
    from triton.testing import do_bench

    dev = torch.device("cuda")
    cuda = ctypes.CDLL("libcuda.so.1")
    cuda.cuMemsetD32Async.argtypes = [ctypes.c_uint64, ctypes.c_uint, ctypes.c_size_t,
                                      ctypes.c_void_p]
    cache = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device=dev)

    def fill():
        cache.zero_()

    def memset():
        stream = torch.cuda.current_stream().cuda_stream
        rc = cuda.cuMemsetD32Async(cache.data_ptr(), 0, cache.numel(), stream)
        if rc != 0:
            raise RuntimeError(f"cuMemsetD32Async returned {rc}")

    def events(fn, flush):
        for _ in range(20):
            if flush:
                flush()
            fn()
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(args.calls)]
        for s, e in ev:
            if flush:
                flush()
            s.record()
            fn()
            e.record()
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) * 1e3 for s, e in ev)

    protocols = {
        "do_bench": lambda fn: do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e3,
        "fill": lambda fn: events(fn, fill),
        "memset": lambda fn: events(fn, memset),
        "none": lambda fn: events(fn, None),
    }
    gen = torch.Generator(device=dev)
    gen.manual_seed(1234)
    rows = []
    for text in shapes:
        b, h, s, d, causal = parse_shape(text)
        q, k, v = (torch.randn(b, s, h, d, device=dev, dtype=torch.float16, generator=gen)
                   for _ in range(3))
        qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))

        def ours():
            return ga.flash_attn_func(q, k, v, causal=causal)

        def cudnn():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)

        times = {}
        for _ in range(args.rounds):
            for who, fn in (("ours", ours), ("cudnn", cudnn)):
                for name, timer in protocols.items():
                    times.setdefault((who, name), []).append(timer(fn))
        for (who, name), us in times.items():
            rows.append({"shape": text, "who": who, "protocol": name,
                         "us": statistics.median(us), "rounds_us": us})

    print("| shape | who | " + " | ".join(protocols) + " |")
    print("|---|---|" + "---:|" * len(protocols))
    for text in shapes:
        for who in ("ours", "cudnn"):
            cells = [next(r["us"] for r in rows if r["shape"] == text and r["who"] == who
                          and r["protocol"] == p) for p in protocols]
            print(f"| {text} | {who} | " + " | ".join(f"{c:.2f}" for c in cells) + " |")
    if args.json:
        doc = {"device": torch.cuda.get_device_name(), "date": datetime.date.today().isoformat(),
               "commit": os.environ.get("GPUATTN_COMMIT", "unknown"), "host": platform.node(),
               "unit": "us, median of the rounds' medians", "rows": rows}
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
