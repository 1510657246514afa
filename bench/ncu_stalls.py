"""The warp-state samples of one kernel launch by stall reason, from ncu's raw page as CSV
(`ncu --import REPORT --page raw --csv`): each reason's share of all samples, largest first, plus
tensor-pipe activity. scripts/ncu-source.sh writes it next to each report (CASE-stalls.txt).

    ncu --import r.ncu-rep --page raw --csv > r-raw.csv && python3 bench/ncu_stalls.py r-raw.csv
"""
import argparse
import csv
import sys

PREFIX = "smsp__pcsamp_warps_issue_stalled_"
EXTRA = ("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
         "sm__throughput.avg.pct_of_peak_sustained_elapsed")


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def stalls(rows):
    """[(reason, share in %)] of the last kernel row, largest first, and {metric: value} of EXTRA.

    rows: the CSV's rows (names, units, then one row per kernel)."""
    if len(rows) < 3:
        raise ValueError(f"the raw page has {len(rows)} rows; expected names, units and a kernel")
    head, vals = rows[0], rows[-1]
    pairs = []
    for name, value in zip(head, vals):
        if name.startswith(PREFIX) and not name.endswith("_not_issued"):
            v = number(value)
            if v is not None:
                pairs.append((name[len(PREFIX):], v))
    total = sum(v for _, v in pairs)
    if total <= 0:
        raise ValueError("no warp-state samples in the raw page (was WarpStateStats or "
                         "SourceCounters collected?)")
    shares = sorted(((n, 100.0 * v / total) for n, v in pairs), key=lambda p: -p[1])
    extra = {n: number(v) for n, v in zip(head, vals) if n in EXTRA}
    return shares, extra


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("raw_csv")
    ap.add_argument("--top", type=int, default=10, help="reasons to print (default 10)")
    args = ap.parse_args()
    if args.top < 1:
        sys.exit(f"ncu_stalls: --top must be >= 1, not {args.top}")
    try:
        with open(args.raw_csv, newline="") as f:
            shares, extra = stalls(list(csv.reader(f)))
    except (OSError, ValueError) as e:
        sys.exit(f"ncu_stalls: {args.raw_csv}: {e}")
    for name, share in shares[:args.top]:
        print(f"  {name:28s} {share:5.1f}%")
    for name, value in extra.items():
        print(f"  {name} {value}")


if __name__ == "__main__":
    main()
