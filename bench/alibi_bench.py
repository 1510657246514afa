"""ALiBi (a bias of -slope_h * |i + Sk - Sq - j| on each score; BLOOM, MPT) timed side by side:
gpu_attention.flash_attn_func(alibi_slopes=...) against torch's compiled FlexAttention with the
same score_mod, and each against the same call without the bias (ours; and torch SDPA's cuDNN
backend, which takes no ALiBi: what an unbiased call costs there). Outputs are checked against an
fp64 reference on sampled rows of batch 0 (ours and Flex's). One row a shape: times (do_bench
median, L2 flushed), TFLOP/s, ours/Flex, and what the bias costs each side. On Hopper our dense
and causal ALiBi calls, and sliding windows alone at head dim 128, run the sm_90a kernels'
instantiations with the bias (docs/kernels.md), decode shapes the decode kernels. A case's 10th
field, when present, is a sliding window (flash-attn's window_size).

    PYTHONPATH=<build>/python python3 bench/alibi_bench.py [--json F] [--md F] [--only WORD...]
        [--device cuda|cpu]

--device cpu is a smoke run of the script (our CPU backend, Flex unfused, small shapes).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_common  # noqa: E402


def fail_missing(what, err):
    bench_common.fail_missing("alibi_bench", what, err)


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

# (label, batch, q heads, kv heads, q length, k length, head dim, causal, dtype). BLOOM-176B is
# 112 heads of 128, MPT-7B 32 of 128 (both ALiBi, no GQA); decode rows are one query a sequence
# over a cache of Sk keys.
CASES = [
    ("B4 H16 S4096 D128", 4, 16, 16, 4096, 4096, 128, False, "float16"),
    ("B4 H16 S4096 D128 causal", 4, 16, 16, 4096, 4096, 128, True, "float16"),
    ("B2 H32 S4096 D128 causal bf16", 2, 32, 32, 4096, 4096, 128, True, "bfloat16"),
    ("B4 H16 S4096 D64 causal", 4, 16, 16, 4096, 4096, 64, True, "float16"),
    ("B2 H8 S4096 D256 causal bf16", 2, 8, 8, 4096, 4096, 256, True, "bfloat16"),
    ("B16 H16 S1024 D128 causal", 16, 16, 16, 1024, 1024, 128, True, "float16"),
    ("decode B32 H32 Sk4096 D128", 32, 32, 32, 1, 4096, 128, False, "float16"),
    ("decode B32 Hq32 Hkv8 Sk8192 D128 bf16", 32, 32, 8, 1, 8192, 128, False, "bfloat16"),
    # Sliding windows (a 10th field: window_size): the timed calls of both sides, and Flex's block
    # mask, skip the tiles outside the window; cuDNN (SDPA) takes no window.
    ("B2 H16 S16384 D128 causal W1024", 2, 16, 16, 16384, 16384, 128, True, "float16",
     (1023, 0)),
    ("B4 H16 S8192 D128 W512+512 bf16", 4, 16, 16, 8192, 8192, 128, False, "bfloat16",
     (512, 512)),
]
SMOKE_CASES = [
    ("B1 H2 S128 D64 causal", 1, 2, 2, 128, 128, 64, True, "float32"),
    ("decode B2 Hq4 Hkv2 Sk200 D64", 2, 4, 2, 1, 200, 64, False, "float32"),
    ("B1 H2 S160 D64 W20+7", 1, 2, 2, 160, 160, 64, False, "float32", (20, 7)),
]


def slopes_of(hq):
    """The ALiBi paper's slopes for hq heads: 2^(-8 (h + 1) / hq)."""
    return [2.0 ** (-8.0 * (h + 1) / hq) for h in range(hq)]


def reference_rows(q, k, v, rows, heads, scale, slopes, causal, window=None):
    """fp64 ALiBi attention of batch 0's `rows` and `heads` ([B, S, H, D] inputs); window: None
    or flash-attn's window_size (left, right), -1 unbounded. Every sampled row sees a key."""
    sq, sk = q.shape[1], k.shape[1]
    group = q.shape[2] // k.shape[2]
    out = torch.empty(len(heads), len(rows), q.shape[3], dtype=torch.float64)
    for a, h in enumerate(heads):
        kk = k[0, :, h // group].double().cpu()
        vv = v[0, :, h // group].double().cpu()
        for b, r in enumerate(rows):
            pos = r + sk - sq
            lo, n = 0, min(sk, pos + 1) if causal else sk
            if window is not None:
                lo = 0 if window[0] < 0 else max(0, pos - window[0])
                if window[1] >= 0:
                    n = min(n, pos + window[1] + 1)
            if n <= lo:
                raise ValueError(f"reference_rows: row {r} sees no key (the cases' rows all do)")
            s = (kk[lo:n] @ q[0, r, h].double().cpu()) * scale
            dist = (torch.arange(lo, n, dtype=torch.float64) - pos).abs()
            s = s - slopes[h] * dist
            out[a, b] = torch.softmax(s, 0) @ vv[lo:n]
    return out


def run_case(case, args, timer, flex, dev, gen):
    window = case[9] if len(case) > 9 else None
    x = score_mod_common.Inputs(case[:9], dev, gen, window=window)
    ws = tuple(window) if window is not None else (-1, -1)
    slope_list = slopes_of(x.hq)
    slopes = torch.tensor(slope_list, device=dev, dtype=torch.float32)
    off = x.sk - x.sq

    def alibi_mod(score, bi, hi, qi, ki):
        return score - slopes[hi] * (qi + off - ki).abs()

    q, k, v, qf, kf, vf = x.q, x.k, x.v, x.qf, x.kf, x.vf
    sides = {
        "ours": lambda: ga.flash_attn_func(q, k, v, causal=x.causal, window_size=ws,
                                           alibi_slopes=slopes),
        "ours_plain": lambda: ga.flash_attn_func(q, k, v, causal=x.causal, window_size=ws),
        "flex": lambda: flex(qf, kf, vf, score_mod=alibi_mod, block_mask=x.block_mask, **x.gqa),
        "flex_plain": lambda: flex(qf, kf, vf, block_mask=x.block_mask, **x.gqa),
    }
    return score_mod_common.run_sides(
        x, sides, "plain", "bias_cost",
        lambda rows, heads: reference_rows(q, k, v, rows, heads, x.scale, slope_list, x.causal,
                                           window),
        args, timer)


def markdown(result):
    lines = [f"### ALiBi attention: gpu_attention vs FlexAttention, {result['device']}, "
             f"{result['date']}, commit {result['commit']}",
             "", f"{result['torch']}; {result['timer']}; Flex: {result['flex_mode']}; slopes "
             "2^(-8 (h + 1) / H). Speed-up: Flex's time / ours (> 1: ours faster); bias cost: a "
             "side's ALiBi time / its time without the bias. max_err: the largest |out - fp64 "
             "reference| over sampled rows.", "",
             "| shape | ours µs | ours TFLOP/s | Flex µs | speed-up vs Flex | ours bias cost | "
             "Flex bias cost | ours plain µs | cuDNN plain µs | ours max_err | Flex max_err |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result["rows"]:
        us = lambda k: f(r.get(k) and r[k] * 1e3, ".1f")  # noqa: E731
        lines.append(
            f"| {r['case']} | {us('ours_ms')} | {f(r.get('ours_tflops'), '.1f')} | "
            f"{us('flex_ms')} | {f(r.get('ours_over_flex'), '.2f')}x | "
            f"{f(r.get('ours_bias_cost'), '.3f')} | {f(r.get('flex_bias_cost'), '.3f')} | "
            f"{us('ours_plain_ms')} | {us('cudnn_plain_ms')} | "
            f"{f(r.get('ours_max_err'), '.1e')} | {f(r.get('flex_max_err'), '.1e')} |")
        for k in sorted(r):
            if k.endswith("_error"):
                lines.append(f"|   {k}: {r[k][:200]} |")
    return "\n".join(lines) + "\n"


def main():
    return score_mod_common.main("alibi_bench", __doc__, CASES, SMOKE_CASES, run_case, markdown)


if __name__ == "__main__":
    sys.exit(main())
