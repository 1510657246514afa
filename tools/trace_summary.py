#!/usr/bin/env python3
"""Where a traced program's GPU time goes, from tools/kernel_trace.cpp's CSV.

  python3 tools/trace_summary.py trace.csv [--skip-replays N] [--top N] [--all] [--by-name]
                                          [--against A.csv]

By default it reads the kernels that ran inside CUDA graphs (the engine's decode steps) and splits
them into replays: a replay ends where a graph node it already ran comes again. For each kernel
(short name and grid) it gives the calls a replay, the median duration, and the median increment:
the kernel's end minus the end of the kernel before it in the replay (its own duration for the
first). Under programmatic dependent launch a kernel starts while its predecessor still runs, so
its duration includes the wait; the increment is what it adds to the step, and a replay's
increments sum to its span. Host time between replays is reported apart. --all takes every kernel
as one sequence instead (no graphs). --against A.csv puts another trace beside this one: each
kernel's time a replay in both, largest change first (an A/B of two builds). --by-name merges a
kernel's grids into one row. --skip-replays N leaves out the first N replays of each graph (a
graph's first launch uploads it; the engine captures one per batch shape and block-table width).
"""
import argparse
import csv
import re
import statistics
import sys


def short_name(demangled):
    """`void ns::(anonymous namespace)::k<T, 1>(ns::P)` -> `k<T, 1>`."""
    s = demangled.strip()
    if s.endswith(")"):
        depth = 0
        for i in range(len(s) - 1, -1, -1):
            if s[i] == ")":
                depth += 1
            elif s[i] == "(":
                depth -= 1
                if depth == 0:
                    s = s[:i]
                    break
    if s.startswith("void "):
        s = s[5:]
    s = s.replace("(anonymous namespace)::", "")
    return re.sub(r"\b[A-Za-z_]\w*::", "", s)


def read_trace(path, by_name=False):
    return read_trace_counted(path, by_name)[0]


def read_trace_counted(path, by_name=False):
    """(rows in start order, rows left out: start 0 or end before start, which CUPTI reports for
    kernels it could not time)."""
    rows, untimed = [], 0
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        need = {"start_ns", "end_ns", "stream", "graph", "graph_node", "grid", "name"}
        missing = need - set(reader.fieldnames or [])
        if missing:
            raise ValueError(f"{path}: not a kernel trace (no column {', '.join(sorted(missing))})")
        for n, r in enumerate(reader, start=2):
            try:
                start, end = int(r["start_ns"]), int(r["end_ns"])
            except ValueError:
                raise ValueError(f"{path}:{n}: start_ns/end_ns not integers: "
                                 f"{r['start_ns']!r}, {r['end_ns']!r}") from None
            if start == 0 or end < start:
                untimed += 1
                continue
            rows.append({"start": start, "end": end, "stream": r["stream"],
                         "corr": r.get("correlation", ""),
                         "graph": int(r["graph"]), "node": r["graph_node"],
                         "key": short_name(r["name"]) if by_name
                         else f"{short_name(r['name'])} [{r['grid']}]"})
    rows.sort(key=lambda r: r["start"])
    return rows, untimed


def split_replays(kernels):
    """Consecutive graph kernels, cut where a (graph, node) already in the replay comes again or
    the graph changes."""
    replays, cur, seen = [], [], set()
    for k in kernels:
        node = (k["graph"], k["node"])
        if cur and (node in seen or k["graph"] != cur[-1]["graph"]):
            replays.append(cur)
            cur, seen = [], set()
        cur.append(k)
        seen.add(node)
    if cur:
        replays.append(cur)
    return replays


def busy_union(kernels):
    total, end = 0, None
    for k in sorted(kernels, key=lambda k: k["start"]):
        if end is None or k["start"] >= end:
            total += k["end"] - k["start"]
            end = k["end"]
        elif k["end"] > end:
            total += k["end"] - end
            end = k["end"]
    return total


def analyze(rows, skip_replays=0, all_kernels=False):
    """(lines, result): the trace's header lines, and the replays' figures, or None with a line
    saying why there are none. result: spans (ns a replay), gaps, busy, kernels (a replay's
    median count) and stats (key -> calls / dur / inc lists and inc_sum, ns a replay)."""
    out = []
    if not rows:
        return ["no kernels in the trace"], None
    span = max(r["end"] for r in rows) - rows[0]["start"]
    out.append(f"{len(rows)} kernels over {span / 1e3:.1f} us; GPU busy {busy_union(rows) / 1e3:.1f} us")
    if all_kernels:
        replays = [rows]
    else:
        graph = [r for r in rows if r["graph"] != 0]
        if not graph:
            return out + ["no kernels ran in CUDA graphs: --all to take them as one sequence"], None
        replays = split_replays(graph)
        # The first replays of each graph (exec) left out: a new graph's first launch uploads it,
        # and the engine captures one per batch shape and block-table width.
        seen, kept = {}, []
        for r in replays:
            g = r[0]["graph"]
            seen[g] = seen.get(g, 0) + 1
            if seen[g] > skip_replays:
                kept.append(r)
        if not kept:
            return out + [f"--skip-replays {skip_replays}: no graph has more than that "
                          f"({len(replays)} replays of {len(seen)} graphs)"], None
        if len(seen) > 1:
            out.append(f"{len(seen)} graphs, {len(replays)} replays; the first {skip_replays} of "
                       f"each left out")
        replays = kept
    res = {"spans": [max(k["end"] for k in r) - r[0]["start"] for r in replays],
           "gaps": [b[0]["start"] - max(k["end"] for k in a) for a, b in zip(replays, replays[1:])],
           "busy": [busy_union(r) for r in replays],
           "kernels": statistics.median(len(r) for r in replays), "stats": {},
           # Kernels of one graph launch share its correlation id (CUPTI): 1 here says the replays
           # are the launches.
           "launch_ids": statistics.median(len({k["corr"] for k in r}) for r in replays)}
    stats = res["stats"]
    for rep in replays:
        prev_end = None
        per = {}
        for k in rep:
            if prev_end is None:
                inc, prev_end = k["end"] - k["start"], k["end"]
            else:
                inc, prev_end = max(0, k["end"] - prev_end), max(prev_end, k["end"])
            s = per.setdefault(k["key"], {"n": 0, "dur": [], "inc": []})
            s["n"] += 1
            s["dur"].append(k["end"] - k["start"])
            s["inc"].append(inc)
        for key, s in per.items():
            t = stats.setdefault(key, {"n": [], "dur": [], "inc": [], "inc_sum": []})
            t["n"].append(s["n"])
            t["dur"] += s["dur"]
            t["inc"] += s["inc"]
            t["inc_sum"].append(sum(s["inc"]))
    med = statistics.median
    out.append(f"{len(replays)} replays: median span {med(res['spans']) / 1e3:.2f} us, "
               f"{res['kernels']:.0f} kernels, {res['launch_ids']:.0f} launch ids; "
               f"busy {med(res['busy']) / 1e3:.2f} us"
               + (f"; host gap between replays median {med(res['gaps']) / 1e3:.2f} us"
                  if res["gaps"] else ""))
    return out, res


def step_us(t):
    """A kernel's median time a replay (its increments' sum), us."""
    return statistics.median(t["inc_sum"]) / 1e3


def summarize(rows, skip_replays=0, top=40, all_kernels=False):
    """The report's lines."""
    out, res = analyze(rows, skip_replays, all_kernels)
    if res is None:
        return out
    med = statistics.median
    step = med(res["spans"]) / 1e3
    table = sorted(res["stats"].items(), key=lambda kv: -step_us(kv[1]))
    out.append(f"{'calls':>6} {'dur us':>8} {'incr us':>8} {'step us':>8} {'share':>6}  kernel [grid]")
    for key, t in table[:top]:
        out.append(f"{med(t['n']):>6.0f} {med(t['dur']) / 1e3:>8.2f} {med(t['inc']) / 1e3:>8.2f} "
                   f"{step_us(t):>8.2f} {100 * step_us(t) / step if step else 0:>5.1f}%  {key}")
    if len(table) > top:
        out.append(f"... {len(table) - top} more (--top)")
    return out


def compare(rows_a, rows_b, skip_replays=0, top=40, all_kernels=False):
    """Two traces side by side (a: --against, b: the trace): each kernel's time a replay in both
    and b - a, largest change first; kernels one trace lacks count 0 there."""
    out_a, res_a = analyze(rows_a, skip_replays, all_kernels)
    out_b, res_b = analyze(rows_b, skip_replays, all_kernels)
    out = ["a: " + line for line in out_a] + ["b: " + line for line in out_b]
    if res_a is None or res_b is None:
        return out
    med = statistics.median
    sa, sb = med(res_a["spans"]) / 1e3, med(res_b["spans"]) / 1e3
    out.append(f"step: a {sa:.2f} us, b {sb:.2f} us, b - a {sb - sa:+.2f} us ({100 * (sb - sa) / sa:+.1f}%)"
               if sa else f"step: a {sa:.2f} us, b {sb:.2f} us")
    keys = set(res_a["stats"]) | set(res_b["stats"])
    ta = {k: step_us(res_a["stats"][k]) if k in res_a["stats"] else 0.0 for k in keys}
    tb = {k: step_us(res_b["stats"][k]) if k in res_b["stats"] else 0.0 for k in keys}
    table = sorted(keys, key=lambda k: (-abs(tb[k] - ta[k]), k))
    out.append(f"{'a us':>8} {'b us':>8} {'b - a':>8}  kernel [grid]")
    for k in table[:top]:
        out.append(f"{ta[k]:>8.2f} {tb[k]:>8.2f} {tb[k] - ta[k]:>+8.2f}  {k}")
    if len(table) > top:
        out.append(f"... {len(table) - top} more (--top)")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace", help="the CSV that GPUATTN_TRACE named")
    ap.add_argument("--skip-replays", type=int, default=0,
                    help="leave out the first N replays of each graph (warm-up, the upload)")
    ap.add_argument("--top", type=int, default=40, help="kernels listed (default 40)")
    ap.add_argument("--all", action="store_true",
                    help="every kernel as one sequence, not graph replays")
    ap.add_argument("--by-name", action="store_true",
                    help="one row a kernel name (grids merged: a kernel whose grid follows the "
                         "context length)")
    ap.add_argument("--against", metavar="A.csv",
                    help="another trace (a): both side by side, each kernel's b - a")
    a = ap.parse_args(argv)
    if a.skip_replays < 0:
        ap.error(f"--skip-replays must be >= 0, not {a.skip_replays}")
    if a.top < 1:
        ap.error(f"--top must be >= 1, not {a.top}")
    try:
        rows, untimed = read_trace_counted(a.trace, a.by_name)
        base, untimed_a = read_trace_counted(a.against, a.by_name) if a.against else (None, 0)
    except (OSError, ValueError) as e:
        print(f"trace_summary: {e}", file=sys.stderr)
        return 1
    for path, n in ((a.trace, untimed), (a.against, untimed_a)):
        if n:
            print(f"{path}: {n} kernels without valid times (start 0 or end before start) left out")
    if base is not None:
        print("\n".join(compare(base, rows, a.skip_replays, a.top, a.all)))
    else:
        print("\n".join(summarize(rows, a.skip_replays, a.top, a.all)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
