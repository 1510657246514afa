"""Plots the FA3-style sweep: TFLOP/s vs sequence length, ours against torch SDPA's FA2 and cuDNN.

Reads `gpuattn bench --shapes sweep --json FILE` (ours, default dispatch: sm_90a on Hopper),
optionally the same run with GPUATTN_KERNEL=sm80 (the portable kernel), and
`bench/torch_anchors.py --shapes sweep --json FILE`; writes a PNG with one panel per (head dim,
causal) and prints a markdown table of the same numbers with the ratios ours/cuDNN and ours/FA2
(ratios of times of the same shape). A shape whose bench row holds an error shows no point.
With --turns (bench/compare_torch.py's JSON of the sweep's points: ours, cuDNN and FA2 timed in
turn, one protocol, in rounds), ours and the anchors come from it instead: gpuattn bench and
torch_anchors.py are separate runs with their own timers, minutes apart, and moved single points'
ratios by -4% to +9% against the in-turn ones (session 60).

    python3 bench/plot_sweep.py --bench sweep.json [--bench-sm80 sweep-sm80.json]
                                --anchors sweep-anchors.json [--turns sweep-turns.json]
                                [--png sweep.png] [--md sweep.md]

Exits 2 when an input is missing or holds no results, 1 when the PNG could not be written (the
table is printed all the same).
"""
import argparse
import json
import os
import sys

NOTE = "ratios are times of the same shape (>1: ours faster)"


def fail(msg, code=2):
    print(f"plot_sweep: {msg}", file=sys.stderr)
    sys.exit(code)


def load(path, flag, producer):
    if not os.path.isfile(path):
        fail(f"{flag} {path}: no such file (make it with `{producer}`)")
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{flag} {path}: not readable JSON ({e})")
    if not isinstance(data, dict) or not data.get("results"):
        fail(f"{flag} {path}: no results in it (make it with `{producer}`)")
    if data.get("shapes") != "sweep":
        print(f"plot_sweep: warning: {flag} {path} was run with --shapes "
              f"{data.get('shapes')!r}, not 'sweep'", file=sys.stderr)
    return data


def key(r):
    return (r["dtype"], r["batch"], r["hq"], r["seqlen_q"], r["seqlen_k"], r["head_dim"],
            bool(r["causal"]))


def tflops(flops, ms):
    return flops / (ms * 1e-3) / 1e12 if (flops and ms) else None


def f(x, digits=1):
    return "n/a" if x is None else f"{x:.{digits}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", required=True,
                    help="gpuattn bench --shapes sweep JSON (ours, default dispatch)")
    ap.add_argument("--bench-sm80", default="",
                    help="the same with GPUATTN_KERNEL=sm80 (optional)")
    ap.add_argument("--anchors", default="",
                    help="bench/torch_anchors.py --shapes sweep JSON (FA2 and cuDNN); "
                         "leave out only for a plot of ours alone")
    ap.add_argument("--turns", default="",
                    help="bench/compare_torch.py JSON of the sweep's points timed in turn "
                         "(optional; replaces ours and the anchors where it has the shape)")
    ap.add_argument("--png", default="sweep.png", help="output PNG (default sweep.png)")
    ap.add_argument("--md", default="", help="also write the table (markdown) to this file")
    args = ap.parse_args()

    bench_cmd = "gpuattn bench --device cuda --shapes sweep --json FILE"
    bench = load(args.bench, "--bench", bench_cmd)
    bench80 = (load(args.bench_sm80, "--bench-sm80", "GPUATTN_KERNEL=sm80 " + bench_cmd)
               if args.bench_sm80 else None)
    anchors = (load(args.anchors, "--anchors",
                    "python3 bench/torch_anchors.py --shapes sweep --json FILE")
               if args.anchors else None)

    turns = {}
    if args.turns:
        if not os.path.isfile(args.turns):
            fail(f"--turns {args.turns}: no such file (make it with bench/compare_torch.py --json)")
        try:
            with open(args.turns) as fh:
                turns_data = json.load(fh)
            for c in turns_data["cases"]:
                turns[(c["batch"], c["heads_q"], c["seqlen_q"], c["seqlen_k"], c["head_dim"],
                       bool(c["causal"]))] = c
        except (OSError, ValueError, KeyError, TypeError) as e:
            fail(f"--turns {args.turns}: not compare_torch.py's JSON ({type(e).__name__}: {e})")
    sm80 = {key(r): r for r in (bench80 or {}).get("results", [])}
    anchor = {}
    for r in (anchors or {}).get("results", []):
        anchor.setdefault(key(r), {})[r["backend"]] = r

    # series[(d, causal)][name] = [(S, TFLOP/s or None)]
    names = ["ours (sm90a, default)"] + (["ours (sm80 kernel)"] if bench80 else []) + \
        (["SDPA FA2", "SDPA cuDNN"] if anchors else [])
    series = {}
    rows = []
    for r in sorted(bench["results"], key=lambda r: (r["head_dim"], bool(r["causal"]),
                                                     r["seqlen_q"])):
        k = key(r)
        ours_ms = r.get("ours_ms") if not r.get("error") else None
        s80 = sm80.get(k, {})
        s80_ms = s80.get("ours_ms") if not s80.get("error") else None
        a = anchor.get(k, {})
        fa_ms = a.get("flash", {}).get("ms")
        cd_ms = a.get("cudnn", {}).get("ms")
        flops = r["flops"]
        fa_flops = a.get("flash", {}).get("flops") or flops
        cd_flops = a.get("cudnn", {}).get("flops") or flops
        t = turns.get((r["batch"], r["hq"], r["seqlen_q"], r["seqlen_k"], r["head_dim"],
                       bool(r["causal"])))
        if t is not None:  # the in-turn times: one protocol for ours and the anchors
            ours_ms = t.get("ours_ms")
            fa_ms, cd_ms = t.get("flash_ms"), t.get("cudnn_ms")
            flops = fa_flops = cd_flops = t["flops"]
        vals = {"ours (sm90a, default)": tflops(flops, ours_ms),
                "ours (sm80 kernel)": tflops(flops, s80_ms),
                "SDPA FA2": tflops(fa_flops, fa_ms),
                "SDPA cuDNN": tflops(cd_flops, cd_ms)}
        panel = series.setdefault((r["head_dim"], bool(r["causal"])), {n: [] for n in names})
        for n in names:
            panel[n].append((r["seqlen_q"], vals[n]))
        ratio = lambda ms: ms / ours_ms if (ms and ours_ms) else None
        row = [str(r["head_dim"]), "yes" if r["causal"] else "no", str(r["seqlen_q"]),
               str(r["batch"]), str(r["hq"]), f(vals["ours (sm90a, default)"])]
        if bench80:
            row.append(f(vals["ours (sm80 kernel)"]))
        if anchors:
            row += [f(vals["SDPA FA2"]), f(vals["SDPA cuDNN"]), f(ratio(cd_ms), 2),
                    f(ratio(fa_ms), 2)]
        if bench80 and anchors:
            row.append(f(fa_ms / s80_ms if (fa_ms and s80_ms) else None, 2))
        rows.append(row)

    header = ["D", "causal", "S", "B", "H", "ours TFLOP/s"]
    if bench80:
        header.append("sm80 TFLOP/s")
    if anchors:
        header += ["FA2 TFLOP/s", "cuDNN TFLOP/s", "ours/cuDNN", "ours/FA2"]
    if bench80 and anchors:
        header.append("sm80/FA2")

    device = bench.get("device_name", "?")
    where = f"{device}, {bench.get('date', '?')}, commit {bench.get('commit', '?')}"
    lines = [f"sweep (fp16, B*S = 16k tokens, H*D = 2048, FA3's grid) on {where}"]
    if bench.get("device") == "cpu":
        lines.append("cpu backend: the scaled-down grid (B*S = 512, H*D = 256), not the FA3 shapes")
    if anchors:
        lines.append(f"anchors: torch {anchors.get('torch')}, cuDNN {anchors.get('cudnn')}, "
                     f"layout {anchors.get('layout')}, {anchors.get('timing')}")
        if anchors.get("device_name") not in (None, device):
            lines.append(f"WARNING: anchors ran on {anchors.get('device_name')}")
    if turns:
        lines.append(f"ours, FA2 and cuDNN: timed in turn by bench/compare_torch.py "
                     f"({turns_data.get('timer')}, commit {turns_data.get('commit')}) at the "
                     f"{len(turns)} points it has; the sm80 column, where shown, is gpuattn "
                     f"bench's separate run")
    lines.append(NOTE)
    lines.append("")
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join("---" if i < 2 else "---:" for i in range(len(header))) + "|")
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    text = "\n".join(lines)
    print(text)
    if args.md:
        with open(args.md, "w") as out:
            out.write(text + "\n")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        fail(f"cannot write {args.png}: matplotlib not importable ({e})", 1)

    panels = sorted(series)
    cols = 2 if len(panels) > 1 else 1
    nrows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(6.4 * cols, 4.4 * nrows), squeeze=False)
    style = {"ours (sm90a, default)": dict(color="tab:red", marker="o", linewidth=2.2),
             "ours (sm80 kernel)": dict(color="tab:orange", marker="s", linestyle="--"),
             "SDPA FA2": dict(color="tab:blue", marker="^"),
             "SDPA cuDNN": dict(color="tab:green", marker="D")}
    for ax, (d, causal) in zip(axes.flat, panels):
        seqlens = [s for s, _ in series[(d, causal)][names[0]]]
        for n in names:
            pts = [(s, v) for s, v in series[(d, causal)][n] if v is not None]
            if pts:
                ax.plot([s for s, _ in pts], [v for _, v in pts], label=n, **style[n])
        ax.set_xscale("log", base=2)
        ax.set_xticks(seqlens)
        ax.set_xticklabels([f"{s // 1024}k" if s >= 1024 else str(s) for s in seqlens])
        ax.set_ylim(bottom=0)
        ax.set_xlabel("sequence length")
        ax.set_ylabel("TFLOP/s")
        ax.set_title(f"head dim {d}, {'causal' if causal else 'non-causal'}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    versions = (f"; anchors: torch {anchors.get('torch')}, cuDNN {anchors.get('cudnn')}"
                if anchors else "")
    protocol = "; ours and SDPA timed in turn (compare_torch)" if turns else ""
    fig.suptitle(f"Attention forward, fp16, B*S = 16k tokens, H*D = 2048: TFLOP/s vs sequence "
                 f"length\n{where}{versions}{protocol}", fontsize=10)
    fig.tight_layout()
    try:
        fig.savefig(args.png, dpi=110)
    except OSError as e:
        fail(f"cannot write {args.png}: {e}", 1)
    print(f"\nwrote {args.png}" + (f" and {args.md}" if args.md else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
