"""Summarizes the stamps of a GPUATTN_SM90_TRACE build (scripts/sm90-trace.sh): per work item of
CTA 0, in microseconds at the SM clock given (default 1.98 GHz), where each consumer warpgroup
spent the time from the end of its previous item (epilogue done) to the end of this one:
  gap    previous epilogue done -> item taken from the ring
  setup  item taken -> consume() set up (shape_of, the item's addresses)
  q      -> its Q there (masked kernel; the dense one waits for Q inside s0i)
  s0i    -> the first S GEMM issued (the first K's arrival, its turn, the issue)
  s0     -> the first S GEMM done
  loop   -> last P V done (every tile after the first)
  smem   -> O normalized and in smem (LSE stored)
  bar    -> the warpgroup barrier passed
  store  -> O copied out to global memory
  tail   -> the epilogue done (fence, Q buffer released)
and, for the producer, when it took the item and issued the first tile, relative to the same
consumer's previous epilogue end (negative: before it). The last launch's stamps are used.
Finer phases from the SM90_TRACE_X lines (medians only), the dense kernel's first S and the
epilogue split up:
  ring      the loop top -> item taken (the ring's wait and reads)
  qwait     -> its Q there (inside s0i)
  ldsm      -> Q's registers loaded (Q in registers)
  turn      -> the turn for the first S taken
  issue     -> the first S GEMM issued
  epi       last P V done -> the epilogue started (the stage's release)
  totals    -> the row sums, reciprocals and LSE done (inside smem)
  stsm      -> O in smem (stmatrix; staged epilogues only)
the steps of CTA 0's first item (SM90_TILE lines), per consumer and key tile j, in cycles (the
exp2 floor is stated in them: 64 MUFU.EX2 a warp at 8 cycles each is 512 a 128-key tile):
  turn     step entered -> its turn taken (the other consumer's GEMMs issued)
  kwait    -> K_{j+1} there (its full barrier)
  qk       -> S_{j+1} issued
  vwait    -> V_j there
  pv       -> P_j V_j issued (and the turn passed on)
  wait     -> S_{j+1} there (without the late wait, P_j V_j too)
  softmax  -> tile j + 1's softmax done
  pack     -> O rescaled and P packed (the P V wait, when it is late)
  period   -> the next step entered
and where the producer issued K_{j+1} and V_j (SM90_PTILE lines: the CTA's tile loads), relative
to the step's entry (negative: before it);
and CTA 0's own span (role 0's row 47, when the build stamps it): kernel entry -> barriers set up
(__syncthreads) -> the first item taken -> the last item's epilogue done -> every consumer's O
stores complete (the CTA may exit); and, from the SM90_CTAS line, every CTA's entry and end on
the GPU's nanosecond timer: how far apart the CTAs start, and first entry -> last CTA done;
and, from the SM90_CTA lines (each CTA's SM, warp slot and the SM clock at its first steps), how
the CTAs share the SMs: lone against sharing CTAs' end, the rules that tell an SM's two CTAs apart,
and whether those two run their tiles in step (see sm_sharing).
"""
import argparse
import statistics


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--ghz", type=float, default=None,
                    help="SM clock for cycles -> us (default: CTA 0's measured clock when the "
                         "trace has it, else 1.98)")
    args = ap.parse_args(argv)
    rows, finer, ctas, tiles, per_cta = {}, {}, None, {}, {}
    for line in open(args.trace):
        f = line.split()
        if len(f) == 12 and f[0] == "SM90_TILE":
            tiles[(int(f[1]), int(f[2]))] = [int(x) for x in f[3:]]  # the last launch's
        elif len(f) == 6 and f[0] == "SM90_PTILE":
            tiles[("p", int(f[1]))] = [int(x) for x in f[2:]]
        if len(f) in (6, 8) and f[0] == "SM90_CTAS":
            ctas = [int(x) for x in f[1:]]  # the last launch's
        if len(f) >= 6 and f[0] == "SM90_CTA":
            per_cta[int(f[1])] = [int(x) for x in f[2:]]  # later launches overwrite
        if len(f) == 13 and f[0] == "SM90_TRACE":
            role, item = int(f[1]), int(f[2])
            rows[(role, item)] = [int(x) for x in f[3:]]  # later launches overwrite earlier ones
        elif len(f) == 9 and f[0] == "SM90_TRACE_X":
            finer[(int(f[1]), int(f[2]))] = [int(x) for x in f[3:]]  # stamps 10-15
    ghz, measured = args.ghz, measured_ghz(finer, ctas)
    if ghz is None:
        ghz = measured or 1.98
    us = lambda cycles: cycles / (ghz * 1e3)
    n = 0
    # Items of CTA 0 in the last launch; a row left over from an earlier launch that took more
    # items starts before the row above it ends.
    while ((1, n) in rows and rows[(1, n)][9] > 0 and
           (n == 0 or rows[(1, n)][0] >= rows[(1, n - 1)][9])):
        n += 1
    if n == 0:
        raise SystemExit(f"sm90_trace_summary: no consumer stamps in {args.trace}")
    how = "measured: CTA 0's cycles over the GPU timer" if ghz == measured else "given"
    print(f"items {n} (CTA 0); times in us at {ghz:.3g} GHz ({how})")
    names = ("gap", "setup", "q", "s0i", "s0", "loop", "smem", "bar", "store", "tail")
    print("item | role | " + " | ".join(names) + " | prod take | prod first tile | prod last tile")
    cols = {k: [] for k in names + ("pt", "pf", "pl")}
    for role in sorted({r for r, _ in rows if r > 0}):  # the consumers (3 at dense D64)
        prev_end = None
        for i in range(n):
            e = rows[(role, i)]
            p = rows.get((0, i), [0] * 5)
            ref = prev_end if prev_end is not None else e[0]
            v = {"gap": us(e[0] - ref)}
            for k, name in enumerate(names[1:]):
                v[name] = us(e[k + 1] - e[k])
            v.update(pt=us(p[0] - ref), pf=us(p[2] - ref), pl=us(p[3] - ref))
            if i > 0:
                for k in cols:
                    cols[k].append(v[k])
            print(f"{i} | {role} | " + " | ".join(f"{v[k]:.2f}" for k in cols))
            prev_end = e[9]
    print("median over items after the first, both consumers: " +
          ", ".join(f"{k} {statistics.median(c):.2f}" for k, c in cols.items() if c))
    fine = {k: [] for k in ("ring", "qwait", "ldsm", "turn", "issue", "epi", "totals", "stsm")}
    for role in sorted({r for r, _ in rows if r > 0}):
        for i in range(1, n):
            e, x, prev = rows[(role, i)], finer.get((role, i)), rows[(role, i - 1)]
            if x is None or min(x) <= 0 or x[5] < prev[9]:  # none, or an earlier launch's
                continue
            v = dict(ring=e[0] - x[5], qwait=x[0] - e[2], ldsm=x[1] - x[0], turn=x[2] - x[1],
                     issue=e[3] - x[2], epi=x[3] - e[5], totals=x[4] - x[3])
            if e[6] > 0:
                v["stsm"] = e[6] - x[4]
            for k, c in v.items():
                fine[k].append(us(c))
    if any(fine.values()):
        print("finer, median over items after the first, both consumers: " +
              ", ".join(f"{k} {statistics.median(c):.2f}" for k, c in fine.items() if c))
    tile_table(tiles)
    span = cta_span(rows, finer, n)
    if span:
        print("CTA 0's span: " + ", ".join(f"{k} {us(c):.2f}" for k, c in span.items()))
    if ctas is not None and ctas[0] > 0 and 0 < ctas[1] <= ctas[2] and ctas[3] <= ctas[4]:
        n_ctas, e0, e1, d0, d1 = ctas[:5]
        print(f"all {n_ctas} CTAs (GPU timer): entries spread {(e1 - e0) / 1e3:.2f}, "
              f"first entry -> first done {(d0 - e0) / 1e3:.2f}, -> last done "
              f"{(d1 - e0) / 1e3:.2f} us")
    for line in sm_sharing(per_cta):
        print(line)


TILE_PHASES = ("turn", "kwait", "qk", "vwait", "pv", "wait", "softmax", "pack")
TILE_ORDER = (0, 1, 6, 7, 8, 2, 3, 4, 5)  # the stamps in time order (see fwd_sm90.cuh)


def tile_table(tiles):
    """Prints the per-step phases (cycles) of CTA 0's first item and their medians per consumer,
    where each step starts relative to consumer 0's step of the same tile, and when the producer
    issued the step's K and V loads relative to the step's entry."""
    steps = {k: v for k, v in tiles.items() if k[0] != "p"}
    if not steps:
        return
    print("steps of CTA 0's first item (cycles): tile | consumer | " + " | ".join(TILE_PHASES) +
          " | period | start vs consumer 0 | K(j+1) issued | V(j) issued")
    med = {}
    for (cw, t), e in sorted(steps.items()):
        v = [e[b] - e[a] for a, b in zip(TILE_ORDER, TILE_ORDER[1:])]
        nxt = steps.get((cw, t + 1))
        period = nxt[0] - e[0] if nxt else None
        lead = steps.get((0, t))
        rel = e[0] - lead[0] if lead else 0
        k_load, v_load = tiles.get(("p", t + 1)), tiles.get(("p", t))
        k_at = k_load[1] - e[0] if k_load else None
        v_at = v_load[3] - e[0] if v_load else None
        for name, x in zip(TILE_PHASES + ("period", "K at", "V at"), v + [period, k_at, v_at]):
            if x is not None:
                med.setdefault((cw, name), []).append(x)
        cell = lambda x: "-" if x is None else str(x)  # noqa: E731
        print(f"{t} | {cw} | " + " | ".join(str(x) for x in v) +
              f" | {cell(period)} | {rel} | {cell(k_at)} | {cell(v_at)}")
    for cw in sorted({c for c, _ in steps}):
        print(f"consumer {cw} median cycles: " +
              ", ".join(f"{name} {statistics.median(med[(cw, name)]):.0f}"
                        for name in TILE_PHASES + ("period", "K at", "V at")
                        if (cw, name) in med))


def sm_sharing(per_cta):
    """Lines on how the CTAs share the SMs, from the SM90_CTA lines (b: smid, warpid, entry ns,
    done ns, the SM clock at consumer 0's first steps): how many SMs hold 1, 2, ... CTAs; when
    the CTAs alone on an SM are done against those that share one (us after the first entry), and
    their step periods (cycles); which simple rules tell the two CTAs of an SM apart (blockIdx
    parity, its half of the grid, bit 3 of the warp slot, which entered first); and the two CTAs'
    phase: each step of one CTA against the other's steps, as a fraction of the other's period
    folded to [0, 0.5] (0: in step, 0.5: one's steps halfway between the other's), median over
    steps and pairs."""
    if not per_cta:
        return []
    by_sm = {}
    for b, v in sorted(per_cta.items()):
        by_sm.setdefault(v[0], []).append(b)
    counts = {}
    for bs in by_sm.values():
        counts[len(bs)] = counts.get(len(bs), 0) + 1
    out = ["SMs by CTAs held: " + ", ".join(f"{k} CTA(s): {n}" for k, n in sorted(counts.items()))]
    first = min(v[2] for v in per_cta.values())
    done = {k: [per_cta[b][3] - first for bs in by_sm.values() if len(bs) == k for b in bs
                if per_cta[b][3] > 0] for k in counts}
    out.append("done after the first entry (us, median): " + ", ".join(
        f"{k} an SM {statistics.median(d) / 1e3:.2f} ({len(d)} CTAs)"
        for k, d in sorted(done.items()) if d))
    # each CTA's step period on its SM's clock (the median gap between its step entries)
    periods = {}
    for k in counts:
        for bs in by_sm.values():
            if len(bs) != k:
                continue
            for b in bs:
                st = [c for c in per_cta[b][4:] if c > 0]
                if len(st) >= 2:
                    periods.setdefault(k, []).append(
                        statistics.median(y - x for x, y in zip(st, st[1:])))
    if periods:
        out.append("step period (cycles, median over CTAs): " + ", ".join(
            f"{k} an SM {statistics.median(v):.0f} ({len(v)} CTAs)"
            for k, v in sorted(periods.items())))
    pairs = [bs for bs in by_sm.values() if len(bs) == 2]
    if not pairs:
        return out
    rules = {"blockIdx parity": lambda b: b % 2,
             "upper half of the grid": lambda b: 2 * b >= len(per_cta),
             "warp slot bit 3": lambda b: (per_cta[b][1] >> 3) & 1,
             "entered first": None}
    split = []
    for name, rule in rules.items():
        if rule is None:
            k = sum(per_cta[x][2] != per_cta[y][2] for x, y in pairs)
        else:
            k = sum(rule(x) != rule(y) for x, y in pairs)
        split.append(f"{name} {k}/{len(pairs)}")
    out.append("pairs told apart by: " + ", ".join(split))
    phases = []
    for x, y in pairs:
        sx = [c for c in per_cta[x][4:] if c > 0]
        sy = [c for c in per_cta[y][4:] if c > 0]
        if len(sx) < 3 or not sy:
            continue
        period = statistics.median(b - a for a, b in zip(sx, sx[1:]))
        if period <= 0:
            continue
        for c in sy:
            f = ((c - sx[0]) / period) % 1.0
            phases.append(min(f, 1.0 - f))
    if phases:
        out.append(f"phase of the two CTAs of an SM (0: in step, 0.5: alternating): median "
                   f"{statistics.median(phases):.2f}, quartiles "
                   f"{statistics.quantiles(phases, n=4)[0]:.2f} / "
                   f"{statistics.quantiles(phases, n=4)[2]:.2f} ({len(phases)} steps)")
    return out


CTA_ROW = 47  # role 0's row of the CTA's own stamps (kTraceCta in fwd_sm90.cuh)


def measured_ghz(finer, ctas):
    """CTA 0's SM clock: its clock64 cycles from entry to its last store drained over the same
    span on the GPU's nanosecond timer (SM90_CTAS's last two fields); None without them."""
    x = finer.get((0, CTA_ROW))
    if x is None or ctas is None or len(ctas) < 7 or x[0] <= 0:
        return None
    drained = max(x[2:])
    ns = ctas[6] - ctas[5]
    if drained <= x[0] or ns <= 0:
        return None
    return (drained - x[0]) / ns


def cta_span(rows, finer, n):
    """{phase: cycles} of CTA 0 from kernel entry to its last store's completion, or {} when the
    trace has no such row (an older build) or it is not this launch's."""
    x = finer.get((0, CTA_ROW))
    if x is None or x[0] <= 0 or x[1] <= 0:
        return {}
    entry, setup = x[0], x[1]
    drained = [c for c in x[2:] if c > 0]
    first = min(rows[(r, 0)][0] for r in sorted({r for r, _ in rows if r > 0}) if (r, 0) in rows)
    last = max(rows[(r, n - 1)][9] for r in sorted({r for r, _ in rows if r > 0})
               if (r, n - 1) in rows)
    if not drained or not entry <= setup <= first <= last <= max(drained):
        return {}
    return {"barrier setup": setup - entry, "-> first item taken": first - setup,
            "-> last epilogue done": last - first, "-> stores drained": max(drained) - last,
            "entry to drained": max(drained) - entry}


if __name__ == "__main__":
    main()
