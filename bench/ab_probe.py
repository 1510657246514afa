#!/usr/bin/env python3
"""Two builds of a timing probe side by side, in balanced order: each round runs A, B, B, A, so
that neither build always runs first (on an H200 the same SASS measured 2-6% apart between two
binaries run one after the other: bench/results/fp8-kernel-notes.md).

The probes print one line a case, ending in "TFLOP/s <x>" (gpuattn_fp8_probe's format); the case
is the line's text before its first "  us " (or the whole text before "TFLOP/s"). Prints per case
the mean TFLOP/s of each build, B / A, and B / A from the rounds' first pair alone (A then B)
against its second (B then A): when those two disagree, the order moved the figure.

    python3 bench/ab_probe.py [--rounds N] A_BINARY B_BINARY [-- PROBE_ARGS...]
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
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("probe_args", nargs="*")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error(f"--rounds must be at least 1, got {args.rounds}")
    # pos[(build, slot)][case]: slot 0 = the pair A-then-B, slot 1 = B-then-A
    pos = collections.defaultdict(lambda: collections.defaultdict(list))
    for _ in range(args.rounds):
        for slot, order in enumerate((("a", "b"), ("b", "a"))):
            for build in order:
                for case, x in run(getattr(args, build), args.probe_args).items():
                    pos[(build, slot)][case].append(x)
    cases = list(dict.fromkeys(c for key in pos for c in pos[key]))
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    print(f"{'case':32s} {'A':>8s} {'B':>8s} {'B/A':>7s} {'A,B':>7s} {'B,A':>7s}")
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
