"""Sliding windows and global tokens through gpu_attention's Python API (flash-attn's window_size,
sparse_attn_func / sparse_attn_varlen_func), on the CPU backend, against a float64 numpy reference
that decides visibility element by element from the rule itself (visibility() in reference.py).

Run with the built package on the path:  PYTHONPATH=<build>/python python3 -m pytest tests/python
"""

import math

import numpy as np
import pytest

import gpu_attention as ga
from reference import (CASES, assert_close, cu_seqlens, int32, make, needs_torch, qkv, ref_dense,
                       ref_varlen, rng_for, to64, torch, visibility)

# ---- reference ---------------------------------------------------------------------------------


def flash_attn_visibility(sq, sk, causal, window):
    """flash-attn 2.x's local attention, written the way flash-attn defines it: causal=True sets
    the right window to 0, a window side of -1 is unbounded; no separate causal test."""
    left, right = window
    if causal:
        right = 0
    return visibility(sq, sk, False, (left, right))


def test_reference_rule_by_hand():
    """The reference itself, on cases worked out by hand (Sq=3, Sk=5: positions p = 2, 3, 4)."""
    vis = visibility(3, 5, causal=True, window=(1, -1))
    assert vis.astype(int).tolist() == [[0, 1, 1, 0, 0], [0, 0, 1, 1, 0], [0, 0, 0, 1, 1]]
    vis = visibility(3, 5, causal=True, window=(0, 0), global_tokens=1)
    assert vis.astype(int).tolist() == [[1, 0, 1, 0, 0], [1, 0, 0, 1, 0], [1, 0, 0, 0, 1]]
    vis = visibility(3, 5, window=(0, 0), global_stride=3)  # globals 0 and 3; query p=3 global
    assert vis.astype(int).tolist() == [[1, 0, 1, 1, 0], [1, 1, 1, 1, 1], [1, 0, 0, 1, 1]]
    vis = visibility(4, 2, causal=True)  # Sq > Sk: p = -2, -1, 0, 1
    assert vis.astype(int).tolist() == [[0, 0], [0, 0], [1, 0], [1, 1]]
    assert flash_attn_visibility(3, 5, True, (1, 7)).tolist() == \
        visibility(3, 5, True, (1, -1)).tolist()


# ---- shapes ------------------------------------------------------------------------------------

# (B, Sq, Sk, Hq, Hkv, D)
SHAPES = [
    (2, 77, 77, 4, 4, 64),  # Sq == Sk, awkward length
    (1, 50, 130, 8, 2, 128),  # Sq < Sk, GQA 4:1
    (2, 130, 50, 4, 1, 64),  # Sq > Sk, MQA: rows at negative positions
    (2, 1, 77, 4, 2, 64),  # decode: one query at the last position
]
shape_id = "x".join

# ---- flash-attn's window_size ----------------------------------------------------------------------

WINDOWS = [
    ((8, 0), True),  # causal sliding window (W, 0) + causal
    ((8, 0), False),  # the same window without causal=True
    ((5, 3), False),  # both sides
    ((5, 3), True),  # causal sets right = 0
    ((-1, 4), False),  # right side only
    ((6, -1), False),  # left side only
    ((6, -1), True),
    ((0, 0), False),  # window 0: the key at the query's own position only
    ((0, 0), True),
    ((300, 300), False),  # window larger than the sequence: no limit
    ((40, 2), False),
]


@pytest.mark.parametrize("fw,dtype,tol,lse_tol", CASES)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("window,causal", WINDOWS,
                         ids=[f"w{l}_{r}{'_causal' if c else ''}" for (l, r), c in WINDOWS])
def test_flash_attn_window_matches_reference(fw, dtype, tol, lse_tol, shape, window, causal):
    b, sq, sk, hq, hkv, d = shape
    rng = rng_for("window", fw, dtype, shape, window, causal)
    q, k, v = qkv(fw, dtype, b, sq, sk, hq, hkv, d, rng)
    out, lse, _ = ga.flash_attn_func(q, k, v, causal=causal, window_size=window,
                                     return_attn_probs=True)
    want_out, want_lse = ref_dense(to64(q), to64(k), to64(v), 1 / math.sqrt(d),
                                   lambda a, c: flash_attn_visibility(a, c, causal, window))
    assert_close(out, want_out, tol, "out")
    assert_close(lse, want_lse, lse_tol, "lse")


def test_window_list_numpy_ints_and_huge_values():
    rng = rng_for("window-types")
    q, k, v = qkv("numpy", "float32", 1, 40, 60, 2, 2, 64, rng)
    want = ga.flash_attn_func(q, k, v, window_size=(7, 2))
    assert np.array_equal(ga.flash_attn_func(q, k, v, window_size=[7, 2]), want)
    assert np.array_equal(ga.flash_attn_func(q, k, v, window_size=(np.int64(7), np.int32(2))),
                          want)
    full = ga.flash_attn_func(q, k, v)
    assert np.array_equal(ga.flash_attn_func(q, k, v, window_size=(2**40, 2**40)), full)
    out = ga.flash_attn_func(q, k, v, window_size=(2**40, 0))
    want_out, _ = ref_dense(to64(q), to64(k), to64(v), 1 / 8,
                            lambda a, c: visibility(a, c, True))
    assert_close(out, want_out, 2e-5, "out")


def test_window_varlen_matches_reference():
    lens_q = [1, 77, 33, 60, 5, 1]
    lens_k = [9, 77, 12, 100, 5, 1]  # Sq > Sk in sequence 2; length-1 sequences
    cu_q, cu_k = cu_seqlens(lens_q), cu_seqlens(lens_k)
    rng = rng_for("window-varlen")
    q = make("numpy", "float16", (cu_q[-1], 8, 64), rng)
    k = make("numpy", "float16", (cu_k[-1], 2, 64), rng)
    v = make("numpy", "float16", (cu_k[-1], 2, 64), rng)
    for window, causal in [((6, 0), True), ((4, 2), False), ((0, 0), False), ((-1, 3), False)]:
        out, lse, _ = ga.flash_attn_varlen_func(q, k, v, cu_q, cu_k, max(lens_q), max(lens_k),
                                                causal=causal, window_size=window,
                                                return_attn_probs=True)
        want_out, want_lse = ref_varlen(
            to64(q), to64(k), to64(v), cu_q, cu_k, 1 / 8,
            lambda a, c: flash_attn_visibility(a, c, causal, window))
        assert_close(out, want_out, 2e-3, f"out {window} {causal}")
        assert_close(lse, want_lse, 1e-3, f"lse {window} {causal}")


def test_window_packed_and_kvcache_variants():
    rng = rng_for("window-packed")
    qkv5 = make("numpy", "float16", (2, 40, 3, 4, 64), rng)
    q, k, v = qkv5[:, :, 0], qkv5[:, :, 1], qkv5[:, :, 2]
    for window, causal in [((5, 0), True), ((3, 3), False)]:
        want = ga.flash_attn_func(q, k, v, causal=causal, window_size=window)
        want_out, _ = ref_dense(to64(q), to64(k), to64(v), 1 / 8,
                                lambda a, c: flash_attn_visibility(a, c, causal, window))
        assert_close(want, want_out, 2e-3, "out")
        got = ga.flash_attn_qkvpacked_func(qkv5, causal=causal, window_size=window)
        assert np.array_equal(got, want)
        kv = np.ascontiguousarray(qkv5[:, :, 1:])
        assert np.array_equal(ga.flash_attn_kvpacked_func(q, kv, causal=causal,
                                                          window_size=window), want)
        cu = np.array([0, 40, 80], dtype=np.int32)
        flat = qkv5.reshape(80, 3, 4, 64)
        got = ga.flash_attn_varlen_qkvpacked_func(flat, cu, 40, causal=causal, window_size=window)
        assert np.array_equal(got, want.reshape(80, 4, 64))
        got = ga.flash_attn_varlen_kvpacked_func(flat[:, 0], np.ascontiguousarray(flat[:, 1:]),
                                                 cu, cu, 40, 40, causal=causal, window_size=window)
        assert np.array_equal(got, want.reshape(80, 4, 64))


@pytest.mark.parametrize("window,causal", [((16, 0), True), ((4, 4), False), ((0, 0), False)])
def test_window_kvcache_matches_reference(window, causal):
    rng = rng_for("window-kvcache", window, causal)
    q = make("numpy", "float16", (3, 2, 8, 128), rng)
    kc = make("numpy", "float16", (3, 77, 2, 128), rng)
    vc = make("numpy", "float16", (3, 77, 2, 128), rng)
    out, lse = ga.flash_attn_with_kvcache(q, kc, vc, causal=causal, window_size=window,
                                         return_softmax_lse=True)
    want_out, want_lse = ref_dense(to64(q), to64(kc), to64(vc), 1 / math.sqrt(128),
                                   lambda a, c: flash_attn_visibility(a, c, causal, window))
    assert_close(out, want_out, 2e-3, "out")
    assert_close(lse, want_lse, 1e-3, "lse")
    ref_out = ga.flash_attn_func(q, kc, vc, causal=causal, window_size=window)
    assert np.array_equal(out, ref_out)


# ---- sparse_attn_func: window + global tokens ---------------------------------------------------

# (window, causal, global_tokens, global_stride)
SPARSE = [
    ((8, 0), True, 4, 0),  # causal sliding window + leading global tokens (Longformer decoder)
    ((3, 3), False, 2, 0),
    ((3, 3), False, 0, 16),  # strided globals only
    ((2, 1), False, 3, 10),  # both
    ((5, 0), True, 0, 7),
    ((0, 0), False, 1, 0),  # window 0 + global
    ((0, 0), True, 0, 5),
    ((-1, 0), False, 2, 0),  # the causal band as a window: global keys after p stay visible
    ((4, -1), False, 0, 9),
    ((2, 2), False, 500, 0),  # G > S: every position global, so every key visible
    ((2, 2), True, 500, 0),  # ... up to the causal limit
    ((1, 1), False, 0, 1),  # stride 1: every position global
    ((6, 0), True, 0, 1000),  # stride > S: only position 0 global
    ((-1, -1), False, 3, 4),  # no window: globals change nothing
    ((300, 300), True, 2, 0),  # window larger than the sequence
]


@pytest.mark.parametrize("fw,dtype,tol,lse_tol", CASES)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("window,causal,g,stride", SPARSE,
                         ids=[f"w{l}_{r}{'_causal' if c else ''}_g{g}_s{s}"
                              for (l, r), c, g, s in SPARSE])
def test_sparse_matches_reference(fw, dtype, tol, lse_tol, shape, window, causal, g, stride):
    b, sq, sk, hq, hkv, d = shape
    rng = rng_for("sparse", fw, dtype, shape, window, causal, g, stride)
    q, k, v = qkv(fw, dtype, b, sq, sk, hq, hkv, d, rng)
    out, lse, probs = ga.sparse_attn_func(q, k, v, causal=causal, window_size=window,
                                          global_tokens=g, global_stride=stride,
                                          return_attn_probs=True)
    assert probs is None
    assert type(out) is type(q) and out.dtype == q.dtype
    want_out, want_lse = ref_dense(to64(q), to64(k), to64(v), 1 / math.sqrt(d),
                                   lambda a, c: visibility(a, c, causal, window, g, stride))
    assert_close(out, want_out, tol, "out")
    assert_close(lse, want_lse, lse_tol, "lse")
    plain = ga.sparse_attn_func(q, k, v, causal=causal, window_size=window, global_tokens=g,
                                global_stride=stride)
    assert np.array_equal(to64(plain), to64(out))


def test_sparse_softmax_scale_and_defaults():
    rng = rng_for("sparse-scale")
    q, k, v = qkv("numpy", "float32", 2, 33, 50, 4, 2, 64, rng)
    out = ga.sparse_attn_func(q, k, v, softmax_scale=0.3, window_size=(4, 1), global_tokens=2)
    want, _ = ref_dense(to64(q), to64(k), to64(v), 0.3, lambda a, c: visibility(a, c, False,
                                                                                (4, 1), 2))
    assert_close(out, want, 2e-5, "out")
    # defaults: plain dense attention; globals alone change nothing
    assert np.array_equal(ga.sparse_attn_func(q, k, v), ga.flash_attn_func(q, k, v))
    assert np.array_equal(ga.sparse_attn_func(q, k, v, global_tokens=3, global_stride=5),
                          ga.flash_attn_func(q, k, v))
    assert np.array_equal(ga.sparse_attn_func(q, k, v, causal=True, global_tokens=3),
                          ga.flash_attn_func(q, k, v, causal=True))
    # no globals: the same as flash_attn_func's window
    assert np.array_equal(ga.sparse_attn_func(q, k, v, causal=True, window_size=(6, 0)),
                          ga.flash_attn_func(q, k, v, causal=True, window_size=(6, 0)))
    # a huge global_tokens is G > S
    assert np.array_equal(ga.sparse_attn_func(q, k, v, window_size=(1, 1), global_tokens=2**40),
                          ga.flash_attn_func(q, k, v))


def test_sparse_rows_without_keys():
    """Sq > Sk without causal: rows at negative positions with window (0, 0) see no key unless a
    key is global; with causal they see nothing at all, global or not."""
    rng = rng_for("sparse-empty")
    q, k, v = qkv("numpy", "float32", 1, 20, 8, 2, 2, 64, rng)
    out, lse, _ = ga.sparse_attn_func(q, k, v, window_size=(0, 0), return_attn_probs=True)
    assert np.all(out[0, :12] == 0) and np.all(np.isneginf(lse[0, :, :12]))
    assert np.all(np.isfinite(lse[0, :, 12:]))
    out, lse, _ = ga.sparse_attn_func(q, k, v, window_size=(0, 0), global_tokens=1,
                                      return_attn_probs=True)
    assert np.all(np.isfinite(lse))
    assert_close(out[0, :12], np.broadcast_to(to64(v[0, 0]), (12, 2, 64)), 2e-6, "out")
    out, lse, _ = ga.sparse_attn_func(q, k, v, causal=True, window_size=(0, 0), global_tokens=3,
                                      return_attn_probs=True)
    assert np.all(out[0, :12] == 0) and np.all(np.isneginf(lse[0, :, :12]))


@pytest.mark.parametrize("fw,dtype,tol,lse_tol", CASES)
@pytest.mark.parametrize("window,causal,g,stride", [((6, 0), True, 2, 0), ((3, 2), False, 1, 7),
                                                    ((0, 0), False, 0, 4), ((2, 2), True, 200, 0),
                                                    ((-1, 0), False, 3, 0)])
def test_sparse_varlen_matches_reference(fw, dtype, tol, lse_tol, window, causal, g, stride):
    lens_q = [1, 77, 33, 60, 5, 1]
    lens_k = [9, 77, 12, 100, 5, 1]  # Sq > Sk in sequence 2; length-1 sequences
    cu_q, cu_k = cu_seqlens(lens_q), cu_seqlens(lens_k)
    hq, hkv, d = 8, 2, 64
    rng = rng_for("sparse-varlen", fw, dtype, window, causal, g, stride)
    q = make(fw, dtype, (cu_q[-1], hq, d), rng)
    k = make(fw, dtype, (cu_k[-1], hkv, d), rng)
    v = make(fw, dtype, (cu_k[-1], hkv, d), rng)
    out, lse, _ = ga.sparse_attn_varlen_func(
        q, k, v, int32(fw, cu_q), int32(fw, cu_k), max(lens_q), max(lens_k), causal=causal,
        window_size=window, global_tokens=g, global_stride=stride, return_attn_probs=True)
    assert tuple(lse.shape) == (hq, cu_q[-1])
    want_out, want_lse = ref_varlen(to64(q), to64(k), to64(v), cu_q, cu_k, 1 / math.sqrt(d),
                                    lambda a, c: visibility(a, c, causal, window, g, stride))
    assert_close(out, want_out, tol, "out")
    assert_close(lse, want_lse, lse_tol, "lse")


# ---- error paths ---------------------------------------------------------------------------------


@pytest.fixture
def small():
    rng = rng_for("mask-errors")
    return qkv("numpy", "float16", 2, 16, 16, 4, 4, 64, rng)


@pytest.mark.parametrize("window", [(-2, 0), (0, -2), (-5, -5), (1,), (1, 2, 3), "ab", None, 3,
                                    (1.5, 0), (0, "1"), (True, 0), (0, None)])
def test_bad_window_size_raises(small, window):
    q, k, v = small
    cu = np.array([0, 16, 32], np.int32)
    flat = q.reshape(32, 4, 64)
    calls = [
        lambda: ga.flash_attn_func(q, k, v, window_size=window),
        lambda: ga.flash_attn_func(q, k, v, causal=True, window_size=window),
        lambda: ga.flash_attn_varlen_func(flat, flat, flat, cu, cu, 16, 16, window_size=window),
        lambda: ga.flash_attn_with_kvcache(q, k, v, window_size=window),
        lambda: ga.sparse_attn_func(q, k, v, window_size=window, global_tokens=1),
        lambda: ga.sparse_attn_varlen_func(flat, flat, flat, cu, cu, 16, 16, window_size=window),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="window_size"):
            call()


def test_bad_global_arguments_raise(small):
    q, k, v = small
    cu = np.array([0, 16, 32], np.int32)
    flat = q.reshape(32, 4, 64)
    for name in ("global_tokens", "global_stride"):
        for f in (lambda **kw: ga.sparse_attn_func(q, k, v, window_size=(2, 2), **kw),
                  lambda **kw: ga.sparse_attn_varlen_func(flat, flat, flat, cu, cu, 16, 16, **kw)):
            with pytest.raises(ValueError, match=name):
                f(**{name: -1})
            for bad in (1.5, "2", None, True, np.float32(2.0)):
                with pytest.raises(TypeError, match=name):
                    f(**{name: bad})
            assert f(**{name: np.int64(2)}).shape in ((2, 16, 4, 64), (32, 4, 64))


def test_sparse_other_errors(small):
    q, k, v = small
    with pytest.raises(TypeError):
        ga.sparse_attn_func(q, k, v, 0.1)  # options are keyword-only
    with pytest.raises(TypeError, match="causal"):
        ga.sparse_attn_func(q, k, v, causal="yes")
    with pytest.raises(TypeError, match="softmax_scale"):
        ga.sparse_attn_func(q, k, v, softmax_scale="0.1")
    with pytest.raises(ValueError, match="softmax_scale"):
        ga.sparse_attn_func(q, k, v, softmax_scale=-1.0)
    with pytest.raises(TypeError, match="q must be"):
        ga.sparse_attn_func(q.tolist(), k, v)
    with pytest.raises(ValueError, match="dtype"):
        ga.sparse_attn_func(q, k.astype(np.float32), v, window_size=(2, 2))
    with pytest.raises(ValueError, match="rank"):
        ga.sparse_attn_func(q[0], k[0], v[0], window_size=(2, 2), global_tokens=1)
    flat = q.reshape(32, 4, 64)
    cu = np.array([0, 16, 32], np.int32)
    with pytest.raises(ValueError, match="cu_seqlens"):
        ga.sparse_attn_varlen_func(flat, flat, flat, None, cu, 16, 16)
    with pytest.raises(ValueError, match="max_seqlen_q"):
        ga.sparse_attn_varlen_func(flat, flat, flat, cu, cu, 0, 16)
    with pytest.raises(ValueError, match="max_seqlen"):
        ga.sparse_attn_varlen_func(flat, flat, flat, cu, cu, 8, 16, window_size=(2, 2))


def test_module_exports_sparse():
    assert "sparse_attn_func" in ga.__all__ and "sparse_attn_varlen_func" in ga.__all__
    assert "p = i + Sk - Sq" in ga.sparse_attn_func.__doc__


# ---- CUDA vs CPU ---------------------------------------------------------------------------------


@needs_torch
@pytest.mark.skipif(torch is None or not torch.cuda.is_available() or not ga.cuda_available(),
                    reason="needs a CUDA build and a CUDA device")
@pytest.mark.parametrize("d", [128, 256])
def test_torch_cuda_masked_matches_cpu(d):
    rng = rng_for("cuda-mask", d)
    q, k, v = qkv("torch", "bfloat16", 2, 300, 333, 8, 2, d, rng)
    kw = dict(causal=True, window_size=(64, 0), global_tokens=4, global_stride=100,
              return_attn_probs=True)
    cpu_out, cpu_lse, _ = ga.sparse_attn_func(q, k, v, **kw)
    out, lse, _ = ga.sparse_attn_func(q.cuda(), k.cuda(), v.cuda(), **kw)
    torch.cuda.synchronize()
    assert out.is_cuda and lse.is_cuda
    want_out, want_lse = ref_dense(to64(q), to64(k), to64(v), 1 / math.sqrt(d),
                                   lambda a, c: visibility(a, c, True, (64, 0), 4, 100))
    assert_close(out.cpu(), want_out, 1.6e-2, "cuda out")
    assert_close(lse.cpu(), want_lse, 1e-2, "cuda lse")
    assert_close(out.cpu(), to64(cpu_out), 1.6e-2, "cuda vs cpu out")
    assert_close(lse.cpu(), to64(cpu_lse), 1e-2, "cuda vs cpu lse")
    out = ga.flash_attn_func(q.cuda(), k.cuda(), v.cuda(), window_size=(32, 16))
    assert_close(out.cpu(), to64(ga.flash_attn_func(q, k, v, window_size=(32, 16))), 1.6e-2,
                 "cuda vs cpu window")
