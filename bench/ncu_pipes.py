"""Where one kernel launch spends the SM, side by side for several launches: duration, SM clock,
the tensor, MUFU (XU), FMA and ALU pipes' activity, issue-slot use and the top warp-state stall
reasons (warps stalled on each per issued instruction), each from ncu's raw page as CSV
(`ncu --import REPORT --page raw --csv`). The reports need the sections SpeedOfLight,
ComputeWorkloadAnalysis and WarpStateStats.
scripts/ncu-pipes.sh writes one raw page per case and backend and calls this on them.

    python3 bench/ncu_pipes.py ours=short-d64-ours-raw.csv cudnn=short-d64-cudnn-raw.csv

A LABEL=CSV argument names its column LABEL; a bare CSV is named by its file name. --list prints
every metric of the first page whose name has "pipe" or "issue" in it (to find a renamed one).
"""
import argparse
import csv
import os
import sys

import ncu_stalls

# (row label, candidate metric names: the first one the page has is shown)
ACTIVE, ELAPSED = ".avg.pct_of_peak_sustained_active", ".avg.pct_of_peak_sustained_elapsed"
ROWS = [
    ("duration (us)", ["gpu__time_duration.sum"]),
    ("SM clock (GHz)", ["sm__cycles_elapsed.avg.per_second", "gpc__cycles_elapsed.avg.per_second"]),
    ("SM throughput (%)", ["sm__throughput" + ELAPSED]),
    ("tensor pipe (% of elapsed)", ["sm__pipe_tensor_cycles_active" + ELAPSED,
                                    "sm__pipe_tensor_op_gmma_cycles_active" + ELAPSED]),
    ("tensor pipe (% of active)", ["sm__pipe_tensor_cycles_active" + ACTIVE,
                                   "sm__pipe_tensor_op_gmma_cycles_active" + ACTIVE]),
    ("MUFU / XU pipe (% of active)", ["sm__inst_executed_pipe_xu" + ACTIVE,
                                      "sm__pipe_xu_cycles_active" + ACTIVE]),
    ("FMA pipe (% of active)", ["sm__inst_executed_pipe_fma" + ACTIVE,
                                "sm__pipe_fma_cycles_active" + ACTIVE]),
    ("ALU pipe (% of active)", ["sm__inst_executed_pipe_alu" + ACTIVE,
                                "sm__pipe_alu_cycles_active" + ACTIVE]),
    ("issue slots busy (%)", ["sm__issue_active" + ACTIVE, "smsp__issue_active" + ACTIVE]),
    ("instructions (M)", ["smsp__inst_executed.sum", "sm__inst_executed.sum"]),
]
COUNTS = {"smsp__inst_executed.sum": 1e-6, "sm__inst_executed.sum": 1e-6}  # to millions
UNIT_SCALE = {"ns": 1e-3, "us": 1.0, "usecond": 1.0, "nsecond": 1e-3, "msecond": 1e3, "ms": 1e3,
              "hz": 1e-9, "khz": 1e-6, "mhz": 1e-3, "ghz": 1.0, "cycle/nsecond": 1.0,
              "cycle/usecond": 1e-3, "cycle/second": 1e-9}


def page(path):
    """({metric: (value text, unit)}) of the last kernel row of a raw page."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if len(rows) < 3:
        raise ValueError(f"{len(rows)} rows; expected names, units and a kernel")
    head, units, vals = rows[0], rows[1], rows[-1]
    return {n: (v, u) for n, u, v in zip(head, units, vals)}, rows


def value(metrics, name):
    v, unit = metrics[name]
    x = ncu_stalls.number(v)
    if x is None:
        return None
    if name == "gpu__time_duration.sum" or name.endswith("per_second"):
        scale = UNIT_SCALE.get(unit.strip().lower())
        return None if scale is None else x * scale  # a unit not known: shown as "-"
    return x * COUNTS.get(name, 1.0)


def column(path):
    metrics, rows = page(path)
    out = {}
    for label, names in ROWS:
        for n in names:
            if n in metrics:
                out[label] = value(metrics, n)
                break
    out["stalls"] = stalls_per_issue(metrics)
    return out


STALL = ("smsp__average_warps_issue_stalled_", "_per_issue_active.ratio")


def stalls_per_issue(metrics):
    """[(reason, warps stalled on it per issued instruction)], largest first (WarpStateStats;
    "selected", about 1 by definition, left out)."""
    pairs = []
    for name, (v, _) in metrics.items():
        if name.startswith(STALL[0]) and name.endswith(STALL[1]):
            reason = name[len(STALL[0]):-len(STALL[1])]
            x = ncu_stalls.number(v)
            if x is not None and reason != "selected":
                pairs.append((reason, x))
    return sorted(pairs, key=lambda p: -p[1])


def table(cols):
    """Markdown: a row per metric, a column per labelled page."""
    labels = [lab for lab, _ in cols]
    lines = ["| metric | " + " | ".join(labels) + " |", "|---|" + "---:|" * len(labels)]
    for label, _ in ROWS:
        cells = []
        for _, c in cols:
            v = c.get(label)
            cells.append("-" if v is None else f"{v:.3g}" if abs(v) < 100 else f"{v:.0f}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    for i in range(5):
        cells = []
        for _, c in cols:
            st = c["stalls"]
            cells.append(f"{st[i][0]} {st[i][1]:.2f}" if i < len(st) else "-")
        lines.append(f"| stall {i + 1} (warps per issue) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pages", nargs="+", help="LABEL=RAW_CSV or RAW_CSV")
    ap.add_argument("--list", action="store_true", help="print the first page's pipe metrics")
    args = ap.parse_args(argv)
    cols = []
    for arg in args.pages:
        label, sep, path = arg.partition("=")
        if not sep:
            label, path = os.path.basename(arg).removesuffix("-raw.csv"), arg
        if not label:
            sys.exit(f"ncu_pipes: {arg!r}: empty label before '='")
        try:
            if args.list and not cols:
                metrics, _ = page(path)
                for n, (v, u) in metrics.items():
                    if "pipe" in n or "issue" in n:
                        print(f"{n} = {v} {u}")
            cols.append((label, column(path)))
        except (OSError, ValueError) as e:
            sys.exit(f"ncu_pipes: {path}: {e}")
    print(table(cols))


if __name__ == "__main__":
    main()
