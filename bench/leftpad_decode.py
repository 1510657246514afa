"""flash_attn_with_kvcache with cache_leftpad against the same keys without it: what reading
keys from a per-sequence start costs (the library's leftpad_k: the decode kernel starts each
sequence's rows at its pad; other calls run the sm_80 kernel, as with cache_seqlens).

For each shape, sequence b holds keys pad[b] .. used[b] of its cache row (pads random in
[0, --max-pad], lengths random in the last eighth of the cache). "plain" is the call without
cache_leftpad on a copy of the cache whose rows start at the pad (cache_seqlens = used - pad: the
same keys, dense); "leftpad" the call on the padded cache, its cache_seqlens and cache_leftpad
checked on a host copy; the "u" rows the same with check_indices=False (no host copy). do_bench
(L2 flushed) times the whole call, host side included; the rows of a shape are timed in turn for
--repeats rounds and the median reported. max_diff is the largest |out - plain's out|.
--page P: both caches cut into pages of P keys in a shuffled pool read through a block_table
(the pads then count logical keys; decode calls read the pages in place from the pad, as they read
a dense cache). --pad-multiple M: pads rounded down to multiples of M. --device cpu: a smoke run on small shapes (the CPU backend, a perf_counter timer),
for the tests.

    PYTHONPATH=build-gpu/python python3 bench/leftpad_decode.py [--json out.json] [--md out.md]
        [--repeats N] [--page P] [--pad-multiple M] [--device cpu]
"""
import argparse
import statistics

import bench_common
import torch

import gpu_attention as ga

CASES = [  # dtype, B, Sq, Hq, Hkv, cache length, D
    (torch.bfloat16, 32, 1, 32, 8, 4096, 128),
    (torch.bfloat16, 8, 1, 32, 8, 32768, 128),
    (torch.float16, 16, 4, 16, 16, 2048, 64),
    (torch.bfloat16, 4, 256, 32, 8, 4096, 128),  # not a decode call: the gathered path
]
SMOKE_CASES = [(torch.float32, 2, 1, 4, 2, 70, 64), (torch.float32, 2, 5, 2, 2, 40, 128)]


def to_pages(k, v, page, gen):
    """Caches [b, cap, h, d] as a pool of pages of `page` keys in a shuffled order, and the block
    table [b, cap / page] (int32, on the caches' device) that reads them as they were."""
    b, cap = k.shape[0], k.shape[1]
    per_seq = cap // page
    order = torch.randperm(b * per_seq, generator=gen)
    pool_k = torch.empty((b * per_seq, page) + tuple(k.shape[2:]), dtype=k.dtype, device=k.device)
    pool_v = torch.empty_like(pool_k)
    pool_k[order.to(k.device)] = k.reshape((b * per_seq, page) + tuple(k.shape[2:]))
    pool_v[order.to(k.device)] = v.reshape((b * per_seq, page) + tuple(v.shape[2:]))
    table = order.reshape(b, per_seq).to(torch.int32).to(k.device)
    return pool_k, pool_v, table


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-pad", type=int, default=256)
    ap.add_argument("--page", type=int, default=0, help="page size (0: dense caches)")
    ap.add_argument("--pad-multiple", type=int, default=1,
                    help="pads rounded down to a multiple of this (16: whole warps' rows a page)")
    ap.add_argument("--json")
    ap.add_argument("--md")
    a = ap.parse_args()
    if a.repeats < 1 or a.max_pad < 0 or a.page < 0 or a.pad_multiple < 1:
        ap.error(f"--repeats {a.repeats} must be >= 1, --max-pad {a.max_pad} >= 0, --page "
                 f"{a.page} >= 0 and --pad-multiple {a.pad_multiple} >= 1")
    dev = torch.device(a.device)
    timer, how = bench_common.do_bench_timer("leftpad_decode.py", 25, 100, dev, "the calls")
    gen = torch.Generator().manual_seed(0)
    rows = []
    for dtype, b, sq, hq, hkv, cap, d in (SMOKE_CASES if dev.type == "cpu" else CASES):
        max_pad = min(a.max_pad, cap // 2)
        used = torch.randint(cap - cap // 8, cap + 1, (b,), generator=gen, dtype=torch.int32)
        pad = torch.randint(0, max_pad + 1, (b,), generator=gen, dtype=torch.int32)
        pad = pad // a.pad_multiple * a.pad_multiple
        q = torch.randn(b, sq, hq, d, generator=gen).to(dtype).to(dev)
        kc = torch.randn(b, cap, hkv, d, generator=gen).to(dtype).to(dev)
        vc = torch.randn(b, cap, hkv, d, generator=gen).to(dtype).to(dev)
        ks, vs = torch.zeros_like(kc), torch.zeros_like(vc)  # rows from the pad on, at row 0
        for i in range(b):
            n = int(used[i] - pad[i])
            ks[i, :n], vs[i, :n] = kc[i, pad[i]:used[i]], vc[i, pad[i]:used[i]]
        used_d, pad_d, n_d = used.to(dev), pad.to(dev), (used - pad).to(dev)
        paged = {}
        if a.page:
            if cap % a.page:
                ap.error(f"--page {a.page} must divide the cache length {cap}")
            ks, vs, table = to_pages(ks, vs, a.page, gen)
            kc, vc, paged["block_table"] = to_pages(kc, vc, a.page, gen)
            plain_paged = dict(block_table=table)
        else:
            plain_paged = {}
        calls = {
            "plain": lambda: ga.flash_attn_with_kvcache(q, ks, vs, cache_seqlens=n_d, causal=True,
                                                        **plain_paged),
            "plain u": lambda: ga.flash_attn_with_kvcache(q, ks, vs, cache_seqlens=n_d, causal=True,
                                                          check_indices=False, **plain_paged),
            "leftpad": lambda: ga.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=used_d,
                                                          cache_leftpad=pad_d, causal=True,
                                                          **paged),
            "leftpad u": lambda: ga.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=used_d,
                                                            cache_leftpad=pad_d, causal=True,
                                                            check_indices=False, **paged),
        }
        base = calls["plain"]().float()
        times = {name: [] for name in calls}
        for _ in range(a.repeats):
            for name, fn in calls.items():
                times[name].append(timer(fn))
        label = (f"{str(dtype).split('.')[-1]} B{b} Sq{sq} Hq{hq} Hkv{hkv} L{cap} D{d}"
                 + (f" page{a.page}" if a.page else ""))
        for name, fn in calls.items():
            ms = statistics.median(times[name])
            diff = (fn().float() - base).abs().max().item()
            anchor = "plain u" if name.endswith(" u") else "plain"
            rows.append(dict(shape=label, row=name, ms=ms, max_diff=diff,
                             ratio=ms / statistics.median(times[anchor])))
    md = [f"leftpad_decode.py, {how}, commit {bench_common.git_commit()}"
          + (f", pages of {a.page} keys" if a.page else "")
          + (f", pads multiples of {a.pad_multiple}" if a.pad_multiple > 1 else ""), "",
          "| shape | row | ms | / plain (u: / plain u) | max_diff |", "|---|---|---:|---:|---:|"]
    md += [f"| {r['shape']} | {r['row']} | {r['ms']:.4f} | {r['ratio']:.3f} | {r['max_diff']:.2e} |"
           for r in rows]
    text = "\n".join(md) + "\n"
    print(text, end="")
    bench_common.write_outputs(dict(commit=bench_common.git_commit(), timer=how, page=a.page,
                                    pad_multiple=a.pad_multiple, rows=rows), text, a.json, a.md)


if __name__ == "__main__":
    main()
