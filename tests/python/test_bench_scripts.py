"""The pure logic of bench/sparse_bench.py and bench/long_context.py (bench/sparse_masks.py) on the
CPU: the rule, the exact visible-pair counts behind the reported TFLOP/s, the random block layouts,
the key sets of the sampled fp64 reference and, where torch is installed, the FlexAttention
BlockMask built from block counts (against create_block_mask and against an fp64 reference).

The rule is checked against visibility() of reference.py (the tests' own copy of src/core/mask.h)
and a block layout applied to it element by element, so a slip in the interval arithmetic cannot
hide behind a slip in the same place of the checker.
"""

import math
import os
import sys
import types

import numpy as np
import pytest

from reference import needs_torch, torch, visibility

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")  # the repository
sys.path.insert(0, os.path.join(ROOT, "bench"))
import sparse_masks as sm  # noqa: E402

# (S, causal, left, right, global tokens, block): odd lengths, windows wider than the sequence,
# globals wider than a block, and one side unbounded.
RULES = [
    (256, True, 63, 0, 0, 64),
    (256, True, 64, 0, 16, 64),
    (300, False, 40, 40, 8, 64),
    (300, False, 40, 40, 0, 32),
    (200, True, -1, -1, 0, 64),
    (200, False, -1, -1, 0, 48),
    (333, False, 7, -1, 70, 64),
    (333, True, -1, 5, 3, 16),
    (129, False, 500, 500, 0, 128),
    (257, True, 0, 0, 0, 32),
    (257, False, 2, 1, 257, 64),
]


def rule_of(causal, left, right, g, block, layout=None):
    return sm.MaskRule(causal=causal, left=left, right=right, global_tokens=g, layout=layout,
                       block_q=block, block_k=block)


def dense(rule, s, head=0):
    """[S, S] bool: the reference's rule ANDed with the layout, element by element."""
    vis = visibility(s, s, rule.causal, (rule.left, rule.right), rule.global_tokens)
    if rule.layout is not None:
        lay = np.asarray(rule.layout)
        lay = lay[head if lay.shape[0] > 1 else 0]
        i = np.arange(s)[:, None] // rule.block_q
        j = np.arange(s)[None, :] // rule.block_k
        vis = vis & (lay[i, j] != 0)
    return vis


def reduce_blocks(vis, bq, bk):
    s = vis.shape[0]
    nbq, nbk = math.ceil(s / bq), math.ceil(s / bk)
    pad = np.zeros((nbq * bq, nbk * bk), dtype=np.int64)
    pad[:s, :s] = vis
    return pad.reshape(nbq, bq, nbk, bk).sum((1, 3))


@pytest.mark.parametrize("case", RULES)
def test_counts_match_the_reference_rule(case):
    s, causal, left, right, g, block = case
    rule = rule_of(causal, left, right, g, block)
    vis = dense(rule, s)
    rows = np.arange(s)
    assert sm.row_counts(rule, s, rows).tolist() == vis.sum(1).tolist()
    assert sm.block_counts(rule, s).tolist() == reduce_blocks(vis, block, block).tolist()
    # chunks that do not divide the blocks evenly give the same counts
    assert sm.block_counts(rule, s, rows_per_chunk=block * 2).tolist() == \
        reduce_blocks(vis, block, block).tolist()
    assert sm.visible_pairs(rule, s, heads=3) == 3 * int(vis.sum())
    assert sm.block_areas(rule, s).tolist() == reduce_blocks(np.ones_like(vis), block,
                                                             block).tolist()


@pytest.mark.parametrize("case", RULES)
def test_mask_mod_and_row_keys_match_the_reference_rule(case):
    s, causal, left, right, g, block = case
    rule = rule_of(causal, left, right, g, block)
    vis = dense(rule, s)
    q = np.arange(s)[:, None]
    kv = np.arange(s)[None, :]
    got = np.broadcast_to(rule.mask_mod()(0, 0, q, kv), (s, s))
    assert (got == vis).all()
    for row in sm.sample_rows(rule, s, 10, seed=1):
        assert sm.row_keys(rule, s, row).tolist() == np.flatnonzero(vis[row]).tolist()


@pytest.mark.parametrize("heads", [1, 3])
@pytest.mark.parametrize("case", [RULES[0], RULES[2], RULES[5], RULES[6]])
def test_layout_rules(case, heads):
    s, causal, left, right, g, block = case
    nb = math.ceil(s / block)
    layout = sm.random_block_layout(heads, nb, nb, 0.6, seed=7)
    rule = rule_of(causal, left, right, g, block, layout)
    rule.check_shape(s, 3)
    counts = sm.block_counts(rule, s)
    total = 0
    for h in range(3):
        vis = dense(rule, s, h)
        total += int(vis.sum())
        q = np.arange(s)[:, None]
        kv = np.arange(s)[None, :]
        got = np.broadcast_to(rule.mask_mod()(0, np.array(h if heads > 1 else 0), q, kv), (s, s))
        assert (got == vis).all()
        for row in (0, s // 3, s - 1):
            assert sm.row_keys(rule, s, row, h).tolist() == np.flatnonzero(vis[row]).tolist()
    assert sm.visible_pairs(rule, s, heads=3) == total
    assert sm.visible_pairs_from_counts(rule, counts, heads=3) == total


def test_random_block_layout():
    for sparsity, nb in ((0.5, 128), (0.9, 128), (0.9, 8), (0.0, 5)):
        lay = sm.random_block_layout(4, nb, nb, sparsity, seed=3)
        assert lay.dtype == np.uint8 and lay.shape == (4, nb, nb)
        want = max(nb, round((1 - sparsity) * nb * nb))
        assert lay.reshape(4, -1).sum(1).tolist() == [want] * 4
        assert (lay[:, np.arange(nb), np.arange(nb)] == 1).all()  # no empty row
        if nb < want < nb * nb:  # one layout per head
            assert not (lay[0] == lay[1]).all()
    again = sm.random_block_layout(4, 16, 16, 0.5, seed=3)
    assert (again == sm.random_block_layout(4, 16, 16, 0.5, seed=3)).all()
    with pytest.raises(ValueError):
        sm.random_block_layout(1, 4, 4, 1.0, seed=0)


def test_flops_of_known_shapes():
    """The figures of DESIGN.md's sliding-window rows: a causal window of W keys (the row itself
    and W - 1 before it) has sum_i min(i + 1, W) visible pairs."""
    for s, w in ((16384, 1024), (65536, 4096)):
        rule = sm.MaskRule(causal=True, left=w - 1, right=0)
        want = w * (w + 1) // 2 + (s - w) * w
        assert sm.visible_pairs(rule, s, heads=1) == want
        assert sm.attention_flops(sm.visible_pairs(rule, s, 16), 128) == 4.0 * 16 * 128 * want
    # causal window (4096, 0) + 128 sinks at 128k, per row: min(i, 4096) + 1 window keys plus the
    # sinks before the window
    s, w, g = 131072, 4096, 128
    rule = sm.MaskRule(causal=True, left=w, right=0, global_tokens=g)
    i = np.arange(s)
    want = np.minimum(i, w) + 1 + np.clip(np.minimum(i - w, g), 0, None)
    assert sm.visible_pairs(rule, s, heads=1) == int(want.sum())


def test_rule_checks():
    with pytest.raises(ValueError):
        sm.MaskRule(left=-2)
    rule = rule_of(False, -1, -1, 0, 64, np.ones((2, 4, 4), np.uint8))
    rule.check_shape(256, 2)
    with pytest.raises(ValueError):
        rule.check_shape(256, 3)
    with pytest.raises(ValueError):
        rule.check_shape(300, 2)
    with pytest.raises(ValueError):
        rule.sparse_attn_kwargs()
    assert rule_of(True, 7, 0, 4, 64).sparse_attn_kwargs() == dict(
        causal=True, window_size=(7, 0), global_tokens=4)


# ---- FlexAttention (torch on the CPU) ------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("case", [RULES[0], RULES[1], RULES[2], (384, False, 100, 100, 128, 128)])
@pytest.mark.parametrize("heads", [0, 1, 2])
def test_flex_block_mask_matches_create_block_mask(case, heads):
    pytest.importorskip("torch.nn.attention.flex_attention")
    from torch.nn.attention.flex_attention import create_block_mask

    s, causal, left, right, g, block = case
    if s % block:
        pytest.skip("Flex blocks")
    nb = s // block
    layout = sm.random_block_layout(heads, nb, nb, 0.5, seed=5) if heads else None
    rule = rule_of(causal, left, right, g, block, layout)
    bm, _ = sm.flex_block_mask(rule, s, 2, "cpu")
    layout_t = None if layout is None else torch.as_tensor(layout)
    ref = create_block_mask(rule.mask_mod(layout_t), 1, max(heads, 1), s, s, device="cpu",
                            BLOCK_SIZE=block)
    assert torch.equal(bm.to_dense(), ref.to_dense())
    for name in ("kv_num_blocks", "full_kv_num_blocks"):
        assert torch.equal(getattr(bm, name), getattr(ref, name)), name


@needs_torch
@pytest.mark.parametrize("heads", [0, 2])
def test_flex_output_matches_fp64_reference(heads):
    """Flex (eager, CPU) with our BlockMask against an fp64 attention over row_keys."""
    pytest.importorskip("torch.nn.attention.flex_attention")
    from torch.nn.attention.flex_attention import flex_attention

    s, h, d, block = 256, 2, 16, 64
    layout = sm.random_block_layout(h, s // block, s // block, 0.5, seed=9) if heads else None
    rule = rule_of(False, 30, 30, 8, block, layout) if heads else rule_of(True, 40, 0, 8, block)
    bm, _ = sm.flex_block_mask(rule, s, h, "cpu")
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, h, s, d, generator=gen) for _ in range(3))
    out = flex_attention(q, k, v, block_mask=bm)
    for head in range(h):
        for row in (0, 7, 8, 100, 255):
            keys = torch.as_tensor(sm.row_keys(rule, s, row, head))
            qr = q[0, head, row].double()
            sc = (k[0, head, keys].double() @ qr) / math.sqrt(d)
            ref = torch.softmax(sc, 0) @ v[0, head, keys].double()
            assert torch.allclose(out[0, head, row].double(), ref, atol=1e-4), (head, row)


def test_ab_summary_joins_rounds(tmp_path, capsys):
    """bench/ab_summary.py: per case the median over rounds of each side and B/A; cases missing on
    one side are left out; a label that already says causal is not told twice; the geometric
    mean of B/A by head dim, causal, and S up to 2048 or above; the kernels each side ran; no
    files is an error."""
    import json

    import ab_summary

    def bench(side, r, ms):
        rows = [{"label": "B1 Hq16 S1024 D64 float16", "causal": False, "ours_ms": ms,
                 "config": "sm90_ws_64x128_2cta" if side == "a" else "sm90_ws_128x128"},
                {"label": "B4 Hq16 S4096 D128 float16", "causal": True, "ours_ms": 2 * ms},
                {"label": "B2 Hq8 S512 D64 float16 causal", "causal": True,
                 "ours_ms": ms * (1.0 if side == "a" else 0.5)}]
        if side == "a":
            rows.append({"label": "only in A", "causal": False, "ours_ms": 1.0})
        (tmp_path / f"bench-{side}-{r}.json").write_text(json.dumps({"results": rows}))

    for r, (ma, mb) in enumerate([(1.0, 0.9), (1.2, 0.8), (1.1, 1.5)], start=1):
        bench("a", r, ma)
        bench("b", r, mb)
    (tmp_path / "sparse-a-1.json").write_text(json.dumps(
        {"cases": [{"case": "window W1024", "seqlen": 16384, "ours_ms": 0.4}]}))
    (tmp_path / "sparse-b-1.json").write_text(json.dumps(
        {"cases": [{"case": "window W1024", "seqlen": 16384, "ours_ms": 0.3}]}))
    assert ab_summary.main(["ab_summary", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    # medians: A 1.1, B 0.9 -> 0.818; causal row twice that; sparse 0.75
    assert "| B1 Hq16 S1024 D64 float16 | 3 | 1.1000 | 0.9000 | 0.818 |" in out
    assert "| B4 Hq16 S4096 D128 float16 causal | 3 | 2.2000 | 1.8000 | 0.818 |" in out
    assert "| window W1024 S16384 | 1 | 0.4000 | 0.3000 | 0.750 |" in out
    assert "only in A" not in out
    assert "| B2 Hq8 S512 D64 float16 causal | 3 |" in out and "causal causal" not in out
    # D64: non-causal 0.818 (1 shape); causal: the S512 shape, medians 1.1 -> 0.45
    assert "| 64 | no | 0.818 (1) | - |" in out
    assert "| 64 | yes | 0.409 (1) | - |" in out
    assert "| 128 | yes | - | 0.818 (1) |" in out
    # the kernels each side's rows name, with their runs
    assert "- A: sm90_ws_64x128_2cta: 3" in out and "- B: sm90_ws_128x128: 3" in out
    empty = tmp_path / "empty"
    empty.mkdir()
    assert ab_summary.main(["ab_summary", str(empty)]) == 1


def test_sm90_trace_summary_phases(tmp_path, capsys):
    """bench/sm90_trace_summary.py: per item the consumer phases between its stamps, the producer's
    stamps against the consumer's previous epilogue end, medians over the items after the first
    (and of the finer phases from the SM90_TRACE_X lines);
    a row left over from an earlier launch (older stamps) ends the items; the per-step table of
    the first item's key tiles (SM90_TILE lines, cycles); no stamps is an error."""
    import sm90_trace_summary

    lines = []
    for u in range(3):
        base = 10000 + 3000 * u
        cons = [0, 100, 100, 300, 310, 2310, 2710, 2770, 2840, 2870]
        # finer stamps 10-15: Q there, its registers, the turn, the epilogue started, the row
        # totals done, the loop top (before item taken at 0)
        fine = [150, 180, 200, 2330, 2600, -60]
        for role in (1, 2):
            lines.append(f"SM90_TRACE {role} {u} " + " ".join(str(base + c) for c in cons))
            lines.append(f"SM90_TRACE_X {role} {u} " + " ".join(str(base + c) for c in fine))
        prod = [base - 2000, base - 1900, base - 1000, base + 1500, 0, 0, 0, 0, 0, 0]
        lines.append(f"SM90_TRACE 0 {u} " + " ".join(str(x) for x in prod))
    lines.append("SM90_TRACE 1 3 " + " ".join(["5"] * 10))  # an earlier launch's item 3
    lines.append("unrelated output")
    trace = tmp_path / "trace.txt"
    trace.write_text("\n".join(lines) + "\n")
    sm90_trace_summary.main([str(trace), "--ghz", "1"])
    out = capsys.readouterr().out
    assert "CTA 0's span" not in out  # no row 47: an older build
    # CTA 0's own row: entry, barriers set up, consumers 0 and 1 drained (consumer 2 absent)
    lines.append("SM90_TRACE_X 0 47 9000 9700 19000 19100 0 0")
    trace.write_text("\n".join(lines) + "\n")
    sm90_trace_summary.main([str(trace), "--ghz", "1"])
    out = capsys.readouterr().out
    assert ("CTA 0's span: barrier setup 0.70, -> first item taken 0.30, -> last epilogue done "
            "8.87, -> stores drained 0.23, entry to drained 10.10") in out
    assert "all 128 CTAs" not in out
    lines.append("SM90_CTAS 128 1000 1600 11000 12500")  # ns: entries, first / last CTA done
    trace.write_text("\n".join(lines) + "\n")
    sm90_trace_summary.main([str(trace), "--ghz", "1"])
    out = capsys.readouterr().out
    assert ("all 128 CTAs (GPU timer): entries spread 0.60, first entry -> first done 10.00, "
            "-> last done 11.50 us") in out
    # CTA 0's own entry and end on the GPU timer: its 10100 cycles took 5050 ns, so 2 GHz,
    # and the times follow that clock unless --ghz says otherwise
    lines[-1] = "SM90_CTAS 128 1000 1600 11000 12500 1000 6050"
    trace.write_text("\n".join(lines) + "\n")
    sm90_trace_summary.main([str(trace)])
    out = capsys.readouterr().out
    assert out.startswith("items 3 (CTA 0); times in us at 2 GHz (measured")
    assert "entry to drained 5.05" in out
    sm90_trace_summary.main([str(trace), "--ghz", "1"])  # the phases below at 1 GHz
    out = capsys.readouterr().out
    assert out.startswith("items 3 (CTA 0)")
    assert ("median over items after the first, both consumers: gap 0.13, setup 0.10, q 0.00, "
            "s0i 0.20, s0 0.01, loop 2.00, smem 0.40, bar 0.06, store 0.07, tail 0.03, "
            "pt -1.87, pf -0.87, pl 1.63") in out
    assert ("finer, median over items after the first, both consumers: ring 0.06, qwait 0.05, "
            "ldsm 0.03, turn 0.02, issue 0.10, epi 0.02, totals 0.27, stsm 0.11") in out
    assert "steps of CTA 0's first item" not in out  # no SM90_TILE lines
    # Two steps of each consumer; consumer 1 enters each step 400 cycles after consumer 0. The
    # stamps in field order 0-8: entered, turn, issued, S there, softmax, pack, K there, S
    # issued, V there; in time order: 0 50 | 60 70 75 | 80 380 1380 1480.
    for cw in (0, 1):
        for t in (0, 1):
            at = 20000 + 2000 * t + 400 * cw
            lines.append(f"SM90_TILE {cw} {t} " + " ".join(
                str(at + c) for c in (0, 50, 80, 380, 1380, 1480, 60, 70, 75)))
    # the producer's loads of tiles 0-2 (entered, K free, V free, V issued)
    for t in range(3):
        lines.append(f"SM90_PTILE {t} " + " ".join(str(19000 + 2000 * t + c)
                                                   for c in (0, 10, 500, 510)))
    trace.write_text("\n".join(lines) + "\n")
    sm90_trace_summary.main([str(trace), "--ghz", "1"])
    out = capsys.readouterr().out
    # consumer 1's step 1 enters at 22400: K of tile 2 issued at 23010 (610), V of tile 1 at
    # 21510 (-890)
    assert "1 | 1 | 50 | 10 | 10 | 5 | 5 | 300 | 1000 | 100 | - | 400 | 610 | -890" in out
    assert "0 | 0 | 50 | 10 | 10 | 5 | 5 | 300 | 1000 | 100 | 2000 | 0 | 1010 | -490" in out
    assert ("consumer 1 median cycles: turn 50, kwait 10, qk 10, vwait 5, pv 5, wait 300, "
            "softmax 1000, pack 100, period 2000, K at 610, V at -890") in out
    empty = tmp_path / "empty.txt"
    empty.write_text("nothing here\n")
    with pytest.raises(SystemExit):
        sm90_trace_summary.main([str(empty)])


def test_sm90_trace_summary_sm_sharing(tmp_path, capsys):
    """bench/sm90_trace_summary.py's SM90_CTA lines (b smid warpid entry done, the SM clock at the
    first steps): SMs by the CTAs they hold, lone against sharing CTAs' end, which rules tell the
    two CTAs of an SM apart, and their phase (one pair in step, one alternating)."""
    import sm90_trace_summary

    assert sm90_trace_summary.sm_sharing({}) == []
    lines = ["SM90_TRACE 1 0 " + " ".join(str(100 * i) for i in range(1, 11)),
             "SM90_CTAS 6 1000 1100 12000 15200"]
    steps = {0: (0, 4, 1000, 15000, [100, 1100, 2100, 3100]),  # SM 0: CTAs 0 and 3, in step
             3: (0, 12, 1000, 15200, [110, 1110, 2110, 3110]),
             2: (1, 12, 1000, 15000, [100, 1100, 2100, 3100]),  # SM 1: CTAs 2 and 4, alternating
             4: (1, 4, 1100, 15100, [600, 1600, 2600, 3600]),
             1: (2, 4, 1000, 12000, [50, 750, 1450]),  # alone on SMs 2 and 3
             5: (3, 4, 1000, 12400, [])}  # (no steps)
    for b, (sm, wid, entry, done, st) in sorted(steps.items()):
        st = st + [0] * (8 - len(st))
        lines.append(f"SM90_CTA {b} {sm} {wid} {entry} {done} " + " ".join(map(str, st)))
    trace = tmp_path / "trace.txt"
    trace.write_text("\n".join(lines) + "\n")
    sm90_trace_summary.main([str(trace), "--ghz", "1"])
    out = capsys.readouterr().out
    assert "SMs by CTAs held: 1 CTA(s): 2, 2 CTA(s): 2" in out
    assert ("done after the first entry (us, median): 1 an SM 11.20 (2 CTAs), 2 an SM 14.05 "
            "(4 CTAs)") in out
    assert ("step period (cycles, median over CTAs): 1 an SM 700 (1 CTAs), 2 an SM 1000 (4 "
            "CTAs)") in out
    assert ("pairs told apart by: blockIdx parity 1/2, upper half of the grid 2/2, warp slot bit "
            "3 2/2, entered first 1/2") in out
    assert ("phase of the two CTAs of an SM (0: in step, 0.5: alternating): median 0.26, "
            "quartiles 0.01 / 0.50 (8 steps)") in out


def test_time_in_rounds_takes_the_keys_in_turn():
    """bench_common.time_in_rounds / median (compare_torch.py): every key once per round, the keys
    in turn, so a slow spell lands on every key; the median of the rounds drops one slow round."""
    import bench_common

    calls = []
    clock = iter([10.0, 20.0, 31.0, 19.0, 9.0, 55.0])  # ours, sdpa per round; round 3 slow sdpa

    def measure(key):
        def run():
            calls.append(key)
            return next(clock)
        return run

    rounds = bench_common.time_in_rounds({"ours": measure("ours"), "sdpa": measure("sdpa")}, 3)
    assert calls == ["ours", "sdpa"] * 3
    assert rounds == {"ours": [10.0, 31.0, 9.0], "sdpa": [20.0, 19.0, 55.0]}
    assert bench_common.median(rounds["ours"]) == 10.0
    assert bench_common.median(rounds["sdpa"]) == 20.0
    assert bench_common.median([4.0, 1.0]) == 2.5
    assert bench_common.time_in_rounds({}, 2) == {}
    with pytest.raises(ValueError, match="repeats must be at least 1, got 0"):
        bench_common.time_in_rounds({"ours": measure("ours")}, 0)
    with pytest.raises(ValueError, match="empty"):
        bench_common.median([])


def test_host_check_names_the_backends_whose_host_outlasts_the_flush():
    """bench_common.host_bound / host_bound_keys (compare_torch.py's host check), on figures of
    bench/results/2026-11-28-h200-s28 and 2026-11-29-h200-s30: named when the host's issue of a
    call comes within 20% of do_bench's flush and its whole iteration outlasts the GPU's."""
    import bench_common

    hb = bench_common.host_bound
    assert not hb(24.3, 81.5, 0.0513, 10.0)     # ours, decode, a quiet host
    assert not hb(42.9, 65.3, 0.0175, 25.8)     # call 6: ours, one-wave D64, quiet, 17.5 us
    assert not hb(48.0, 74.0, 0.0515, 59.0)     # call 6: a busy host, decode time unmoved
    assert not hb(79.4, 81.5, 0.0985, 25.8)     # cuDNN Sq4, busy: its 98 us call keeps it behind
    assert hb(132.0, 81.5, 0.1025, 25.8)        # call 2's decode: ~51 us of excess
    assert not hb(132.0, 81.5, 0.1025)          # ... which needs do_bench's own host time too
    assert not hb(132.0, 81.5, 0.5, 25.8)       # a long call: the host keeps ahead
    # 2026-11-29-h200-s30 call 1: E4M3 decode, B8 L4096, 60.4 us measured against 38.5-39.7 in
    # the other runs; the host's excess runs from the flush's launch (~half the loop), not only
    # from the call's start (66 + 39.3 < 60.3 + 60.4 - (66 - 60.3) would have cleared it).
    assert hb(66.0, 60.3, 0.0604, 39.3)
    assert not hb(39.0, 60.3, 0.0385, 31.8)     # call 1's quiet run of the same row
    assert hb(64.0, 80.0, 0.010, 30.0)          # at the limits: 64 = 0.8 x 80, 94 >= 80 + 10
    assert not hb(63.9, 80.0, 0.010, 30.0)
    assert not hb(64.0, 80.0, 0.0141, 30.0)     # 94 < 80 + 14.1
    assert hb(64.0, 80.0, 0.014, 30.0)          # 94 >= 80 + 14 (exact in binary)
    row = {"ours_ms": 0.1025, "ours_host_us": 132.0, "cudnn_ms": 0.076, "cudnn_host_us": 150.0,
           "flash_ms": 0.081, "flash_host_us": 40.0}
    assert bench_common.host_bound_keys(row, 81.5, 25.8) == ["ours", "cudnn"]
    row.update(flash_ms=0.02, flash_host_us=90.0, ours_host_us=40.0)
    assert bench_common.host_bound_keys(row, 81.5, 25.8) == ["cudnn", "flash"]
    assert bench_common.host_bound_keys(row, None, 25.8) == []  # the CPU: no flush, no check
    assert bench_common.host_bound_keys({"ours_host_us": 500.0}, 81.5) == []  # no time: no claim


def test_time_rows_marks_the_rows_whose_probe_drained_the_gpu(monkeypatch):
    """bench_common.time_rows: every row timed once a round; on CUDA each row's host probe (strict:
    a probe that outlasts the GPU's sleep raises), a drained probe making the row's host time None
    and the row bound, with or without a flush to judge the others by; no probe off the GPU."""
    import bench_common

    def fake_host_us(fn, calls, rounds=1, cuda=False, sleep_cycles=0, strict=False):
        assert cuda and strict and calls == bench_common.HOST_CALLS
        assert sleep_cycles == bench_common.HOST_SLEEP
        got = fn()
        if isinstance(got, Exception):
            raise got
        return got

    monkeypatch.setattr(bench_common, "host_us", fake_host_us)
    probes = {"quick": 10.0, "sync": RuntimeError("the GPU sleep ended"), "slow": 70.0}
    calls = {name: (lambda value=value: value) for name, value in probes.items()}
    order = []

    def timer(fn):
        order.append(fn)
        return 0.05  # ms

    times, rounds, host, bound = bench_common.time_rows(calls, 2, timer, cuda=True, flush=60.0,
                                                        loop=30.0)
    assert order == [calls["quick"], calls["sync"], calls["slow"]] * 2  # the rows in turn
    assert times == {"quick": 0.05, "sync": 0.05, "slow": 0.05}
    assert rounds == {name: [0.05, 0.05] for name in calls}
    assert host == {"quick": 10.0, "sync": None, "slow": 70.0}
    assert bound == ["sync", "slow"]  # slow: 70 + 30 >= 60 + 50 - (70 + 15 - 60)
    assert bench_common.time_rows(calls, 1, timer, cuda=True)[3] == ["sync"]  # no flush known
    _, _, host, bound = bench_common.time_rows(calls, 1, timer)  # off the GPU: no probe
    assert host == {} and bound == []


def test_finish_rows_warns_and_writes_the_json(tmp_path, capsys):
    """bench_common.row_host_note and finish_rows: a row's host note; the warning for marked rows
    (also with no flush measured: a drained probe marks its row regardless); the JSON."""
    import json
    import bench_common

    host, bound = {"a": 12.4, "b": None}, ["b"]
    assert bench_common.row_host_note("a", host, bound) == "  host 12 us"
    assert bench_common.row_host_note("b", host, bound) == "  host: drained the GPU  HOST-BOUND"
    assert bench_common.row_host_note("c", host, bound) == ""
    rows = [{"host_bound": ["b"]}, {"host_bound": []}]
    out = tmp_path / "r.json"
    assert bench_common.finish_rows(rows, None, None, 2, "gpu", str(out)) == 1
    assert "WARNING: 1 row(s) host-bound (the GPU's work did not cover" in capsys.readouterr().out
    got = json.loads(out.read_text())
    assert got["device"] == "gpu" and got["repeats"] == 2 and got["host_bound_rows"] == 1
    assert got["flush_us"] is None and got["rows"] == rows
    assert bench_common.finish_rows(rows[1:], 60.0, 30.0, 1, "gpu", None) == 0
    assert capsys.readouterr().out == ""


def test_host_us_counts_the_calls_and_rejects_bad_counts():
    """bench_common.host_us without a GPU: one warm-up call, then `calls` a round, and a positive
    time a call; calls or rounds under 1 is an error naming both."""
    import bench_common

    import time

    calls = []
    us = bench_common.host_us(lambda: calls.append(1), 7, rounds=3)
    assert len(calls) == 1 + 7 * 3
    assert us > 0
    # the median of the rounds: one slow round (5 ms a call) does not set the figure
    def slow_in_round_2():
        calls.append(1)
        if 1 + 4 < len(calls) <= 1 + 2 * 4:
            time.sleep(0.005)
    calls.clear()
    assert bench_common.host_us(slow_in_round_2, 4, rounds=3) < 2500
    with pytest.raises(ValueError, match="got 0 and 2"):
        bench_common.host_us(lambda: None, 0, rounds=2)
    with pytest.raises(ValueError, match="got 5 and 0"):
        bench_common.host_us(lambda: None, 5, rounds=0)


class _FakeGpu:
    """A stream for host_us(cuda=True) without a GPU: _sleep queues a sleep; a call queues a
    kernel, and a synchronizing call first waits the queue out (the sleep ends); an event
    completes once what was queued before it is done. Kernels queued after the wait are still
    running when host_us looks, as on the GPU (a checked paged call's last kernel)."""

    def __init__(self):
        self.sleeping = False
        self.queued = 0  # kernels queued and not done

    def module(self):
        gpu = self

        class Event:
            def record(self):
                self.behind = (gpu.sleeping, gpu.queued)

            def query(self):
                sleep_pending, kernels = self.behind
                return not (sleep_pending and gpu.sleeping) and not (kernels and gpu.queued)

        def _sleep(cycles):
            gpu.sleeping = True

        def synchronize():
            gpu.sleeping, gpu.queued = False, 0

        cuda = types.SimpleNamespace(_sleep=_sleep, Event=Event, synchronize=synchronize)
        return types.SimpleNamespace(cuda=cuda)

    def call(self, synchronizing):
        if synchronizing:
            self.sleeping, self.queued = False, 0
        self.queued += 1


def test_host_us_strict_probe_sees_a_synchronizing_call(monkeypatch):
    """host_us(cuda=True, strict=True) raises when a call waited the GPU's sleep out, though the
    kernels queued after that wait still run when it looks (2026-11-29-h200-s31 call 2: checking
    whether everything queued was done missed it, and the checked paged_decode rows read host
    times of 339-502 us that were the sleep's and their kernels')."""
    import bench_common

    gpu = _FakeGpu()
    monkeypatch.setitem(sys.modules, "torch", gpu.module())
    with pytest.raises(RuntimeError, match="sleep ended before the calls were issued"):
        bench_common.host_us(lambda: gpu.call(True), 5, cuda=True, strict=True)
    # a call that does not synchronize leaves the sleep running: a host time
    assert bench_common.host_us(lambda: gpu.call(False), 5, cuda=True, strict=True) > 0
    # not strict: the round stands
    assert bench_common.host_us(lambda: gpu.call(True), 5, cuda=True, strict=False) > 0


def _summary_inputs(log_dir, bound):
    """A minimal gpu-check log directory: one bench shape, its cuDNN anchor, and compare_torch.json
    with a decode case that is host-bound for `bound` (a list of backends)."""
    import json

    shape = {"dtype": "float16", "batch": 1, "seqlen_q": 1024, "seqlen_k": 1024, "head_dim": 64,
             "causal": False}
    bench = {"device_name": "NVIDIA H200", "date": "2026-11-28", "commit": "abc",
             "peak_tflops": {"f16": 751.4, "bf16": 787.9},
             "results": [dict(shape, hq=16, shape="B1 Hq16 S1024 D64", flops=4294967296.0,
                              ours_ms=0.018, ours_us_per_head=1.125)]}
    anchors = {"torch": "2.11", "cudnn": 91900, "layout": "bshd", "timing": "do_bench",
               "results": [dict(shape, hq=16, backend="cudnn", ms=0.0189)]}
    case = {"dtype": "bfloat16", "batch": 8, "heads_q": 32, "heads_kv": 8, "seqlen_q": 1,
            "seqlen_k": 4096, "head_dim": 128, "causal": False}
    if bound:
        case["host_bound"] = bound
    compare = {"flush_us": 81.5, "cases": [case]}
    turns = {"flush_us": 70.2, "cases": [
        dict(shape, heads_q=32, heads_kv=32, batch=32, seqlen_q=512, seqlen_k=512, causal=True,
             **({"host_bound": ["cudnn"]} if bound else {})),
        dict(shape, heads_q=32, heads_kv=32, batch=32, seqlen_q=512, seqlen_k=512),
        dict(shape, heads_q=32, heads_kv=32, batch=16, seqlen_q=1024, seqlen_k=1024,
             **({"host_bound": ["ours", "flash"]} if bound else {}))]}
    for name, d in (("bench.json", bench), ("anchors.json", anchors),
                    ("compare_torch.json", compare), ("sweep-turns.json", turns)):
        (log_dir / name).write_text(json.dumps(d))


def test_gpu_check_summary_warns_of_host_bound_cases(tmp_path):
    """bench/gpu_check_summary.py (scripts/gpu-check.sh's joined table): the ratio of the shape,
    a warning naming each host-bound case of compare_torch.json and its backends (none when no case
    is), the failed steps, and a usage error for a missing LOG_DIR."""
    import subprocess

    script = os.path.join(ROOT, "bench", "gpu_check_summary.py")
    _summary_inputs(tmp_path, ["ours", "cudnn"])
    r = subprocess.run([sys.executable, script, str(tmp_path), "anchors"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "summary.md").read_text()
    assert text.strip() == r.stdout.strip()
    assert "| B1 Hq16 S1024 D64 | float16 | no | 238.6 | 1.125 | n/a | 227.2 | n/a | 1.05 |" in text
    assert ("WARNING: compare_torch.json: host-bound (the host's time a call near or past the L2 "
            "flush's 82 us; the times may include the host's): bfloat16 B8 H32/8 Sq1 Sk4096 D128: "
            "ours, cudnn") in text
    assert ("WARNING: sweep-turns.json: host-bound (the host's time a call near or past the L2 "
            "flush's 70 us; the times may include the host's): float16 B32 H32/32 Sq512 Sk512 D64 "
            "causal: cudnn; float16 B16 H32/32 Sq1024 Sk1024 D64: ours, flash") in text
    assert "FAILED steps: anchors" in text

    _summary_inputs(tmp_path, [])
    r = subprocess.run([sys.executable, script, str(tmp_path), ""], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "summary.md").read_text()
    assert "WARNING" not in text and "FAILED" not in text

    (tmp_path / "sweep-turns.json").write_text('{"cases": [{"host_bound": ["ours"]')  # cut short
    r = subprocess.run([sys.executable, script, str(tmp_path), ""], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "summary.md").read_text()
    assert "NOTE: sweep-turns.json unreadable for the host check (JSONDecodeError" in text
    assert "| B1 Hq16 S1024 D64 | float16 | no |" in text  # the table survives

    r = subprocess.run([sys.executable, script, str(tmp_path / "absent"), ""],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "is not a directory" in r.stderr
    r = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "got 0 arguments" in r.stderr


STUB_CMAKE = r"""#!/usr/bin/env bash
# cmake -S SRC -B BUILD ...: writes BUILD/tools/gpuattn, whose bench reports SRC/FACTOR ms (or
# $STUB_MS), labelled with its --shape (or "c"), and appends "BUILD-DIR-NAME LABEL" to ../CALLS
if [ "$1" = --build ]; then exit 0; fi
src=$2; build=$4
mkdir -p "$build/tools"
cp "$src/FACTOR" "$build/FACTOR"
cat > "$build/tools/gpuattn" <<'EOS'
#!/usr/bin/env bash
here=$(dirname "$0")
printf '%s\n' "$@" > "$here/../ARGS"
label=c
while [ $# -gt 0 ]; do
  [ "$1" = --json ] && j=$2
  [ "$1" = --shape ] && label=$2
  shift
done
echo "$(basename "$(dirname "$here")") $label" >> "$here/../../CALLS"
ms=${STUB_MS:-$(cat "$here/../FACTOR")}
echo "{\"results\": [{\"label\": \"$label\", \"ours_ms\": $ms}]}" > "$j"
EOS
chmod +x "$build/tools/gpuattn"
"""


def test_ab_sh_runs_every_b_side_against_a(tmp_path):
    """scripts/ab.sh with a stub cmake (each tree's "benchmark" reports the number in its FACTOR
    file): one B side gives one table, AB_B_DIRS with several gives one table per B against A,
    everything but summary.md goes into logs.tar.gz, AB_ONLY becomes gpuattn bench's --only,
    AB_EACH runs a process a shape in palindrome side order, AB_ENV_<side> sets one side's
    environment."""
    import shutil
    import subprocess

    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    (repo / "bench").mkdir()
    shutil.copy(os.path.join(ROOT, "scripts", "ab.sh"), repo / "scripts" / "ab.sh")
    shutil.copy(os.path.join(ROOT, "bench", "ab_summary.py"), repo / "bench" / "ab_summary.py")
    for name, factor in ((".", "1.0"), ("A", "2.0"), ("B1", "1.0"), ("B2", "3.0")):
        (repo / name).mkdir(exist_ok=True)
        (repo / name / "CMakeLists.txt").write_text("")
        (repo / name / "FACTOR").write_text(factor)
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "cmake").write_text(STUB_CMAKE)
    (stub / "cmake").chmod(0o755)
    env = dict(os.environ, PATH=f"{stub}:{os.environ['PATH']}", AB_SPARSE="0")

    def run(out, **extra):
        return subprocess.run(["bash", str(repo / "scripts" / "ab.sh"), "A", "2"], cwd=repo,
                              env=dict(env, OUT=str(out), **extra), capture_output=True,
                              text=True)

    one = run(tmp_path / "one")
    assert one.returncode == 0, one.stderr
    assert "| c | 2 | 2.0000 | 1.0000 | 0.500 |" in one.stdout
    assert sorted(os.listdir(tmp_path / "one" / "ab")) == ["logs.tar.gz", "summary.md"]

    many = run(tmp_path / "many", AB_B_DIRS="B1 B2")
    assert many.returncode == 0, many.stderr
    summary = (tmp_path / "many" / "ab" / "summary.md").read_text()
    assert "## b1 = B1 against a = A" in summary and "## b2 = B2 against a = A" in summary
    assert "| c | 2 | 2.0000 | 1.0000 | 0.500 |" in summary
    assert "| c | 2 | 2.0000 | 3.0000 | 1.500 |" in summary

    missing = run(tmp_path / "missing", AB_B_DIRS="B1 nowhere")
    assert missing.returncode == 2
    assert "nowhere holds no CMakeLists.txt" in missing.stderr

    # AB_ONLY reaches gpuattn bench as one --only argument, on both sides; unset, no --only.
    assert "--only" not in (repo / "build-ab-a" / "ARGS").read_text()
    only = run(tmp_path / "only", AB_ONLY="D64 causal")
    assert only.returncode == 0, only.stderr
    for side in ("a", "b"):
        args = (repo / f"build-ab-{side}" / "ARGS").read_text().splitlines()
        assert args[args.index("--only") + 1] == "D64 causal"

    # AB_EACH: a process a shape, sides in palindrome order each round, no --shapes run.
    (repo / "CALLS").unlink()
    each = run(tmp_path / "each", AB_EACH="B1 H8 S64 D64; B2 H8 S64 D64 causal",
               AB_B_DIRS="B1 B2")
    assert each.returncode == 0, each.stderr
    calls = (repo / "CALLS").read_text().splitlines()
    side = lambda c: c.split()[0].replace("build-ab-", "")  # noqa: E731
    assert [side(c) for c in calls[:6]] == ["a", "b1", "b2", "b2", "b1", "a"]
    assert len(calls) == 2 * 2 * 6  # 2 rounds, 2 shapes, 6 runs each
    assert all(c.endswith(" B1 H8 S64 D64") for c in calls[:6])
    assert all(c.endswith(" B2 H8 S64 D64 causal") for c in calls[6:12])
    summary = (tmp_path / "each" / "ab" / "summary.md").read_text()
    for shape in ("B1 H8 S64 D64", "B2 H8 S64 D64 causal"):  # stripped of spaces around
        assert f"| {shape} | 4 | 2.0000 | 1.0000 | 0.500 |" in summary  # b1
        assert f"| {shape} | 4 | 2.0000 | 3.0000 | 1.500 |" in summary  # b2
    empty = run(tmp_path / "empty", AB_EACH=" ; ;")
    assert empty.returncode == 2 and "AB_EACH=' ; ;' names no shape" in empty.stderr
    only_each = run(tmp_path / "only_each", AB_EACH="B1 H8 S64 D64", AB_ONLY="D64")
    assert only_each.returncode == 2 and "AB_ONLY" in only_each.stderr

    # AB_ENV_<side>: the same tree on both sides, B's runs with their own environment.
    envd = run(tmp_path / "envd", AB_B_DIRS="A", AB_ENV_b="STUB_MS=5.0 X=1")
    assert envd.returncode == 0, envd.stderr
    assert "| c | 2 | 2.0000 | 5.0000 | 2.500 |" in envd.stdout
    named = run(tmp_path / "named", AB_B_DIRS="B1 B1", AB_ENV_b2="STUB_MS=4.0")
    assert "## b2 = B1 (STUB_MS=4.0) against a = A" in named.stdout, named.stderr
    assert "| c | 2 | 2.0000 | 4.0000 | 2.000 |" in named.stdout
    bad = run(tmp_path / "bad", AB_ENV_a="STUB_MS=1 oops")
    assert bad.returncode == 2
    assert "AB_ENV_a='STUB_MS=1 oops': 'oops' is not VAR=value" in bad.stderr
    assert not (tmp_path / "bad" / "ab" / "configure-build-ab-a.log").exists()  # before any build
    for word in ("A-B=1", "X='a", "=1"):
        r = run(tmp_path / "badname", AB_ENV_b=word)
        assert r.returncode == 2 and f"'{word}' is not VAR=value" in r.stderr, word
    # ... and on the AB_EACH runs, with the side's environment in the one-B summary's header; a
    # stale file of an earlier run in the same OUT does not join the rounds.
    (tmp_path / "envd" / "ab" / "bench-b-9.json").write_text(
        '{"results": [{"label": "B1 H8 S64 D64", "ours_ms": 100.0}]}')
    each_env = run(tmp_path / "envd", AB_B_DIRS="A", AB_ENV_b="STUB_MS=5.0",
                   AB_EACH="B1 H8 S64 D64")
    assert each_env.returncode == 0, each_env.stderr
    assert "## b = A (STUB_MS=5.0) against a = A" in each_env.stdout
    assert "| B1 H8 S64 D64 | 4 | 2.0000 | 5.0000 | 2.500 |" in each_env.stdout


def test_gpu_check_skips_and_clears_stale_files(tmp_path):
    """scripts/gpu-check.sh with GPU_CHECK_TESTS=0 and GPU_CHECK_BENCH=0 runs no step (no GPU
    needed) and first removes what an earlier run left in the log directory, so a skipped step's
    old table cannot pass for this run's."""
    import subprocess

    out = tmp_path / "out"
    out.mkdir()
    stale = ["summary.md", "bench.json", "anchors.json", "verify.json", "ctest.log",
             "memcheck-auto.log", "sweep.md", "sweep.png", "compare_torch.json", "logs.tar.gz"]
    for name in stale:
        (out / name).write_text("from an earlier run")
    (out / "notes.md").write_text("mine")  # not gpu-check's: kept
    (out / "console.log").write_text("the caller's redirect")  # kept loose, not archived
    env = dict(os.environ, OUT=str(out), GPU_CHECK_SKIP_BUILD="1", GPU_CHECK_TESTS="0",
               GPU_CHECK_BENCH="0", GPU_CHECK_BUILD_DIR=str(tmp_path / "build"))
    r = subprocess.run(["bash", os.path.join(ROOT, "scripts", "gpu-check.sh")], env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "skipped (GPU_CHECK_TESTS=0)" in r.stdout
    assert "skipped (GPU_CHECK_BENCH=0)" in r.stdout
    left = set(os.listdir(out))
    assert "notes.md" in left
    assert (out / "console.log").read_text() == "the caller's redirect"
    for name in stale:
        if name in left:  # only the archive of this run's own logs may come back
            assert name == "logs.tar.gz"
            assert (out / name).read_bytes() != b"from an earlier run"


def test_gpu_check_passes_its_ctest_args(tmp_path):
    """GPU_CHECK_CTEST_ARGS reaches the ctest step word by word (the correctness half split over two
    device calls: "-E python.pytest", then "-R python.pytest"). With no build here the verify step
    fails, and gpu-check exits non-zero after running every step."""
    import subprocess

    out = tmp_path / "out"
    out.mkdir()
    env = dict(os.environ, OUT=str(out), GPU_CHECK_SKIP_BUILD="1", GPU_CHECK_BENCH="0",
               GPU_CHECK_TESTS="1", GPU_CHECK_CTEST="1", GPU_CHECK_CTEST_JOBS="8",
               GPU_CHECK_SANITIZER="0", GPU_CHECK_CTEST_ARGS="-E python.pytest  --timeout 120",
               GPU_CHECK_BUILD_DIR=str(tmp_path / "build"))
    r = subprocess.run(["bash", os.path.join(ROOT, "scripts", "gpu-check.sh")], env=env,
                       capture_output=True, text=True)
    line = next(l for l in r.stdout.splitlines() if l.startswith("== ctest: "))
    assert " -j 8 -E python.pytest --timeout 120 (" in line, line
    assert r.returncode != 0  # no build here: the verify step (at least) fails


def _decode_bench_on_the_cpu(name, out, extra=()):
    """Runs bench/NAME --device cpu --repeats 2 --json OUT (and `extra`) and checks what both
    decode benches share: a clean exit, the JSON's repeats, no flush and no host-bound row off the
    GPU; and that --repeats 0 is refused, naming it. Returns the JSON."""
    import json
    import subprocess

    pytest.importorskip("gpu_attention")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "bench"), env.get("PYTHONPATH", "")])
    script = os.path.join(ROOT, "bench", name)
    r = subprocess.run([sys.executable, script, "--device", "cpu", "--repeats", "2", "--json",
                        str(out), *extra], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    got = json.loads(out.read_text())
    assert got["repeats"] == 2 and got["flush_us"] is None and got["host_bound_rows"] == 0
    r = subprocess.run([sys.executable, script, "--device", "cpu", "--repeats", "0"], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "--repeats 0" in r.stderr
    return got


@needs_torch
def test_quantized_decode_runs_on_the_cpu(tmp_path):
    """bench/quantized_decode.py --device cpu: every row timed in rounds, the 8-bit caches' error
    that of their quantization, no host check off the GPU, JSON written; a bad --repeats named."""
    got = _decode_bench_on_the_cpu("quantized_decode.py", tmp_path / "qd.json")
    assert len(got["rows"]) == 2
    names = {"ours bf16", "ours e4m3", "ours e4m3 page 16", "ours int8"}
    for row in got["rows"]:
        assert set(row["us"]) == names and row["host_bound"] == [] and row["host_us"] == {}
        assert all(len(rounds) == 2 and min(rounds) > 0 for rounds in row["us_rounds"].values())
        err = row["rel_err_vs_cudnn_bf16"]
        assert 1e-3 < err["ours int8"] < 3e-2 and 1e-2 < err["ours e4m3"] < 6e-2, err
        assert err["ours e4m3 page 16"] == pytest.approx(err["ours e4m3"], rel=1e-3)


@needs_torch
def test_quantized_decode_alibi_rows_run_on_the_cpu(tmp_path):
    """bench/quantized_decode.py --alibi --device cpu: the ALiBi rows beside the plain ones, each
    8-bit row's error against ours bf16 alibi that of its quantization (the same as its plain
    row's against the bf16 anchor, to a factor), the dequantized copy's close to the in-place int8
    row's."""
    got = _decode_bench_on_the_cpu("quantized_decode.py", tmp_path / "qda.json", ["--alibi"])
    assert len(got["rows"]) == 2
    names = {"ours bf16", "ours e4m3", "ours e4m3 page 16", "ours int8", "ours bf16 alibi",
             "ours e4m3 alibi", "ours int8 alibi", "int8 alibi via copy"}
    for row in got["rows"]:
        assert set(row["us"]) == names
        assert all(len(rounds) == 2 and min(rounds) > 0 for rounds in row["us_rounds"].values())
        err = row["rel_err_vs_cudnn_bf16"]
        assert 1e-3 < err["ours int8 alibi"] < 3e-2 and 1e-2 < err["ours e4m3 alibi"] < 6e-2, err
        assert err["int8 alibi via copy"] == pytest.approx(err["ours int8 alibi"], rel=0.2), err


@needs_torch
def test_paged_decode_runs_on_the_cpu(tmp_path):
    """bench/paged_decode.py --device cpu: every row timed in rounds, the paged calls' results
    those of the dense cache (shuffled pages, three page sizes), no host check off the GPU, JSON
    written; a bad --repeats named."""
    got = _decode_bench_on_the_cpu("paged_decode.py", tmp_path / "pd.json")
    assert len(got["rows"]) == 2
    names = {"ours dense", "ours dense+seqlens", "ours dense+seqlens u",
             "ours page 16 in order u"}
    names |= {f"ours page {p}{u}" for p in (16, 64, 256) for u in ("", " u")}
    for row in got["rows"]:
        assert set(row["us"]) == names and row["host_bound"] == [] and row["host_us"] == {}
        assert all(len(rounds) == 2 and min(rounds) > 0 for rounds in row["us_rounds"].values())
        diffs = row["rel_diff_vs_cudnn"]
        assert set(diffs) == {"ours page 16", "ours page 64", "ours page 256"}
        assert all(0 < d < 1e-2 for d in diffs.values()), diffs


@needs_torch
def test_host_overhead_runs_on_the_cpu(tmp_path):
    """bench/host_overhead.py --device cpu: every row measured, JSON written (the GPU run keeps the
    stream busy with torch.cuda._sleep; here the calls run the CPU backend)."""
    import json
    import subprocess

    pytest.importorskip("gpu_attention")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "bench"), env.get("PYTHONPATH", "")])
    out = tmp_path / "host.json"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "host_overhead.py"), "--device",
                        "cpu", "--calls", "3", "--rounds", "1", "--json", str(out)], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    got = json.loads(out.read_text())["host_us_per_call"]
    assert set(got) == {"ours flash_attn_func", "ours flash_attn_func, general path",
                        "ours flash_attn_with_kvcache (decode)",
                        "ours flash_attn_with_kvcache (decode, k/v appended)",
                        "ours flash_attn_with_kvcache (decode, E4M3 cache)",
                        "ours flash_attn_with_kvcache (decode, E4M3 cache, general path)",
                        "ours _C.attention_forward (prebuilt args)", "torch.empty_like(q)"}
    assert all(us > 0 for us in got.values())
    assert "cProfile of 3 flash_attn_func calls" in r.stdout


@needs_torch
def test_softcap_bench_runs_on_the_cpu(tmp_path):
    """bench/softcap_bench.py --device cpu: both smoke cases timed on every side (ours and Flex,
    capped and not), ours and Flex within a float32 tolerance of the fp64 soft-capped reference,
    JSON and markdown written; a bad --cap and an --only that matches nothing are named."""
    import json
    import subprocess

    pytest.importorskip("gpu_attention")
    pytest.importorskip("torch.nn.attention.flex_attention")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "bench"), env.get("PYTHONPATH", "")])
    script = os.path.join(ROOT, "bench", "softcap_bench.py")
    out, md = tmp_path / "cap.json", tmp_path / "cap.md"
    r = subprocess.run([sys.executable, script, "--device", "cpu", "--cap", "5", "--json", str(out),
                        "--md", str(md)], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    got = json.loads(out.read_text())
    assert got["softcap"] == 5 and len(got["rows"]) == 2
    for row in got["rows"]:
        assert not [k for k in row if k.endswith("_error")], row
        for side in ("ours", "ours_uncapped", "flex", "flex_uncapped"):
            assert row[f"{side}_ms"] > 0
        assert row["ours_max_err"] < 1e-4 and row["flex_max_err"] < 1e-4, row
    assert "softcap 5.0" in md.read_text()
    r = subprocess.run([sys.executable, script, "--device", "cpu", "--cap", "0"], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "--cap 0.0 must be > 0" in r.stderr
    r = subprocess.run([sys.executable, script, "--device", "cpu", "--only", "D999"], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "--only D999 matches no case" in r.stderr


@needs_torch
def test_alibi_bench_runs_on_the_cpu(tmp_path):
    """bench/alibi_bench.py --device cpu: the three smoke cases (one with a sliding window) timed
    on every side (ours and Flex, with the bias and without), ours and Flex within a float32
    tolerance of the fp64 ALiBi reference, JSON and markdown written; an --only that matches
    nothing is named."""
    import json
    import subprocess

    pytest.importorskip("gpu_attention")
    pytest.importorskip("torch.nn.attention.flex_attention")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "bench"), env.get("PYTHONPATH", "")])
    script = os.path.join(ROOT, "bench", "alibi_bench.py")
    out, md = tmp_path / "alibi.json", tmp_path / "alibi.md"
    r = subprocess.run([sys.executable, script, "--device", "cpu", "--json", str(out), "--md",
                        str(md)], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    got = json.loads(out.read_text())
    assert len(got["rows"]) == 3
    for row in got["rows"]:
        assert not [k for k in row if k.endswith("_error")], row
        for side in ("ours", "ours_plain", "flex", "flex_plain"):
            assert row[f"{side}_ms"] > 0
        assert row["ours_max_err"] < 1e-4 and row["flex_max_err"] < 1e-4, row
    windowed = got["rows"][2]
    assert windowed["window"] == [20, 7]
    # 4 D x pairs: rows see [i - 20, i + 7] within the 160 keys.
    pairs = sum(min(159, i + 7) - max(0, i - 20) + 1 for i in range(160))
    assert windowed["flops"] == 4.0 * 2 * pairs * 64
    assert "ALiBi attention" in md.read_text()
    r = subprocess.run([sys.executable, script, "--device", "cpu", "--only", "D999"], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "--only D999 matches no case" in r.stderr


@needs_torch
def test_compare_torch_runs_given_cases_and_rejects_bad_ones(tmp_path):
    """bench/compare_torch.py --case: the cases given instead of the built-in list (here on the
    CPU backend), and a clear error naming a malformed --case."""
    import json
    import subprocess

    pytest.importorskip("gpu_attention")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "bench"), env.get("PYTHONPATH", "")])
    script = os.path.join(ROOT, "bench", "compare_torch.py")
    out = tmp_path / "cmp.json"
    r = subprocess.run([sys.executable, script, "--device", "cpu", "--repeats", "1", "--json",
                        str(out), "--case", "float16,1,2,2,33,70,64,1",
                        "--case", "bfloat16,2,4,2,64,64,128,0"],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    cases = json.loads(out.read_text())["cases"]
    assert [(c["dtype"], c["batch"], c["heads_q"], c["heads_kv"], c["seqlen_q"], c["seqlen_k"],
             c["head_dim"], c["causal"]) for c in cases] == [
        ("float16", 1, 2, 2, 33, 70, 64, True), ("bfloat16", 2, 4, 2, 64, 64, 128, False)]
    for bad, why in [("float16,1,2", "8 comma-separated fields"),
                     ("float32,1,2,2,8,8,64,0", "'float32' is not float16"),
                     ("float16,1,2,2,8,8,64,2", "CAUSAL 0 or 1"),
                     ("float16,1,x,2,8,8,64,0", "must be integers")]:
        r = subprocess.run([sys.executable, script, "--device", "cpu", "--case", bad], env=env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and why in r.stderr and bad in r.stderr, (bad, r.stderr)


# bench/power_probe.py's parsing (its measuring needs a GPU, torch and the module).
import power_probe as pp  # noqa: E402


def test_power_probe_parses_cases_and_names_bad_ones():
    assert pp.parse_case("bfloat16,4,16,4096,128") == ("bfloat16", 4, 16, 4096, 128, False)
    assert pp.parse_case("float16,16,8,1024,256,1") == ("float16", 16, 8, 1024, 256, True)
    assert pp.parse_case("float16,16,8,1024,256,0") == ("float16", 16, 8, 1024, 256, False)
    for bad, part in [("float32,1,1,1,64", "float32"), ("float16,1,1,1,96", "D 64"),
                      ("float16,0,1,1,64", ">= 1"), ("float16,1,x,1,64", "integers"),
                      ("float16,1,1,64", r"dtype,B,H,S,D\[,causal\]"),
                      ("float16,1,1,1,64,2", "causal '2' is not 0 or 1"),
                      ("float16,1,1,1,64,1,0", "dtype,B,H,S,D")]:
        with pytest.raises(Exception, match=part):
            pp.parse_case(bad)


def test_power_probe_reads_nvidia_smi_lines():
    lines = ["2026/11/22 12:25:01.250, 1598, 691.20, 59\n", "[N/A], 1, 2, 3\n", "garbage\n",
             "2026/11/22 12:25:01.300, 1605, 690.05, 60\n"]
    got = pp.read_samples(lines)
    assert [g[1:] for g in got] == [(1598.0, 691.2, 59.0), (1605.0, 690.05, 60.0)]
    assert abs((got[1][0] - got[0][0]) - 0.05) < 1e-6


# bench/ncu_stalls.py: the stall-reason shares of ncu's raw page.
import ncu_stalls  # noqa: E402


def test_ncu_pipes_tables_pages_side_by_side(tmp_path, capsys):
    """bench/ncu_pipes.py: a column per labelled raw page, units converted (ns -> us, instructions
    in millions), the first metric name a page has, stall reasons per issue largest first without
    "selected", "-" for what a page lacks; a short page or a missing file is an error naming it."""
    import ncu_pipes

    stall = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
    head = ["ID", "gpu__time_duration.sum", "sm__inst_executed_pipe_xu" + ncu_pipes.ACTIVE,
            "sm__pipe_tensor_op_gmma_cycles_active" + ncu_pipes.ACTIVE, "smsp__inst_executed.sum",
            stall.format("wait"), stall.format("barrier"), stall.format("selected")]
    units = ["", "nsecond", "%", "%", "inst", "", "", ""]
    ours = tmp_path / "ours-raw.csv"
    ours.write_text("\n".join(",".join(f'"{x}"' for x in r) for r in
                              [head, units, ["0", "20200", "36.6", "35.2", "4,110,000", "1.64",
                                             "0.96", "1.0"]]) + "\n")
    other = tmp_path / "cudnn-raw.csv"
    other.write_text("\n".join(",".join(f'"{x}"' for x in r) for r in
                               [head[:2], units[:2], ["0", "18300"]]) + "\n")
    ncu_pipes.main([f"ours={ours}", str(other)])
    out = capsys.readouterr().out
    assert "| metric | ours | cudnn |" in out
    assert "| duration (us) | 20.2 | 18.3 |" in out
    assert "| tensor pipe (% of active) | 35.2 | - |" in out  # the gmma name, second choice
    assert "| MUFU / XU pipe (% of active) | 36.6 | - |" in out
    assert "| instructions (M) | 4.11 | - |" in out
    assert "| stall 1 (warps per issue) | wait 1.64 | - |" in out
    assert "| stall 2 (warps per issue) | barrier 0.96 | - |" in out
    assert "selected" not in out
    short = tmp_path / "short-raw.csv"
    short.write_text('"ID"\n""\n')
    for bad in (short, tmp_path / "missing-raw.csv"):
        with pytest.raises(SystemExit, match=bad.name):
            ncu_pipes.main([str(bad)])


def test_ncu_stalls_shares_of_the_last_kernel_row():
    head = ["ID", "smsp__pcsamp_warps_issue_stalled_wait", "smsp__pcsamp_warps_issue_stalled_barrier",
            "smsp__pcsamp_warps_issue_stalled_wait_not_issued", "smsp__pcsamp_warps_issue_stalled_selected",
            "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"]
    units = ["", "", "", "", "", "%"]
    first = ["0", "1", "1", "5", "1", "10"]
    last = ["1", "1,500", "300", "999", "1,200", "57.1"]
    shares, extra = ncu_stalls.stalls([head, units, first, last])
    assert [n for n, _ in shares] == ["wait", "selected", "barrier"]  # _not_issued left out
    assert [round(s, 6) for _, s in shares] == [50.0, 40.0, 10.0]
    assert extra == {"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed": 57.1}


def test_ncu_stalls_names_a_page_without_samples():
    with pytest.raises(ValueError, match="expected names, units and a kernel"):
        ncu_stalls.stalls([["ID"], [""]])
    with pytest.raises(ValueError, match="no warp-state samples"):
        ncu_stalls.stalls([["ID", "gpu__time_duration.sum"], ["", "ns"], ["0", "100"]])


@pytest.mark.parametrize("args, message", [
    (["--batch", "0"], "--batch must be at least 1, got 0"),
    (["--seqlen", "-3"], "--seqlen must be at least 1, got -3"),
    (["--heads", "0"], "--heads must be at least 1, got 0"),
    (["--head-dim", "96"], "invalid choice: 96"),
    (["--backend", "flash"], "invalid choice: 'flash'"),
])
def test_profile_fp8_names_the_bad_argument(args, message):
    """bench/profile_fp8.py refuses a bad shape or backend before it imports torch or runs a
    call, naming the value."""
    import subprocess

    script = os.path.join(ROOT, "bench", "profile_fp8.py")
    r = subprocess.run([sys.executable, script, *args], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr


SASS = """
\tcode for sm_90a
\t\tFunction : _Z3fooPf
\t.headerflags\t@"EF_CUDA_SM90"
        /*0000*/                   MOV R1, c[0x0][0x28] ;          /* 0x00000a0000017a02 */
        /*0010*/                   FMNMX.FTZ R2, R3, R4, !PT ;     /* 0x0000000403027209 */
        /*0020*/               @P0 FADD R2, R2, R3 ;             /* 0x0000000302020221 */
        /*0030*/                   MUFU.EX2 R5, R2 ;               /* 0x0000000200057308 */
        /*0040*/              @!P1 BRA 0x10 ;                      /* 0xfffffffc00f09947 */
        /*0050*/                   BRA 0x70 ;                      /* 0x0000000000047947 */
        /*0060*/                   EXIT ;                          /* 0x000000000000794d */
\t\tFunction : _Z3barv
        /*0000*/                   EXIT ;                          /* 0x000000000000794d */
"""


def test_sass_loops_counts_a_backward_branch_span(tmp_path, capsys):
    """bench/sass_loops.py: a backward branch's span by opcode (modifiers and predicates dropped),
    a forward branch no loop, --skip leaving a range out, and --function picking exactly one."""
    import sass_loops

    funcs = sass_loops.functions(SASS)
    assert sorted(funcs) == ["_Z3barv", "_Z3fooPf"]
    (start, end, count, ops), = sass_loops.loops(funcs["_Z3fooPf"])
    assert (start, end, count) == (0x10, 0x40, 4)
    assert ops == {"FMNMX": 1, "FADD": 1, "MUFU": 1, "BRA": 1}
    (_, _, count, ops), = sass_loops.loops(funcs["_Z3fooPf"], skip=[(0x20, 0x30)])
    assert count == 3 and "FADD" not in ops
    path = tmp_path / "k.sass"
    path.write_text(SASS)
    sass_loops.main([str(path), "--function", "foo"])
    assert "loop 0x0010-0x0040: 4 instructions" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="matches 2 of the 2 functions"):
        sass_loops.main([str(path), "--function", "_Z3"])
    with pytest.raises(SystemExit):
        sass_loops.main([str(path), "--function", "foo", "--skip", "0x30:0x20"])
    assert "end must be past its start, got '0x30:0x20'" in capsys.readouterr().err


def test_plot_sweep_takes_the_in_turn_times(tmp_path):
    """bench/plot_sweep.py --turns: where compare_torch's in-turn JSON has a point, ours and the
    anchors (and their ratios) come from it, not from gpuattn bench and torch_anchors.py's separate
    runs; points it lacks keep the separate runs' numbers. The table is written whether or not
    matplotlib can draw the PNG."""
    import json
    import subprocess

    def point(s, ms):
        return {"dtype": "float16", "batch": 16384 // s, "hq": 32, "hkv": 32, "seqlen_q": s,
                "seqlen_k": s, "head_dim": 64, "causal": False, "flops": 1e12, "ours_ms": ms}

    bench = {"shapes": "sweep", "device_name": "H", "results": [point(512, 10.0), point(1024, 10.0)]}
    anchors = {"shapes": "sweep", "results": []}
    for p in bench["results"]:
        for backend, ms in (("cudnn", 11.0), ("flash", 20.0)):
            anchors["results"].append({k: p[k] for k in ("dtype", "batch", "hq", "seqlen_q",
                                                         "seqlen_k", "head_dim", "causal")}
                                      | {"backend": backend, "ms": ms, "flops": 1e12})
    turns = {"timer": "do_bench", "commit": "c", "cases": [
        {"dtype": "float16", "batch": 32, "heads_q": 32, "heads_kv": 32, "seqlen_q": 512,
         "seqlen_k": 512, "head_dim": 64, "causal": False, "flops": 1e12, "ours_ms": 8.0,
         "cudnn_ms": 12.0, "flash_ms": 16.0}]}
    files = {}
    for name, data in (("bench", bench), ("anchors", anchors), ("turns", turns)):
        files[name] = tmp_path / f"{name}.json"
        files[name].write_text(json.dumps(data))
    md = tmp_path / "sweep.md"
    script = os.path.join(ROOT, "bench", "plot_sweep.py")
    run = subprocess.run([sys.executable, script, "--bench", str(files["bench"]), "--anchors",
                          str(files["anchors"]), "--turns", str(files["turns"]), "--png",
                          str(tmp_path / "sweep.png"), "--md", str(md)],
                         capture_output=True, text=True)
    assert run.returncode in (0, 1), run.stderr  # 1: no matplotlib, the table all the same
    text = md.read_text()
    # S512 from the turns: ours 1 TFLOP / 8 ms = 125, cuDNN 83.3, FA2 62.5; ratios 1.50, 2.00
    assert "| 64 | no | 512 | 32 | 32 | 125.0 | 62.5 | 83.3 | 1.50 | 2.00 |" in text
    # S1024 from the separate runs: ours 100, FA2 50, cuDNN 90.9; ratios 1.10, 2.00
    assert "| 64 | no | 1024 | 16 | 32 | 100.0 | 50.0 | 90.9 | 1.10 | 2.00 |" in text
    assert "timed in turn by bench/compare_torch.py" in text


def test_leftpad_decode_runs_on_the_cpu(tmp_path):
    """bench/leftpad_decode.py --device cpu: every row of both smoke shapes timed, the padded
    calls' outputs equal to the plain call's on the shifted copy, dense and paged (--page 10); a
    bad --repeats, and a page size that does not divide a cache, are named."""
    import json
    import subprocess

    pytest.importorskip("gpu_attention")
    pytest.importorskip("torch")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "bench"), env.get("PYTHONPATH", "")])
    script = os.path.join(ROOT, "bench", "leftpad_decode.py")
    for page in ("0", "10"):
        out = tmp_path / f"leftpad{page}.json"
        r = subprocess.run([sys.executable, script, "--device", "cpu", "--repeats", "1", "--page",
                            page, "--json", str(out)], env=env, capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, r.stderr
        got = json.loads(out.read_text())
        rows = got["rows"]
        assert got["page"] == int(page)
        assert len(rows) == 8 and {row["row"] for row in rows} == {"plain", "plain u", "leftpad",
                                                                   "leftpad u"}
        assert all(("page10" in row["shape"]) == (page == "10") for row in rows)
        for row in rows:
            assert row["ms"] > 0 and row["max_diff"] < 1e-5, row
    r = subprocess.run([sys.executable, script, "--device", "cpu", "--repeats", "1", "--page",
                        "3"], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "--page 3 must divide the cache length 70" in r.stderr
    r = subprocess.run([sys.executable, script, "--device", "cpu", "--repeats", "0"], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "--repeats 0 must be >= 1" in r.stderr


def test_rotary_bench_runs_on_the_cpu(tmp_path):
    """bench/rotary_bench.py --device cpu: every row of the smoke cases timed, the varlen rows
    equal to the torch anchor's arithmetic; a bad --repeats is named."""
    import json
    import subprocess

    pytest.importorskip("gpu_attention")
    pytest.importorskip("torch")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "bench"), env.get("PYTHONPATH", "")])
    script = os.path.join(ROOT, "bench", "rotary_bench.py")
    out = tmp_path / "rotary.json"
    r = subprocess.run([sys.executable, script, "--device", "cpu", "--repeats", "1", "--json",
                        str(out)], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = json.loads(out.read_text())["rows"]
    assert [row["row"] for row in rows] == ["torch", "ours", "per-seq", "plain", "rotary",
                                            "plain u", "rotary u"]
    for row in rows:
        assert row["ms"] > 0, row
        if row["shape"].startswith("varlen"):
            assert row["max_diff"] < 1e-5, row
    r = subprocess.run([sys.executable, script, "--device", "cpu", "--repeats", "0"], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "--repeats 0 must be >= 1" in r.stderr
