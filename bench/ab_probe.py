#!/usr/bin/env python3
"""Two builds of a timing probe side by side, in balanced order: each round runs A, B, B, A, so
that neither build always runs first (on an H200 the same SASS measured 2-6% apart between two
binaries run one after the other: bench/results/fp8-kernel-notes.md).

The probes print one line a case, ending in "TFLOP/s <x>" (gpuattn_fp8_probe's format); the case
is the line's text before its first "  us " (or the whole text before "TFLOP/s"). Prints per case
the mean TFLOP/s of each build, B / A, and B / A from the rounds' first pair alone (A then B)
against its second (B then A): when those two disagree, the order moved the figure.

With --case TEXT (repeatable), each run is one process per case, the probe given "--only TEXT"
(gpuattn_fp8_probe's filter), so that no case is timed after the other cases of its run: one
probe's figure for a case moved 1.00x -> 1.12x with what had run before it in the same process
(bench/results/2026-11-30-h200-s53/notes.md).

    python3 bench/ab_probe.py [--rounds N] [--case TEXT ...] A_BINARY B_BINARY [-- PROBE_ARGS...]
"""
import argparse
import collections
import re
import subprocess
import sys

LINE = re.compile(r"^(?P<case>.*?)\s+TFLOP/s\s+(?P<x>[0-9.]+)\s*$")


def parse(text, where):
    """{case: TFLOP/s} of one probe run's output."""
    out = {}
    for line in text.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        case = m.group("case").split("  us ")[0].strip()
        out.setdefault(case, []).append(float(m.group("x")))
    if not out:
        raise SystemExit(f"ab_probe: {where} printed no 'TFLOP/s <x>' line")
    return {case: sum(v) / len(v) for case, v in out.items()}


def run(binary, args):
    r = subprocess.run([binary, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"ab_probe: {binary} exited with {r.returncode}: {r.stderr.strip()}")
    return parse(r.stdout, binary)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2, help="rounds of A B B A (default 2)")
    ap.add_argument("--case", action="append", default=[],
                    help="run only this case (probe --only TEXT), in a process of its own")
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("probe_args", nargs="*")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error(f"--rounds must be at least 1, got {args.rounds}")
    if any(not c.strip() for c in args.case):
        ap.error("--case takes a non-empty part of a case's name")
    # One probe argument list a process: all cases at once, or one --only a case.
    runs = [args.probe_args + ["--only", c] for c in args.case] or [args.probe_args]
    # pos[(build, slot)][case]: slot 0 = the pair A-then-B, slot 1 = B-then-A
    pos = collections.defaultdict(lambda: collections.defaultdict(list))
    for _ in range(args.rounds):
        for slot, order in enumerate((("a", "b"), ("b", "a"))):
            for build in order:
                for probe_args in runs:
                    for case, x in run(getattr(args, build), probe_args).items():
                        pos[(build, slot)][case].append(x)
    cases = list(dict.fromkeys(c for key in pos for c in pos[key]))
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    # The probes report TFLOP/s: B/A above 1 is B faster (ab_summary.py's B/A is of times).
    print(f"{'case':32s} {'A':>8s} {'B':>8s} {'B/A':>7s} {'A,B':>7s} {'B,A':>7s}  "
          "(TFLOP/s ratios: above 1, B faster)")
    for case in cases:
        a = [pos[("a", s)][case] for s in (0, 1)]
        b = [pos[("b", s)][case] for s in (0, 1)]
        if not all(a) or not all(b):
            print(f"{case:32s} missing in a run")
            continue
        ma, mb = mean(a[0] + a[1]), mean(b[0] + b[1])
        print(f"{case:32s} {ma:8.1f} {mb:8.1f} {mb / ma:7.3f} {mean(b[0]) / mean(a[0]):7.3f} "
              f"{mean(b[1]) / mean(a[1]):7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
