"""A record of device call 3 (twelfth session), run against a trace build of call3-trace-x.patch
(main at 764003c plus six more stamps): reads its SM90_TRACE and SM90_TRACE_X lines and prints the
median over items after the first of the finer phases, in us at 1.98 GHz."""
import statistics
import sys

rows, xs = {}, {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 13 and f[0] == "SM90_TRACE":
        rows[(int(f[1]), int(f[2]))] = [int(x) for x in f[3:]]
    if len(f) == 9 and f[0] == "SM90_TRACE_X":
        xs[(int(f[1]), int(f[2]))] = [int(x) for x in f[3:]]
us = lambda c: c / 1980.0
out = {}
for (role, i), e in rows.items():
    if role == 0 or i == 0 or e[9] == 0 or (role, i) not in xs:
        continue
    x = xs[(role, i)]
    prev = rows.get((role, i - 1))
    if prev is None or e[0] < prev[9]:
        continue
    ph = {
        "end->loop top": x[5] - prev[9], "item wait": e[0] - x[5], "setup": e[1] - e[0],
        "q_full wait": x[0] - e[1], "ldmatrix Q": x[1] - x[0], "turn": x[2] - x[1],
        "issue S0": e[3] - x[2], "S0 gemm": e[4] - e[3], "loop": e[5] - e[4],
        "to epilogue": x[3] - e[5], "sums/lse": x[4] - x[3], "stmatrix": e[6] - x[4],
        "bar": e[7] - e[6], "store": e[8] - e[7], "tail": e[9] - e[8]}
    for k, v in ph.items():
        out.setdefault(k, []).append(us(v))
for k, v in out.items():
    print(f"{k:14s} {statistics.median(v):6.3f} us  (n {len(v)})")
