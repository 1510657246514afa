"""Logit soft-capping (softcap * tanh(score / softcap), Gemma 2's attention) timed side by side:
gpu_attention.flash_attn_func(softcap=...) against torch's compiled FlexAttention with the same
score_mod, and each against the same call without the cap (ours; and torch SDPA's cuDNN backend,
which has no soft-capping: what an uncapped call costs there). Outputs are checked against an
fp64 reference on sampled rows of batch 0 (ours and Flex's). One row a shape: times (do_bench
median, L2 flushed), TFLOP/s, ours/Flex, and what the cap costs each side.

    PYTHONPATH=<build>/python python3 bench/softcap_bench.py [--json F] [--md F] [--cap 50]
        [--only WORD...] [--device cuda|cpu]

--device cpu is a smoke run of the script (our CPU backend, Flex unfused, small shapes).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_common  # noqa: E402

# (label, batch, q heads, kv heads, q length, k length, head dim, causal, dtype). Gemma 2 9B is
# 16 q / 8 kv heads of 256, 27B 32 / 16 of 128 (its query scale aside); decode rows are one query
# a sequence over a cache of Sk keys.
CASES = [
    ("B4 H16 S4096 D128", 4, 16, 16, 4096, 4096, 128, False, "float16"),
    ("B4 H16 S4096 D128 causal", 4, 16, 16, 4096, 4096, 128, True, "float16"),
    ("B2 Hq32 Hkv16 S4096 D128 causal bf16", 2, 32, 16, 4096, 4096, 128, True, "bfloat16"),
    ("B2 Hq16 Hkv8 S4096 D256 causal bf16", 2, 16, 8, 4096, 4096, 256, True, "bfloat16"),
    ("B4 H16 S4096 D64 causal", 4, 16, 16, 4096, 4096, 64, True, "float16"),
    ("B1 H16 S1024 D64", 1, 16, 16, 1024, 1024, 64, False, "float16"),
    ("decode B32 Hq16 Hkv8 Sk4096 D256 bf16", 32, 16, 8, 1, 4096, 256, False, "bfloat16"),
    ("decode B32 Hq32 Hkv8 Sk8192 D128", 32, 32, 8, 1, 8192, 128, False, "float16"),
]
SMOKE_CASES = [
    ("B1 H2 S128 D64 causal", 1, 2, 2, 128, 128, 64, True, "float32"),
    ("decode B2 Hq4 Hkv2 Sk200 D64", 2, 4, 2, 1, 200, 64, False, "float32"),
]


def fail_missing(what, err):
    bench_common.fail_missing("softcap_bench", what, err)


try:
    import torch
except ImportError as e:
    fail_missing("torch", e)
try:
    import torch.nn.attention.flex_attention  # noqa: F401 (score_mod_common's)
except ImportError as e:
    fail_missing("torch.nn.attention.flex_attention (torch >= 2.5)", e)
try:
    import gpu_attention as ga
except ImportError as e:
    fail_missing("gpu_attention (build with GPUATTN_PYTHON=ON, put <build>/python on PYTHONPATH)",
                 e)
import score_mod_common  # noqa: E402
from score_mod_common import f  # noqa: E402


def reference_rows(q, k, v, rows, heads, scale, cap, causal):
    """fp64 soft-capped attention of batch 0's `rows` and `heads` ([B, S, H, D] inputs)."""
    sq, sk = q.shape[1], k.shape[1]
    group = q.shape[2] // k.shape[2]
    out = torch.empty(len(heads), len(rows), q.shape[3], dtype=torch.float64)
    for a, h in enumerate(heads):
        kk = k[0, :, h // group].double().cpu()
        vv = v[0, :, h // group].double().cpu()
        for b, r in enumerate(rows):
            n = min(sk, r + sk - sq + 1) if causal else sk
            s = (kk[:n] @ q[0, r, h].double().cpu()) * scale
            s = cap * torch.tanh(s / cap)
            out[a, b] = torch.softmax(s, 0) @ vv[:n]
    return out


def run_case(case, args, timer, flex, dev, gen):
    cap = args.cap
    x = score_mod_common.Inputs(case, dev, gen, q_times=args.q_times, softcap=cap)

    def softcap_mod(score, bi, hi, qi, ki):
        return cap * torch.tanh(score / cap)

    q, k, v, qf, kf, vf = x.q, x.k, x.v, x.qf, x.kf, x.vf
    sides = {
        "ours": lambda: ga.flash_attn_func(q, k, v, causal=x.causal, softcap=cap),
        "ours_uncapped": lambda: ga.flash_attn_func(q, k, v, causal=x.causal),
        "flex": lambda: flex(qf, kf, vf, score_mod=softcap_mod, block_mask=x.block_mask, **x.gqa),
        "flex_uncapped": lambda: flex(qf, kf, vf, block_mask=x.block_mask, **x.gqa),
    }
    return score_mod_common.run_sides(
        x, sides, "uncapped", "cap_cost",
        lambda rows, heads: reference_rows(q, k, v, rows, heads, x.scale, cap, x.causal), args,
        timer)


def markdown(result):
    lines = [f"### Soft-capped attention (softcap {result['softcap']}): gpu_attention vs "
             f"FlexAttention, {result['device']}, {result['date']}, commit {result['commit']}",
             "", f"{result['torch']}; {result['timer']}; Flex: {result['flex_mode']}. Speed-up: "
             "Flex's time / ours (> 1: ours faster); cap cost: a side's capped time / its "
             "uncapped time. max_err: the largest |out - fp64 reference| over sampled rows.", "",
             "| shape | ours µs | ours TFLOP/s | Flex µs | speed-up vs Flex | ours cap cost | "
             "Flex cap cost | ours uncapped µs | cuDNN uncapped µs | ours max_err | Flex max_err |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result["rows"]:
        us = lambda k: f(r.get(k) and r[k] * 1e3, ".1f")  # noqa: E731
        lines.append(
            f"| {r['case']} | {us('ours_ms')} | {f(r.get('ours_tflops'), '.1f')} | "
            f"{us('flex_ms')} | {f(r.get('ours_over_flex'), '.2f')}x | "
            f"{f(r.get('ours_cap_cost'), '.3f')} | {f(r.get('flex_cap_cost'), '.3f')} | "
            f"{us('ours_uncapped_ms')} | {us('cudnn_uncapped_ms')} | "
            f"{f(r.get('ours_max_err'), '.1e')} | {f(r.get('flex_max_err'), '.1e')} |")
        for k in sorted(r):
            if k.endswith("_error"):
                lines.append(f"|   {k}: {r[k][:200]} |")
    return "\n".join(lines) + "\n"


def add_args(ap):
    ap.add_argument("--cap", type=float, default=50.0, help="softcap (Gemma 2's attention: 50)")
    ap.add_argument("--q-times", type=float, default=8.0,
                    help="q ~ N(0, q_times^2): logits of about q_times sigma, which the cap bends")


def check_args(ap, args):
    if not args.cap > 0:
        ap.error(f"--cap {args.cap} must be > 0")


def main():
    return score_mod_common.main(
        "softcap_bench", __doc__, CASES, SMOKE_CASES, run_case, markdown, add_args, check_args,
        lambda args: dict(softcap=args.cap, q_times=args.q_times))


if __name__ == "__main__":
    sys.exit(main())
