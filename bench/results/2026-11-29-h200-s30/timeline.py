"""s30: runs one decode shape 3 times (synchronized between calls) on a build with
decode-timeline.patch, whose decode kernel printf's one DIAG line per CTA: block, SM, last
(0: not the unit's merger, 1: merged the splits, 2: one split), and %globaltimer (ns) at entry,
after Q and the first tile landed, after the tile loop, after the split's rows were left and
counted in, at the end. Then summarizes the last call's lines.

    python3 timeline.py run SHAPE > log      (the build's python on PYTHONPATH)
    python3 timeline.py summary log
"""
import statistics
import sys

SHAPES = {  # dtype, B, Hq, Hkv, Sk, D
    "b1d128": ("bfloat16", 1, 32, 8, 4096, 128),
    "b8d128": ("bfloat16", 8, 32, 8, 4096, 128),
    "mqa64": ("float16", 4, 16, 1, 8192, 64),
    "b1sk32k": ("float16", 1, 32, 8, 32768, 128),
}


def run(shape):
    import torch
    import gpu_attention as ga
    dt, b, hq, hkv, sk, d = SHAPES[shape]
    dtype = getattr(torch, dt)
    q = torch.randn(b, 1, hq, d, device="cuda", dtype=dtype)
    k = torch.randn(b, sk, hkv, d, device="cuda", dtype=dtype)
    v = torch.randn_like(k)
    for _ in range(3):
        ga.flash_attn_func(q, k, v)
        torch.cuda.synchronize()


def summary(path):
    rows = []
    for line in open(path):
        if line.startswith("DIAG "):
            f = line.split()
            rows.append([int(x) for x in f[1:]])
    rows.sort(key=lambda r: r[3])
    groups, cur = [], []
    for r in rows:
        if cur and r[3] - cur[-1][3] > 200_000:
            groups.append(cur)
            cur = []
        cur.append(r)
    if cur:
        groups.append(cur)
    g = groups[-1]
    t0 = min(r[3] for r in g)

    def us(x):
        return (x - t0) / 1000.0

    def stats(name, vals):
        vals = sorted(vals)
        print(f"  {name:34s} min {vals[0]:7.2f}  med {statistics.median(vals):7.2f}  "
              f"max {vals[-1]:7.2f} us")

    print(f"{path}: {len(groups)} calls, last: {len(g)} CTAs on {len(set(r[1] for r in g))} SMs")
    stats("entry (from the first CTA's)", [us(r[3]) for r in g])
    stats("entry -> Q + first tile landed", [(r[4] - r[3]) / 1e3 for r in g if r[4]])
    stats("first tile -> loop done", [(r[5] - r[4]) / 1e3 for r in g if r[4]])
    stats("loop done -> rows left, counted in", [(r[6] - r[5]) / 1e3 for r in g if r[5]])
    stats("loop done (from the first entry)", [us(r[5]) for r in g if r[5]])
    m = [r for r in g if r[2] == 1]
    if m:
        stats("merge (last CTA of a unit)", [(r[7] - r[6]) / 1e3 for r in m])
    stats("end (from the first entry)", [us(r[8]) for r in g])
    print(f"  kernel span (first entry -> last end)   {max(us(r[8]) for r in g):7.2f} us")


def summary2(path):
    """decode-diag3.patch's DIAG2 lines: block, SM, last, splits, %globaltimer at entry, at the
    merge's start (the tile loop and the warps' merge done), after the count-in, at the end."""
    rows = []
    for line in open(path):
        if line.startswith("DIAG2 "):
            rows.append([int(x) for x in line.split()[1:]])
    rows.sort(key=lambda r: r[4])
    groups, cur = [], []
    for r in rows:
        if cur and r[4] - cur[-1][4] > 200_000:
            groups.append(cur)
            cur = []
        cur.append(r)
    groups.append(cur)
    g = groups[-1]
    t0 = min(r[4] for r in g)

    def stats(name, vals):
        vals = sorted(vals)
        print(f"  {name:34s} min {vals[0]:7.2f}  med {statistics.median(vals):7.2f}  "
              f"max {vals[-1]:7.2f} us")

    print(f"{path}: {len(groups)} calls, last: {len(g)} CTAs, splits {g[0][3]}")
    stats("entry -> merge start", [(r[5] - r[4]) / 1e3 for r in g])
    stats("merge start -> counted in", [(r[6] - r[5]) / 1e3 for r in g])
    stats("merge (last CTA of a unit)", [(r[7] - r[6]) / 1e3 for r in g if r[2]])
    stats("end (from the first entry)", [(r[7] - t0) / 1e3 for r in g])


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(sys.argv[2])
    elif sys.argv[1] == "summary2":
        summary2(sys.argv[2])
    else:
        summary(sys.argv[2])
