"""SM clock and board power while gpu_attention and torch SDPA's cuDNN backend each run one shape
back to back: does a kernel lose clock to the power limit, and more than the anchor does?

    PYTHONPATH=<build>/python python3 bench/power_probe.py [--seconds 4] [--rounds 2] \\
        [--case float16,4,16,4096,128[,causal]] ...

Each round runs every case's ours phase and cuDNN phase in turn (alternating, so that both sides
see the same warm-up and thermal state), each for --seconds of back-to-back calls, while
`nvidia-smi -lms 50` samples clocks.sm, power.draw and temperature. Prints per phase the median SM
clock, median power, TFLOP/s over the phase (CUDA events around all its calls, no L2 flush) and
TFLOP/s per GHz (the work a clock cycle does: the kernel's efficiency with the clock taken out).
"""
import argparse
import datetime
import statistics
import subprocess
import sys
import tempfile
import time



def parse_case(text):
    """'dtype,B,H,S,D[,causal]' -> (dtype, B, H, S, D, causal); a clear error naming the bad
    part."""
    parts = text.split(",")
    if len(parts) not in (5, 6):
        raise argparse.ArgumentTypeError(f"case {text!r} is not dtype,B,H,S,D[,causal]")
    dtype = parts[0]
    if dtype not in ("float16", "bfloat16"):
        raise argparse.ArgumentTypeError(f"case {text!r}: dtype {dtype!r} is not float16 or bfloat16")
    try:
        b, h, s, d = (int(x) for x in parts[1:5])
    except ValueError:
        raise argparse.ArgumentTypeError(f"case {text!r}: B, H, S, D must be integers") from None
    if min(b, h, s) < 1 or d not in (64, 128, 256):
        raise argparse.ArgumentTypeError(f"case {text!r}: B, H, S must be >= 1 and D 64, 128 or 256")
    causal = parts[5] if len(parts) == 6 else "0"
    if causal not in ("0", "1"):
        raise argparse.ArgumentTypeError(f"case {text!r}: causal {causal!r} is not 0 or 1")
    return dtype, b, h, s, d, causal == "1"


def sampler(path):
    query = "timestamp,clocks.sm,power.draw,temperature.gpu"
    return subprocess.Popen(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits",
                             "-lms", "50"], stdout=open(path, "w"), stderr=subprocess.DEVNULL)


def read_samples(lines):
    """nvidia-smi's CSV lines (timestamp, MHz, W, deg C) -> [(epoch s, MHz, W, deg C)]; lines that
    do not parse (a header, '[N/A]') are skipped."""
    out = []
    for line in lines:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 4:
            continue
        try:
            t = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            out.append((t, float(parts[1]), float(parts[2]), float(parts[3])))
        except ValueError:
            continue
    return out


def run_phase(fn, seconds):
    import torch

    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.time()
    start.record()
    calls = 0
    while time.time() - t0 < seconds:
        for _ in range(20):
            fn()
        calls += 20
        torch.cuda.synchronize()
    end.record()
    torch.cuda.synchronize()
    return t0, time.time(), calls, start.elapsed_time(end)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--case", type=parse_case, action="append",
                    help="dtype,B,H,S,D[,causal] (causal 0 or 1, default 0); default: "
                         "float16,4,16,4096,128 and float16,1,16,16384,128")
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    import gpu_attention as ga

    if args.seconds <= 0 or args.rounds < 1:
        sys.exit(f"power_probe: --seconds {args.seconds} and --rounds {args.rounds} must be > 0")
    if not torch.cuda.is_available():
        sys.exit("power_probe: no CUDA device")
    cases = args.case or [parse_case("float16,4,16,4096,128"), parse_case("float16,1,16,16384,128")]
    dev = torch.device("cuda")
    log = tempfile.NamedTemporaryFile(suffix=".csv", delete=False).name
    smi = sampler(log)
    time.sleep(0.5)
    phases = []
    try:
        for rnd in range(args.rounds):
            for dtype, b, h, s, d, causal in cases:
                q, k, v = (torch.randn(b, s, h, d, device=dev, dtype=getattr(torch, dtype))
                           for _ in range(3))
                qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))
                flops = 4.0 * b * h * s * s * d / (2 if causal else 1)

                def ours():
                    return ga.flash_attn_func(q, k, v, causal=causal)

                def cudnn():
                    with torch.no_grad(), sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                        return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)

                for name, fn in (("ours", ours), ("cudnn", cudnn)):
                    t0, t1, calls, ms = run_phase(fn, args.seconds)
                    label = f"{dtype} B{b} H{h} S{s} D{d}" + (" causal" if causal else "")
                    phases.append(dict(round=rnd, case=label, side=name, t0=t0, t1=t1,
                                       tflops=flops * calls / (ms * 1e-3) / 1e12))
    finally:
        time.sleep(0.3)
        smi.terminate()
        smi.wait()
    with open(log) as f:
        samples = read_samples(f)
    print(f"{torch.cuda.get_device_name()}, {len(samples)} nvidia-smi samples")
    print("| round | case | side | SM MHz (median) | W (median) | deg C (max) | TFLOP/s | TFLOP/s per GHz |")
    print("|---:|---|---|---:|---:|---:|---:|---:|")
    for p in phases:
        # the middle of the phase: skip its first and last 10%
        span = p["t1"] - p["t0"]
        sel = [x for x in samples if p["t0"] + 0.1 * span <= x[0] <= p["t1"] - 0.1 * span]
        if not sel:
            print(f"| {p['round']} | {p['case']} | {p['side']} | - | - | - | {p['tflops']:.1f} | - |")
            continue
        mhz = statistics.median(x[1] for x in sel)
        watts = statistics.median(x[2] for x in sel)
        temp = max(x[3] for x in sel)
        print(f"| {p['round']} | {p['case']} | {p['side']} | {mhz:.0f} | {watts:.0f} | {temp:.0f} | "
              f"{p['tflops']:.1f} | {p['tflops'] / (mhz / 1000):.1f} |")


if __name__ == "__main__":
    main()
