"""torch SDPA anchors on the shapes of `gpuattn bench`: FlashAttention-2 ('flash') and cuDNN.

Times F.scaled_dot_product_attention with triton's do_bench (median; the L2 is flushed before
every run) on the same shapes, dtypes and memory layout ([B, S, H, D], as gpuattn takes them) as
the bench's shape sets, counts FLOPs the way gpuattn does (causal: visible elements only), prints
a table last and writes JSON rows that scripts/gpu-check.sh joins with bench.json.

    python3 bench/torch_anchors.py [--shapes default|seed|quick|sweep] [--layout bshd|bhsd]
                                   [--json FILE]

sweep: the FA3 figure's grid (fp16, B*S = 16k tokens, H*D = 2048, S 512..16384, D 64 and 128,
causal and not; shorter do_bench windows by default); bench/plot_sweep.py plots it.
"""
import argparse
import datetime
import json
import sys

# (dtype, B, H, S, D, causal): keep in step with cuda_shapes() in tools/gpuattn/bench.cpp.
DEFAULT = [
    ("float16", 1, 16, 1024, 64, False),
    ("float16", 4, 16, 4096, 128, False),
    ("float16", 4, 16, 4096, 128, True),
    ("bfloat16", 4, 16, 4096, 128, False),
    ("bfloat16", 4, 16, 4096, 128, True),
    ("float16", 1, 32, 32768, 128, True),
    ("float16", 16, 16, 1024, 128, True),
    ("float16", 4, 32, 4096, 64, False),
    ("float16", 4, 8, 4096, 256, False),
]
# The FA3 paper's sweep convention: B*S = 16k tokens, hidden H*D = 2048, fp16, head dims 64, 128
# and 256. Keep in step with sweep_shapes() in tools/gpuattn/bench.cpp.
SWEEP_TOKENS, SWEEP_HIDDEN = 16384, 2048
SWEEP = [("float16", SWEEP_TOKENS // s, SWEEP_HIDDEN // d, s, d, c)
         for d in (64, 128, 256) for c in (False, True) for s in (512, 1024, 2048, 4096, 8192, 16384)]
SEED = [(b, s) for b, s in ((1, 1024), (2, 2048), (4, 4096), (1, 8192), (2, 16384), (1, 32768),
                            (1, 65536))]


def shapes(which):
    if which == "sweep":
        return SWEEP
    if which == "quick":
        return DEFAULT[:3]
    if which == "seed":
        return DEFAULT + [("float16", b, 32, s, 128, c) for b, s in SEED for c in (False, True)]
    return DEFAULT


def attention_flops(b, h, sq, sk, d, causal):
    """4 * D * H * (visible (query, key) pairs), bottom-right aligned causal, as gpuattn counts."""
    if not causal:
        visible = sq * sk
    else:
        visible = sum(min(max(i + sk - sq + 1, 0), sk) for i in range(sq))
    return 4.0 * b * h * d * visible


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", choices=["default", "seed", "quick", "sweep"], default="default")
    ap.add_argument("--layout", choices=["bshd", "bhsd"], default="bshd",
                    help="memory layout of q/k/v (bshd: as gpuattn; bhsd: contiguous for SDPA)")
    ap.add_argument("--json", default="", help="write the results to this file")
    ap.add_argument("--warmup-ms", type=int, default=None,
                    help="do_bench warm-up window (default 25 ms; sweep 10 ms)")
    ap.add_argument("--rep-ms", type=int, default=None,
                    help="do_bench timing window (default 200 ms; sweep 100 ms)")
    args = ap.parse_args()
    sweep = args.shapes == "sweep"
    if args.warmup_ms is None:
        args.warmup_ms = 10 if sweep else 25
    if args.rep_ms is None:
        args.rep_ms = 100 if sweep else 200

    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from triton.testing import do_bench

    if not torch.cuda.is_available():
        print("torch_anchors: no CUDA device", file=sys.stderr)
        return 1
    torch.manual_seed(0)
    backends = [("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)]
    device_name = torch.cuda.get_device_name()
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {device_name}",
          flush=True)

    results = []
    for (dt, b, h, s, d, causal) in shapes(args.shapes):
        dtype = getattr(torch, dt)

        def make():
            if args.layout == "bshd":  # [B, S, H, D] memory, viewed as [B, H, S, D]
                return torch.randn(b, s, h, d, device="cuda", dtype=dtype).transpose(1, 2)
            return torch.randn(b, h, s, d, device="cuda", dtype=dtype)

        q, k, v = make(), make(), make()
        flops = attention_flops(b, h, s, s, d, causal)
        for name, backend in backends:
            row = dict(backend=name, dtype=dt, batch=b, hq=h, hkv=h, seqlen_q=s, seqlen_k=s,
                       head_dim=d, causal=causal, layout=args.layout, flops=flops, ms=None,
                       tflops=None, us_per_head=None, error="")
            try:
                with sdpa_kernel(backend):
                    fn = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    fn()
                    ms = do_bench(fn, warmup=args.warmup_ms, rep=args.rep_ms,
                                  return_mode="median")
                row.update(ms=ms, tflops=flops / (ms * 1e-3) / 1e12, us_per_head=ms * 1e3 / (b * h))
            except Exception as e:  # a backend that refuses a shape is a result, not a crash
                row["error"] = f"{type(e).__name__}: {str(e)[:200]}"
            results.append(row)
            label = f"{dt} B{b} H{h} S{s} D{d}{' causal' if causal else ''}"
            status = (f"{row['ms'] * 1e3:.1f} us, {row['tflops']:.1f} TFLOP/s" if row["ms"]
                      else row["error"])
            print(f"{name:6s} {label}: {status}", flush=True)
        del q, k, v
        torch.cuda.empty_cache()

    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(tool="torch_anchors", torch=torch.__version__,
                           cudnn=torch.backends.cudnn.version(), device_name=device_name,
                           date=datetime.datetime.now(datetime.timezone.utc).isoformat(),
                           layout=args.layout, shapes=args.shapes,
                           timing=f"triton do_bench median, warmup {args.warmup_ms} ms, "
                                  f"rep {args.rep_ms} ms, L2 flushed",
                           results=results), f, indent=1)

    print()
    header = f"{'backend':7s} {'dtype':9s} {'shape':24s} {'causal':>6s} {'time_us':>10s} " \
             f"{'us/head':>9s} {'TFLOP/s':>8s}"
    print(header)
    print("-" * len(header))
    for r in results:
        shape = f"B{r['batch']} H{r['hq']} S{r['seqlen_q']} D{r['head_dim']}"
        if r["ms"] is None:
            print(f"{r['backend']:7s} {r['dtype']:9s} {shape:24s} {str(r['causal']):>6s} "
                  f"{'failed':>10s}")
            continue
        print(f"{r['backend']:7s} {r['dtype']:9s} {shape:24s} {'yes' if r['causal'] else 'no':>6s} "
              f"{r['ms'] * 1e3:10.1f} {r['us_per_head']:9.3f} {r['tflops']:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
