"""Joins the JSON files of scripts/ab.sh: per case, the median time over rounds of side A and of
side B, and B/A (< 1: B is faster); then, for the gpuattn bench cases, the geometric mean of B/A
by head dim, causal or not, and sequence length up to 2048 or above. A change to per-item work
(prologue, epilogue) shows at the short lengths; the long ones, where it is a small part of the
time, show the run's noise. Last, the kernels each side's gpuattn bench runs named (their
`config`), so that a forced kernel (AB_ENV_<side>) that did not take shows.

    python3 bench/ab_summary.py DIR   (DIR holds bench-{a,b}-N.json and/or sparse-{a,b}-N.json)
"""
import glob
import json
import math
import os
import re
import statistics
import sys


def times(path_glob, rows_key, label_of, ms_key):
    """{label: [ms per round]} over the files of `path_glob`."""
    out = {}
    for path in sorted(glob.glob(path_glob)):
        with open(path) as fh:
            data = json.load(fh)
        for row in data.get(rows_key, []):
            ms = row.get(ms_key)
            if isinstance(ms, (int, float)) and ms > 0:
                out.setdefault(label_of(row), []).append(ms)
    return out


def table(title, a, b):
    lines = [f"### {title}", "", "| case | rounds | A ms (median) | B ms (median) | B/A | "
             "A spread | B spread |", "|---|---:|---:|---:|---:|---:|---:|"]
    for label in a:
        if label not in b:
            continue
        ma, mb = statistics.median(a[label]), statistics.median(b[label])
        spread = lambda xs: (max(xs) - min(xs)) / statistics.median(xs)  # noqa: E731
        lines.append(f"| {label} | {min(len(a[label]), len(b[label]))} | {ma:.4f} | {mb:.4f} | "
                     f"{mb / ma:.3f} | {100 * spread(a[label]):.1f}% | "
                     f"{100 * spread(b[label]):.1f}% |")
    return "\n".join(lines) + "\n"


def groups(a, b):
    """Markdown: geometric mean of B/A (median over rounds each) per head dim and causal, for
    S <= 2048 and S > 2048 (labels with "S<n>" or "Sq<n>" and "D<n>"); "" when no label has them."""
    ratios = {}
    for label in a:
        if label not in b:
            continue
        s = re.search(r"\bSq?(\d+)\b", label)
        d = re.search(r"\bD(\d+)\b", label)
        if not (s and d):
            continue
        key = (int(d.group(1)), " causal" in label, int(s.group(1)) > 2048)
        ratios.setdefault(key, []).append(statistics.median(b[label]) / statistics.median(a[label]))
    if not ratios:
        return ""
    gmean = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs))  # noqa: E731
    lines = ["### B/A by head dim (geometric mean over shapes; shapes in brackets)", "",
             "| head dim | causal | S <= 2048 | S > 2048 |", "|---:|---|---:|---:|"]
    for d, causal in sorted({(k[0], k[1]) for k in ratios}):
        cells = []
        for long_ in (False, True):
            xs = ratios.get((d, causal, long_))
            cells.append(f"{gmean(xs):.3f} ({len(xs)})" if xs else "-")
        lines.append(f"| {d} | {'yes' if causal else 'no'} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines) + "\n"


def configs(path_glob):
    """{config: runs} of the gpuattn bench rows in the files of `path_glob`."""
    out = {}
    for path in sorted(glob.glob(path_glob)):
        with open(path) as fh:
            for row in json.load(fh).get("results", []):
                if "config" in row:
                    out[row["config"]] = out.get(row["config"], 0) + 1
    return out


def main(argv):
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        print(__doc__, file=sys.stderr)
        return 2
    d = argv[1]
    parts = []
    bench_label = lambda r: (r["label"] if " causal" in r["label"] or not r.get("causal")  # noqa: E731
                             else r["label"] + " causal")
    ba = times(os.path.join(d, "bench-a-*.json"), "results", bench_label, "ours_ms")
    bb = times(os.path.join(d, "bench-b-*.json"), "results", bench_label, "ours_ms")
    if ba and bb:
        parts.append(table("gpuattn bench (ours_ms)", ba, bb))
        by_group = groups(ba, bb)
        if by_group:
            parts.append(by_group)
        kernels = [(side, configs(os.path.join(d, f"bench-{side}-*.json"))) for side in "ab"]
        if any(k for _, k in kernels):
            parts.append("### kernels run (gpuattn bench config: runs)\n\n" + "\n".join(
                f"- {side.upper()}: " + ", ".join(f"{c}: {n}" for c, n in sorted(k.items()))
                for side, k in kernels) + "\n")
    sparse_label = lambda r: f"{r['case']} S{r['seqlen']}"  # noqa: E731
    sa = times(os.path.join(d, "sparse-a-*.json"), "cases", sparse_label, "ours_ms")
    sb = times(os.path.join(d, "sparse-b-*.json"), "cases", sparse_label, "ours_ms")
    if sa and sb:
        parts.append(table("bench/sparse_bench.py --no-flex (ours_ms)", sa, sb))
    if not parts:
        print(f"ab_summary: no A and B results in {d}", file=sys.stderr)
        return 1
    print("\n".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
