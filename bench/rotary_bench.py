"""Rotary embedding: apply_rotary_emb over packed (varlen) batches, and flash_attn_with_kvcache's
rotary decode step.

Varlen rows, per case (x (total, H, D), NeoX pairs over the whole head dim, offsets an int32
array on the device):
- "ours": apply_rotary_emb(cu_seqlens=, max_seqlen=), one launch (bounds and offsets checked on
  one host copy);
- "per-seq": the same rotation one sequence at a time ((1, len, H, D) slices, an int offset each),
  the way apply_rotary_emb ran packed batches before RotaryArgs::cu_seqlens;
- "torch": the anchor, torch eager arithmetic (gather cos/sin by position, float32 products,
  cast back) with the positions precomputed on the device outside the timing.
Decode rows: flash_attn_with_kvcache(q, k_cache, v_cache, k, v, cache_seqlens) with and without
rotary_cos/rotary_sin (every call appends the same row at the same slots), checked and unchecked
(check_indices=False).
do_bench (L2 flushed) times whole calls, host side included; rows timed in turn for --repeats
rounds, medians reported. max_diff is the largest |row - torch| (varlen) in float32.
--device cpu: a smoke run on small shapes (the CPU backend, a perf_counter timer), for the tests.

    PYTHONPATH=build-gpu/python python3 bench/rotary_bench.py [--json out.json] [--md out.md]
        [--repeats N] [--device cpu]
"""
import argparse
import statistics

import bench_common
import torch

import gpu_attention as ga

VARLEN_CASES = [  # dtype, H, D, lengths: (count, lo, hi) drawn uniformly in [lo, hi]
    (torch.bfloat16, 32, 128, (8, 512, 2048)),     # a prefill pack
    (torch.bfloat16, 32, 128, (128, 1, 16)),       # many short sequences
    (torch.bfloat16, 8, 128, (256, 1, 1)),         # one new key row a sequence
]
DECODE_CASES = [(torch.bfloat16, 32, 32, 8, 4096, 128)]  # dtype, B, Hq, Hkv, cache length, D
SMOKE_VARLEN = [(torch.float32, 2, 64, (5, 0, 9))]
SMOKE_DECODE = [(torch.float32, 2, 4, 2, 64, 64)]


def table(n, half, dtype, dev):
    inv = 10000.0 ** (-torch.arange(half, dtype=torch.float64) / half)
    ang = torch.arange(n, dtype=torch.float64)[:, None] * inv[None, :]
    return ang.cos().to(dtype).to(dev), ang.sin().to(dtype).to(dev)


def torch_rotary(x, cos, sin, pos):
    """The anchor: NeoX pairs over 2 * cos.shape[1] features, float32 products, one rounding."""
    half = cos.shape[1]
    c, s = cos[pos].float()[:, None, :], sin[pos].float()[:, None, :]
    x1, x2 = x[..., :half].float(), x[..., half:2 * half].float()
    return torch.cat([x1 * c - x2 * s, x1 * s + x2 * c, x[..., 2 * half:].float()],
                     dim=-1).to(x.dtype)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json")
    ap.add_argument("--md")
    a = ap.parse_args()
    if a.repeats < 1:
        ap.error(f"--repeats {a.repeats} must be >= 1")
    dev = torch.device(a.device)
    timer, how = bench_common.do_bench_timer("rotary_bench.py", 25, 100, dev, "the calls")
    gen = torch.Generator().manual_seed(0)
    rows = []

    def timed(label, calls, anchor, check=None):
        times = {name: [] for name in calls}
        for _ in range(a.repeats):
            for name, fn in calls.items():
                times[name].append(timer(fn))
        base = statistics.median(times[anchor])
        for name, fn in calls.items():
            ms = statistics.median(times[name])
            rows.append(dict(shape=label, row=name, ms=ms, ratio=ms / base,
                             max_diff=check(fn()) if check else None))

    for dtype, h, d, (count, lo, hi) in (SMOKE_VARLEN if dev.type == "cpu" else VARLEN_CASES):
        lens = torch.randint(lo, hi + 1, (count,), generator=gen)
        lens[0] = max(int(lens[0]), 1)
        cu = torch.cat([torch.zeros(1, dtype=torch.int64), lens.cumsum(0)]).to(torch.int32)
        total, longest = int(cu[-1]), int(lens.max())
        offs = torch.randint(0, 64, (count,), generator=gen, dtype=torch.int32)
        cos, sin = table(longest + 64, d // 2, dtype, dev)
        x = torch.randn(total, h, d, generator=gen).to(dtype).to(dev)
        cu_d, offs_d = cu.to(dev), offs.to(dev)
        seq = torch.repeat_interleave(torch.arange(count), lens)
        pos = (torch.arange(total) - cu[:-1].long()[seq] + offs.long()[seq]).to(dev)
        bounds = [(int(cu[b]), int(cu[b + 1]), int(offs[b])) for b in range(count)]

        def per_seq():
            out = torch.empty_like(x)
            for s, e, o in bounds:
                if e > s:
                    out[s:e] = ga.apply_rotary_emb(x[s:e][None], cos, sin, seqlen_offsets=o)[0]
            return out

        want = torch_rotary(x, cos, sin, pos).float()
        calls = {
            "torch": lambda: torch_rotary(x, cos, sin, pos),
            "ours": lambda: ga.apply_rotary_emb(x, cos, sin, seqlen_offsets=offs_d,
                                                cu_seqlens=cu_d, max_seqlen=longest),
            "per-seq": per_seq,
        }
        label = (f"varlen {str(dtype).split('.')[-1]} {count} seqs of {lo}-{hi} rows "
                 f"(total {total}) H{h} D{d}")
        timed(label, calls, "torch", lambda got: (got.float() - want).abs().max().item())

    for dtype, b, hq, hkv, cap, d in (SMOKE_DECODE if dev.type == "cpu" else DECODE_CASES):
        q = torch.randn(b, 1, hq, d, generator=gen).to(dtype).to(dev)
        kc = torch.randn(b, cap, hkv, d, generator=gen).to(dtype).to(dev)
        vc = torch.randn(b, cap, hkv, d, generator=gen).to(dtype).to(dev)
        k = torch.randn(b, 1, hkv, d, generator=gen).to(dtype).to(dev)
        v = torch.randn(b, 1, hkv, d, generator=gen).to(dtype).to(dev)
        used = torch.randint(cap // 2, cap, (b,), generator=gen, dtype=torch.int32).to(dev)
        cos, sin = table(cap, d // 2, dtype, dev)

        def step(rotary, checked):
            extra = dict(rotary_cos=cos, rotary_sin=sin, rotary_interleaved=False) if rotary else {}
            return ga.flash_attn_with_kvcache(q, kc, vc, k=k, v=v, cache_seqlens=used, causal=True,
                                              check_indices=checked, **extra)

        calls = {
            "plain": lambda: step(False, True),
            "rotary": lambda: step(True, True),
            "plain u": lambda: step(False, False),
            "rotary u": lambda: step(True, False),
        }
        label = f"decode {str(dtype).split('.')[-1]} B{b} Hq{hq} Hkv{hkv} L{cap} D{d} + 1 key"
        timed(label, calls, "plain")

    md = [f"rotary_bench.py, {how}, commit {bench_common.git_commit()}", "",
          "| case | row | ms | / first row | max_diff |", "|---|---|---:|---:|---:|"]
    md += [f"| {r['shape']} | {r['row']} | {r['ms']:.4f} | {r['ratio']:.3f} | "
           f"{'' if r['max_diff'] is None else format(r['max_diff'], '.2e')} |" for r in rows]
    text = "\n".join(md) + "\n"
    print(text, end="")
    bench_common.write_outputs(dict(commit=bench_common.git_commit(), timer=how, rows=rows), text,
                               a.json, a.md)


if __name__ == "__main__":
    main()
