"""tools/trace_summary.py on hand-made traces (tools/kernel_trace.cpp's CSV), on the CPU: names,
replay splitting, increments that sum to a replay's span under overlap (PDL), host gaps, and the
errors for a file that is not a trace."""

import os
import random
import sys

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import trace_summary as ts  # noqa: E402

HEADER = ("start_ns,end_ns,device,stream,graph,graph_node,correlation,grid,block,cluster,regs,"
          "smem_static,smem_dynamic,name\n")


def write(tmp_path, kernels, name="t.csv", base=10**9):
    """kernels: (start, end, graph, node, grid, name), times from `base` (CUPTI's start 0 means
    "not timed")."""
    p = tmp_path / name
    lines = [HEADER]
    for i, (s, e, g, n, grid, nm) in enumerate(kernels):
        q = nm.replace('"', '""')
        lines.append(f'{base + s},{base + e},0,13,{g},{n},{i},{grid},256x1x1,1x1x1,64,0,0,"{q}"\n')
    p.write_text("".join(lines))
    return str(p)


def test_short_names():
    assert ts.short_name("void gpuattn::engine::cuda::(anonymous namespace)::skinny_kernel"
                         "<__half, 1, true>(gpuattn::engine::cuda::(anonymous namespace)::Params)"
                         ) == "skinny_kernel<__half, 1, true>"
    assert ts.short_name("gemv(float const*, int)") == "gemv"
    assert ts.short_name("k<f(int)>(int)") == "k<f(int)>"
    assert ts.short_name("plain") == "plain"


def step(t0, graph, pdl_overlap):
    """One replay: a (1 us), b (2 us) started pdl_overlap ns before a ends, c (3 us) 500 ns
    after b."""
    a = (t0, t0 + 1000, graph, 1, "4x1x1", "void ns::a(int)")
    b = (t0 + 1000 - pdl_overlap, t0 + 3000, graph, 2, "8x2x1", "void ns::b<int>(int)")
    c = (t0 + 3500, t0 + 6500, graph, 3, "1x1x1", "void ns::c(int)")
    return [a, b, c]


def test_replays_increments_and_gaps(tmp_path):
    ks = []
    for r in range(5):  # 10 us of host time between replays
        ks += step(r * 16500, 7, pdl_overlap=400)
    rows = ts.read_trace(write(tmp_path, ks))
    replays = ts.split_replays(rows)
    assert [len(r) for r in replays] == [3] * 5
    out = "\n".join(ts.summarize(rows))
    assert "5 replays: median span 6.50 us, 3 kernels, 3 launch ids" in out
    assert "host gap between replays median 10.00 us" in out
    # busy: 1 + (3000 - 1000) + 3 us = 6 us of the 6.5 us span.
    assert "busy 6.00 us" in out
    lines = out.splitlines()
    c = next(l for l in lines if l.endswith("c [1x1x1]"))
    b = next(l for l in lines if l.endswith("b<int> [8x2x1]"))
    a = next(l for l in lines if l.endswith("a [4x1x1]"))
    # c adds its 3 us and the 0.5 us launch gap ahead of it; b its 2 us past a's end (its 2.4 us
    # duration includes 0.4 us spent waiting on a); a its own 1 us.
    assert c.split()[:5] == ["1", "3.00", "3.50", "3.50", "53.8%"]
    assert b.split()[:5] == ["1", "2.40", "2.00", "2.00", "30.8%"]
    assert a.split()[:5] == ["1", "1.00", "1.00", "1.00", "15.4%"]
    # Sorted by time a step, largest first.
    assert lines.index(c) < lines.index(b) < lines.index(a)


def test_increments_sum_to_the_span_on_random_overlap(tmp_path):
    rng = random.Random(5)
    ks, t = [], 0
    for node in range(40):
        start = t + rng.randint(-800, 800)
        ks.append((max(start, 0), max(start, 0) + rng.randint(100, 3000), 3, node, "1x1x1",
                   f"k{node % 7}(int)"))
        t = ks[-1][0] + rng.randint(0, 2000)
    rows = ts.read_trace(write(tmp_path, ks))
    (rep,) = ts.split_replays(rows)
    span = max(k["end"] for k in rep) - rep[0]["start"]
    out = ts.summarize(rows, top=100)
    total = sum(float(l.split()[3]) for l in out[3:])
    assert abs(total - span / 1e3) < 0.01 * 7 + 1e-9  # 7 keys, each rounded to 0.01 us


def test_graph_change_and_skip(tmp_path):
    ks = step(0, 1, 0) + step(20000, 2, 0) + step(40000, 2, 0) + step(60000, 1, 0)
    rows = ts.read_trace(write(tmp_path, ks))
    assert [r[0]["graph"] for r in ts.split_replays(rows)] == [1, 2, 2, 1]
    # The first replay of each graph goes: graph 2's second and graph 1's second stay.
    out = "\n".join(ts.summarize(rows, skip_replays=1))
    assert "2 graphs, 4 replays; the first 1 of each left out" in out
    assert "\n2 replays: median span" in out
    assert "no graph has more than that (4 replays of 2 graphs)" in (
        "\n".join(ts.summarize(rows, skip_replays=2)))


def test_no_graphs(tmp_path):
    rows = ts.read_trace(write(tmp_path, step(0, 0, 0)))
    assert "no kernels ran in CUDA graphs" in "\n".join(ts.summarize(rows))
    assert "1 replays: median span 6.50 us" in "\n".join(ts.summarize(rows, all_kernels=True))


def test_bad_files(tmp_path, capsys):
    p = tmp_path / "x.csv"
    p.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="not a kernel trace"):
        ts.read_trace(str(p))
    p.write_text(HEADER + '5,4,0,1,0,0,0,1x1x1,1x1x1,1x1x1,1,0,0,"k"\n'
                 '0,0,0,1,0,0,0,1x1x1,1x1x1,1x1x1,1,0,0,"k"\n'
                 '7,9,0,1,0,0,0,1x1x1,1x1x1,1x1x1,1,0,0,"k"\n')
    rows, untimed = ts.read_trace_counted(str(p))
    assert ([(r["start"], r["end"]) for r in rows], untimed) == ([(7, 9)], 2)
    assert ts.main([str(p), "--all"]) == 0
    assert "2 kernels without valid times (start 0 or end before start) left out" in (
        capsys.readouterr().out)
    p.write_text(HEADER + 'x,4,0,1,0,0,0,1x1x1,1x1x1,1x1x1,1,0,0,"k"\n')
    with pytest.raises(ValueError, match="not integers"):
        ts.read_trace(str(p))
    assert ts.main([str(tmp_path / "missing.csv")]) == 1
    assert "missing.csv" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        ts.main([str(p), "--top", "0"])
    assert "--top must be >= 1, not 0" in capsys.readouterr().err


def test_against(tmp_path, capsys):
    """b: kernel b 1 us shorter and a new kernel d of 0.5 us after c; c unchanged."""
    ka, kb = [], []
    for r in range(4):
        t0 = r * 20000
        ka += step(t0, 7, pdl_overlap=0)
        s = step(t0, 7, pdl_overlap=0)
        b = s[1]
        s[1] = (b[0], b[1] - 1000) + b[2:]
        s[2] = (s[2][0] - 1000, s[2][1] - 1000) + s[2][2:]
        s.append((s[2][1], s[2][1] + 500, 7, 4, "1x1x1", "void ns::d(int)"))
        kb += s
    pa, pb = write(tmp_path, ka, "a.csv"), write(tmp_path, kb, "b.csv")
    out = ts.compare(ts.read_trace(pa), ts.read_trace(pb))
    assert "step: a 6.50 us, b 6.00 us, b - a -0.50 us (-7.7%)" in out
    rows = out[out.index(next(l for l in out if l.lstrip().startswith("a us"))) + 1:]
    assert rows[0].split() == ["2.00", "1.00", "-1.00", "b<int>", "[8x2x1]"]
    assert rows[1].split() == ["0.00", "0.50", "+0.50", "d", "[1x1x1]"]
    assert [r.split()[:3] for r in rows[2:]] == [["1.00", "1.00", "+0.00"], ["3.50", "3.50", "+0.00"]]
    assert ts.main([pb, "--against", pa]) == 0
    assert "b - a -0.50 us" in capsys.readouterr().out
    assert ts.main([pb, "--against", str(tmp_path / "none.csv")]) == 1
    assert "none.csv" in capsys.readouterr().err


def test_by_name_merges_grids(tmp_path):
    ks = step(0, 5, 0)
    ks.append((6500, 7500, 5, 9, "2x1x1", "void ns::a(int)"))  # a again, another grid
    p = write(tmp_path, ks)
    keys = {r["key"] for r in ts.read_trace(p)}
    assert keys == {"a [4x1x1]", "a [2x1x1]", "b<int> [8x2x1]", "c [1x1x1]"}
    rows = ts.read_trace(p, by_name=True)
    assert {r["key"] for r in rows} == {"a", "b<int>", "c"}
    a = next(l for l in ts.summarize(rows) if l.endswith("  a"))
    assert a.split()[:4] == ["2", "1.00", "1.00", "2.00"]  # two calls, 1 us each, 2 us a step
