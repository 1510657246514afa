#!/usr/bin/env python3
"""gpu_attention.flash_attn_func side by side with torch SDPA (cuDNN and flash backends).

For each shape the same inputs go through both: the relative difference ||a - b|| / ||b|| of the
outputs (against each SDPA backend and against an fp32 SDPA math-backend reference) and the time
of each (triton.testing.do_bench's median, same run, same GPU; --repeats rounds of ours, cuDNN and
flash in turn, and the median of each one's rounds: at ~20 us a call a Python call is host-bound
at times, and one round could come out 1.6-2.8x slow). After each round it also measures each
one's host time a call and names, in a case's host_bound and a warning, any whose host could not
keep ahead of do_bench's L2 flush: such a time may include the host's (the host check below).
Prints a table last, writes JSON with device, date and commit, and exits 1 when any difference
exceeds --tol (default 1e-2).

    PYTHONPATH=<build>/python python3 bench/compare_torch.py --json out/compare_torch.json
"""

import argparse
import datetime
import json
import os
import platform
import sys
import traceback

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import bench_common
import gpu_attention as ga

# (dtype, batch, q heads, kv heads, seqlen_q, seqlen_k, head dim, causal). The first rows are the
# workloads of shared/DESIGN.md's "numbers to beat"; the last ones exercise Sq != Sk (bottom-right
# causal) and GQA, which SDPA backends may not support (then only the fp32 reference checks them),
# and decode (Sq 1, and 4 causal: decode_16x64).
CASES = [
    ("float16", 1, 16, 16, 1024, 1024, 64, False),
    ("float16", 4, 16, 16, 4096, 4096, 128, False),
    ("bfloat16", 4, 16, 16, 4096, 4096, 128, False),
    ("bfloat16", 4, 16, 16, 4096, 4096, 128, True),
    ("float16", 16, 16, 16, 1024, 1024, 128, True),
    ("float16", 1, 32, 32, 8192, 8192, 128, True),
    ("bfloat16", 2, 8, 8, 1000, 1000, 128, False),
    ("bfloat16", 2, 8, 8, 1000, 1536, 128, False),
    ("bfloat16", 2, 8, 8, 1000, 1536, 128, True),
    ("bfloat16", 4, 32, 8, 2048, 2048, 128, True),
    ("bfloat16", 8, 32, 8, 1, 4096, 128, False),
    ("float16", 4, 32, 32, 4096, 4096, 64, False),
    ("float16", 4, 8, 8, 4096, 4096, 256, False),
    ("bfloat16", 2, 8, 8, 1000, 1536, 256, True),
    # decode with a few query rows per sequence (speculative or chunked decoding), GQA, causal
    ("bfloat16", 2, 32, 8, 4, 4096, 128, True),
]

# --quick: one of each kind (D64, long causal, Sq != Sk causal, GQA, decode), bf16 where it can.
QUICK_CASES = [CASES[0], CASES[3], CASES[8], CASES[9], CASES[10]]

# Small shapes for `--device cpu`, a smoke run of this script without a GPU.
SMOKE_CASES = [
    ("float16", 1, 4, 4, 100, 100, 64, False),
    ("bfloat16", 2, 4, 4, 60, 90, 128, True),
    ("bfloat16", 2, 8, 2, 64, 64, 128, True),
    ("float16", 2, 8, 2, 1, 200, 64, False),
]

BACKENDS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}


def rel_diff(a, b):
    a = a.float()
    b = b.float()
    return (torch.linalg.vector_norm(a - b) / torch.linalg.vector_norm(b)).item()


def flops(b, hq, sq, sk, d, causal):
    """2 GEMMs x 2 flops per multiply-add over the visible (bottom-right causal) elements."""
    if not causal:
        visible = sq * sk
    else:
        visible = sum(max(0, min(sk, i + sk - sq + 1)) for i in range(sq))
    return 4.0 * b * hq * visible * d


def make_timer(warmup, rep, device):
    if device.type == "cpu":  # smoke runs of this script without a GPU
        return bench_common.cpu_timer()
    try:
        from triton.testing import do_bench

        def timer(fn):
            return do_bench(fn, warmup=warmup, rep=rep, return_mode="median")

        return timer, "triton.testing.do_bench median"
    except ImportError:  # CUDA events, median of rep runs
        def timer(fn):
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            times = []
            for _ in range(max(10, rep)):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                fn()
                e.record()
                e.synchronize()
                times.append(s.elapsed_time(e))
            return sorted(times)[len(times) // 2]

        return timer, "cuda events median"


# The host check. do_bench flushes L2 before each call (triton's 256 MB memset, ~70 us on an H200)
# and times the call between two events; the host issues the next call while the GPU flushes. A
# host that needs longer than the flush to issue the call (plus do_bench's own flush launch and
# event records) leaves the GPU idle after the start event, and the call's time includes the
# host's excess: a slow spell of the host machine did this to 4 cases, ours and cuDNN's alike
# (bench/results/2026-11-28-h200-s28, call 2). So after each round the host time of a call is
# measured as well (bench_common.host_us, the GPU kept busy), and a backend that
# bench_common.host_bound names is listed in the case's host_bound, with a warning.
# The probe's sizes and the flush's measurement live in bench_common (quantized_decode.py shares
# them).


def lower_right_mask(sq, sk, device):
    i = torch.arange(sq, device=device)[:, None]
    j = torch.arange(sk, device=device)[None, :]
    return j <= i + (sk - sq)


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def parse_case(text):
    """`DTYPE,B,HQ,HKV,SQ,SK,D,CAUSAL` (CAUSAL 0 or 1) -> a CASES tuple; argparse reports a
    ValueError as a bad --case value."""
    parts = text.split(",")
    if len(parts) != 8:
        raise argparse.ArgumentTypeError(
            f"--case {text!r}: want 8 comma-separated fields DTYPE,B,HQ,HKV,SQ,SK,D,CAUSAL")
    dtype = parts[0]
    if dtype not in ("float16", "bfloat16"):
        raise argparse.ArgumentTypeError(f"--case {text!r}: dtype {dtype!r} is not float16 or "
                                         "bfloat16")
    try:
        b, hq, hkv, sq, sk, d, causal = (int(x) for x in parts[1:])
    except ValueError:
        raise argparse.ArgumentTypeError(f"--case {text!r}: B..CAUSAL must be integers") from None
    if min(b, hq, hkv, sq, sk, d) < 1 or causal not in (0, 1):
        raise argparse.ArgumentTypeError(f"--case {text!r}: sizes must be >= 1 and CAUSAL 0 or 1")
    return (dtype, b, hq, hkv, sq, sk, d, bool(causal))


def run_case(case, timer, gen, dev, repeats=1, flush=None, loop=0.0):
    dtype_name, b, hq, hkv, sq, sk, d, causal = case
    dtype = getattr(torch, dtype_name)
    q = torch.randn(b, sq, hq, d, device=dev, dtype=dtype, generator=gen)
    k = torch.randn(b, sk, hkv, d, device=dev, dtype=dtype, generator=gen)
    v = torch.randn(b, sk, hkv, d, device=dev, dtype=dtype, generator=gen)
    row = {
        "dtype": dtype_name, "batch": b, "heads_q": hq, "heads_kv": hkv, "seqlen_q": sq,
        "seqlen_k": sk, "head_dim": d, "causal": causal,
        "flops": flops(b, hq, sq, sk, d, causal),
    }

    # torch's layout is [B, H, S, D]: transposed views of the same memory, no copy
    qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
    gqa = hq != hkv
    # SDPA's is_causal is top-left aligned; flash-attn / gpuattn are bottom-right aligned
    mask = lower_right_mask(sq, sk, dev) if causal and sq != sk else None
    sdpa_causal = causal and sq == sk
    if mask is not None:  # the anchors then read a dense mask and compute every pair: not like for like
        row["anchor_mask"] = "dense"

    def sdpa(qx, kx, vx):
        kwargs = {"enable_gqa": True} if gqa else {}
        return F.scaled_dot_product_attention(qx, kx, vx, attn_mask=mask, is_causal=sdpa_causal,
                                              **kwargs)

    # fp32 reference (math backend on the same values, upcast)
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH):
        ref = sdpa(qt.float(), kt.float(), vt.float()).transpose(1, 2)

    def ours():
        return ga.flash_attn_func(q, k, v, causal=causal)

    measures = {}  # key -> a function that times one round of it (run below, in rounds)
    host = {}  # key -> the host us a call, one figure a round (the host check above)

    def timed(key, fn):
        ms = timer(fn)
        if dev.type == "cuda":
            host.setdefault(key, []).append(bench_common.host_us(
                fn, bench_common.HOST_CALLS, cuda=True, sleep_cycles=bench_common.HOST_SLEEP,
                strict=False))
        return ms

    try:
        out = ours()
        sync(dev)
        row["ours_vs_ref"] = rel_diff(out, ref)
        measures["ours"] = lambda: timed("ours", ours)
    except Exception as e:  # reported in the table, and fails the run
        row["ours_error"] = f"{type(e).__name__}: {e}"
        out = None
    del ref

    for name, backend in BACKENDS.items():
        with torch.no_grad(), sdpa_kernel(backend):
            try:
                o = sdpa(qt, kt, vt).transpose(1, 2)
                sync(dev)
            except Exception as e:  # backend does not support this case (mask, GQA, ...)
                row[f"{name}_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
                continue
            if out is not None:
                row[f"ours_vs_{name}"] = rel_diff(out, o)
            del o

        def measure_sdpa(backend=backend, name=name):  # the context around the timer, not a call
            with torch.no_grad(), sdpa_kernel(backend):
                return timed(name, lambda: sdpa(qt, kt, vt))

        measures[name] = measure_sdpa
    for key, ms in bench_common.time_in_rounds(measures, repeats).items():
        row[f"{key}_ms"] = bench_common.median(ms)
        if repeats > 1:
            row[f"{key}_ms_rounds"] = ms
    for key in ("ours", "cudnn", "flash"):
        if f"{key}_ms" in row:
            row[f"{key}_tflops"] = row["flops"] / (row[f"{key}_ms"] * 1e-3) / 1e12
    for key, us in host.items():  # the median of the rounds, as for the times
        row[f"{key}_host_us"] = bench_common.median(us)
        if repeats > 1:
            row[f"{key}_host_us_rounds"] = us
    bound = bench_common.host_bound_keys(row, flush, loop)
    if bound:
        row["host_bound"] = bound
    return row


SHORT_DTYPE = {"float16": "fp16", "bfloat16": "bf16"}


def case_label(r):
    s = f"{SHORT_DTYPE[r['dtype']]} B{r['batch']} H{r['heads_q']}"
    if r["heads_kv"] != r["heads_q"]:
        s += f"/{r['heads_kv']}"
    same = r["seqlen_q"] == r["seqlen_k"]
    s += f" S{r['seqlen_q']}" if same else f" Sq{r['seqlen_q']} Sk{r['seqlen_k']}"
    return s + f" D{r['head_dim']}" + (" causal" if r["causal"] else "")


def table(rows, flush=None, loop=0.0):
    def f(v, fmt):
        width = int(fmt.split(".")[0])
        return format(v, fmt) if isinstance(v, (int, float)) else "n/a".rjust(width)

    head = (f"{'case':<36} {'ours ms':>9} {'cudnn ms':>9} {'flash ms':>9} {'ours TF/s':>9} "
            f"{'cudnn/ours':>10} {'flash/ours':>10} {'d(cudnn)':>9} {'d(flash)':>9} {'d(fp32)':>9}")
    lines = [head, "-" * len(head)]
    for r in rows:
        ours = r.get("ours_ms")
        sp = {n: (r[f"{n}_ms"] / ours if ours and f"{n}_ms" in r else None) for n in BACKENDS}
        lines.append(
            f"{case_label(r):<36} {f(ours, '9.4f')} {f(r.get('cudnn_ms'), '9.4f')} "
            f"{f(r.get('flash_ms'), '9.4f')} {f(r.get('ours_tflops'), '9.1f')} "
            f"{f(sp['cudnn'], '10.2f')} {f(sp['flash'], '10.2f')} "
            f"{f(r.get('ours_vs_cudnn'), '9.2e')} {f(r.get('ours_vs_flash'), '9.2e')} "
            f"{f(r.get('ours_vs_ref'), '9.2e')}")
        if r.get("anchor_mask") == "dense":
            lines.append("    anchors: a dense boolean mask (SDPA has no bottom-right causal flag), "
                         "every (query, key) pair computed: their ratios are not like for like")
        for key in ("ours_error", "cudnn_error", "flash_error"):
            if key in r:
                lines.append(f"    {key}: {r[key]}")
        for key in r.get("host_bound", []):
            lines.append(f"    host-bound: {key}'s host took {r[f'{key}_host_us']:.0f} us a call "
                         f"(do_bench's {loop:.0f} more) against the L2 flush's {flush:.0f} us: "
                         "its time may include the host's")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--warmup", type=int, default=25, help="do_bench warmup, ms")
    ap.add_argument("--rep", type=int, default=100, help="do_bench repetition time, ms")
    ap.add_argument("--tol", type=float, default=1e-2, help="max relative difference")
    ap.add_argument("--repeats", type=int, default=3,
                    help="rounds of timing per case (ours and each backend in turn); the median "
                    "of a backend's rounds is reported")
    ap.add_argument("--quick", action="store_true",
                    help="a representative subset (D64, causal, Sq != Sk, GQA, decode)")
    ap.add_argument("--device", default="cuda",
                    help="cuda (default), or cpu: a smoke run of the script on small shapes")
    ap.add_argument("--case", action="append", type=parse_case,
                    metavar="DTYPE,B,HQ,HKV,SQ,SK,D,CAUSAL",
                    help="run this case instead of the built-in list (repeatable), e.g. "
                    "float16,1,33,33,8192,8192,128,0")
    args = ap.parse_args()
    dev = torch.device(args.device)
    if args.repeats < 1:
        print(f"compare_torch: --repeats must be at least 1, got {args.repeats}", file=sys.stderr)
        return 2

    if dev.type == "cuda" and not torch.cuda.is_available():
        print("compare_torch: no CUDA device visible to torch", file=sys.stderr)
        return 2
    if dev.type == "cuda" and not ga.cuda_available():
        print("compare_torch: gpu_attention was built without the CUDA backend (or sees no "
              "device)", file=sys.stderr)
        return 2

    timer, timer_name = make_timer(args.warmup, args.rep, dev)
    gen = torch.Generator(device=dev).manual_seed(20261121)
    rows = []
    if dev.type == "cpu":
        cases = SMOKE_CASES[:2] if args.quick else SMOKE_CASES
    else:
        cases = QUICK_CASES if args.quick else CASES
    if args.case:
        cases = args.case
    flush, loop = None, None
    if timer_name.startswith("triton"):  # the check is do_bench's (the fallback syncs each call)
        try:
            flush, loop = bench_common.flush_costs(dev)
        except Exception as e:  # the run goes on without the host check
            print(f"compare_torch: no host check ({type(e).__name__}: {e})", file=sys.stderr)
    for case in cases:
        try:
            rows.append(run_case(case, timer, gen, dev, args.repeats, flush, loop))
        except Exception as e:  # a case that could not even be set up (e.g. out of memory)
            traceback.print_exc()
            rows.append({"case": list(case), "setup_error": f"{type(e).__name__}: {e}"})
        if dev.type == "cuda":
            torch.cuda.empty_cache()

    failures = []
    for r in rows:
        if "setup_error" in r or "ours_error" in r:
            failures.append(r)
            continue
        for key in ("ours_vs_ref", "ours_vs_cudnn", "ours_vs_flash"):
            if key in r and not r[key] <= args.tol:  # NaN fails too
                failures.append(r)
                break

    result = {
        "benchmark": "compare_torch",
        "device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else platform.processor()
        or "cpu",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": bench_common.git_commit(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda if dev.type == "cuda" else None,
        "cudnn": torch.backends.cudnn.version(),
        "gpu_attention": ga.__version__,
        "python": platform.python_version(),
        "timer": f"{timer_name} (warmup {args.warmup} ms, rep {args.rep} ms), median of "
                 f"{args.repeats} round(s) per backend",
        "layout": "ours [B, S, H, D]; torch SDPA on [B, H, S, D] transposed views of the same memory",
        "rel_diff": "||ours - theirs|| / ||theirs||; fp32 ref = SDPA math backend on upcast inputs",
        "tolerance": args.tol,
        "flush_us": flush,
        "loop_us": loop,
        "host_check": None if flush is None else
        f"after each round, the host us a call (the mean of {bench_common.HOST_CALLS} calls "
        "issued while the GPU sleeps; KEY_host_us is the median of the rounds); host_bound "
        "names a backend whose host time came within 20% of the L2 flush's GPU time "
        "(flush_us) and, with loop_us (do_bench's own host time an iteration), outlasted the "
        "flush and its call "
        "(bench_common.host_bound): its do_bench time may include the host's",
        "host_bound_cases": sum(1 for r in rows if r.get("host_bound")),
        "ok": not failures,
        "cases": rows,
    }
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=2)

    print(f"\n{result['device']}  {result['date']}  commit {result['commit']}  torch "
          f"{result['torch']}  cuDNN {result['cudnn']}  ({result['timer']})")
    print(table([r for r in rows if "setup_error" not in r], flush, loop))
    for r in rows:
        if "setup_error" in r:
            print(f"setup error {r['case']}: {r['setup_error']}")
    if result["host_bound_cases"]:
        print(f"WARNING: {result['host_bound_cases']} case(s) host-bound (flush {flush:.0f} us): "
              "their times may include the host's; rerun them on a quiet host")
    if failures:
        print(f"FAIL: {len(failures)} case(s) differ by more than {args.tol} or failed")
        return 1
    print(f"OK: every case within {args.tol} relative")
    return 0


if __name__ == "__main__":
    sys.exit(main())
