"""Sliding windows and global tokens through gpu_attention's Python API (flash-attn's window_size,
sparse_attn_func / sparse_attn_varlen_func), on the CPU backend, against a float64 numpy reference
that decides visibility element by element from the rule itself.

Run with the built package on the path:  PYTHONPATH=<build>/python python3 -m pytest tests/python
"""

import math
import zlib

import numpy as np
import pytest

import gpu_attention as ga

try:
    import torch
except ImportError:  # torch is optional: its cases skip, the numpy ones still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")

# ---- reference ---------------------------------------------------------------------------------


def is_global(t, global_tokens, global_stride):
    """Position t (an int array, may hold negatives) is global: t >= 0 and (t < G or a multiple of
    the stride when the stride is on)."""
    strided = (global_stride > 0) & (np.mod(t, max(global_stride, 1)) == 0)
    return (t >= 0) & ((t < global_tokens) | strided)


def visibility(sq, sk, causal=False, window=(-1, -1), global_tokens=0, global_stride=0):
    """[sq, sk] bool: query row i sees key j. Query i stands at key position p = i + sk - sq
    (bottom-right aligned). Visible iff (not causal or j <= p) and (j inside the window
    [p - left, p + right], -1 unbounded, or j global, or p global)."""
    left, right = window
    i = np.arange(sq)[:, None]
    j = np.arange(sk)[None, :]
    p = i + (sk - sq)
    causal_ok = (j <= p) if causal else np.ones((sq, sk), bool)
    in_window = np.ones((sq, sk), bool)
    if left != -1:
        in_window &= j >= p - left
    if right != -1:
        in_window &= j <= p + right
    glob = is_global(j, global_tokens, global_stride) | is_global(p, global_tokens, global_stride)
    return causal_ok & (in_window | glob)


def flash_attn_visibility(sq, sk, causal, window):
    """flash-attn 2.x's local attention, written the way flash-attn defines it: causal=True sets
    the right window to 0, a window side of -1 is unbounded; no separate causal test."""
    left, right = window
    if causal:
        right = 0
    return visibility(sq, sk, False, (left, right))


def ref_single(q, k, v, scale, visible):
    """fp64 attention of one sequence under a [Sq, Sk] visibility matrix. q [Sq, Hq, D],
    k/v [Sk, Hkv, D] -> out [Sq, Hq, D], lse [Hq, Sq]; a row that sees no key: out 0, lse -inf."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k = np.repeat(k, group, axis=1)  # query head h reads kv head h // group
    v = np.repeat(v, group, axis=1)
    s = np.einsum("qhd,khd->hqk", q, k) * scale
    s = np.where(visible[None], s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    empty = ~np.isfinite(m)
    m = np.where(empty, 0.0, m)
    p = np.exp(s - m)
    denom = p.sum(axis=-1, keepdims=True)
    safe = np.where(denom > 0, denom, 1.0)
    out = np.einsum("hqk,khd->qhd", p / safe, v)
    lse = np.where(empty[..., 0], -np.inf, m[..., 0] + np.log(safe[..., 0]))
    return out, lse


def ref_dense(q, k, v, scale, vis_fn):
    """q [B, Sq, Hq, D] ... -> out [B, Sq, Hq, D], lse [B, Hq, Sq]; vis_fn(sq, sk) -> [sq, sk]."""
    vis = vis_fn(q.shape[1], k.shape[1])
    outs, lses = zip(*(ref_single(q[b], k[b], v[b], scale, vis) for b in range(q.shape[0])))
    return np.stack(outs), np.stack(lses)


def ref_varlen(q, k, v, cu_q, cu_k, scale, vis_fn):
    """q [total_q, Hq, D] ... -> out [total_q, Hq, D], lse [Hq, total_q]; positions per sequence."""
    out = np.zeros(q.shape, dtype=np.float64)
    lse = np.zeros((q.shape[1], q.shape[0]), dtype=np.float64)
    for b in range(len(cu_q) - 1):
        qs, qe, ks, ke = cu_q[b], cu_q[b + 1], cu_k[b], cu_k[b + 1]
        o, l = ref_single(q[qs:qe], k[ks:ke], v[ks:ke], scale, vis_fn(qe - qs, ke - ks))
        out[qs:qe] = o
        lse[:, qs:qe] = l
    return out, lse


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


# ---- helpers -----------------------------------------------------------------------------------

# (framework, dtype name, tolerance on out, tolerance on lse)
CASES = [
    ("numpy", "float16", 2e-3, 1e-3),
    ("numpy", "float32", 2e-5, 2e-5),
    pytest.param("torch", "bfloat16", 1.6e-2, 1e-2, marks=needs_torch),
    pytest.param("torch", "float32", 2e-5, 2e-5, marks=needs_torch),
]


def rng_for(*key):
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def make(fw, dtype, shape, rng):
    """Fresh random values (never zeros), rounded to `dtype`, in framework `fw`."""
    x = rng.standard_normal(shape).astype(np.float32)
    if fw == "numpy":
        return x.astype(dtype)
    return torch.from_numpy(x).to(getattr(torch, dtype))


def to64(x):
    if torch is not None and isinstance(x, torch.Tensor):
        return x.detach().to(torch.float64).numpy()
    return np.asarray(x, dtype=np.float64)


def int32(fw, values):
    a = np.asarray(values, dtype=np.int32)
    return a if fw == "numpy" else torch.from_numpy(a)


def assert_close(got, want, tol, what):
    got = to64(got)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    finite = np.isfinite(want)
    assert np.array_equal(np.isfinite(got), finite), f"{what}: non-finite pattern differs"
    assert np.array_equal(got[~finite], want[~finite]), f"{what}: infinities differ"
    err = np.max(np.abs(got[finite] - want[finite]), initial=0.0)
    scale = max(1.0, np.max(np.abs(want[finite]), initial=0.0))
    assert err <= tol * scale, f"{what}: max abs error {err:.3g} > {tol * scale:.3g}"


def qkv(fw, dtype, b, sq, sk, hq, hkv, d, rng):
    return (make(fw, dtype, (b, sq, hq, d), rng), make(fw, dtype, (b, sk, hkv, d), rng),
            make(fw, dtype, (b, sk, hkv, d), rng))


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
    cu_q = np.concatenate([[0], np.cumsum(lens_q)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(lens_k)]).astype(np.int32)
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
    cu_q = np.concatenate([[0], np.cumsum(lens_q)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(lens_k)]).astype(np.int32)
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
def test_torch_cuda_masked_matches_cpu():
    rng = rng_for("cuda-mask")
    q, k, v = qkv("torch", "bfloat16", 2, 300, 333, 8, 2, 128, rng)
    kw = dict(causal=True, window_size=(64, 0), global_tokens=4, global_stride=100,
              return_attn_probs=True)
    cpu_out, cpu_lse, _ = ga.sparse_attn_func(q, k, v, **kw)
    out, lse, _ = ga.sparse_attn_func(q.cuda(), k.cuda(), v.cuda(), **kw)
    torch.cuda.synchronize()
    assert out.is_cuda and lse.is_cuda
    want_out, want_lse = ref_dense(to64(q), to64(k), to64(v), 1 / math.sqrt(128),
                                   lambda a, c: visibility(a, c, True, (64, 0), 4, 100))
    assert_close(out.cpu(), want_out, 1.6e-2, "cuda out")
    assert_close(lse.cpu(), want_lse, 1e-2, "cuda lse")
    assert_close(out.cpu(), to64(cpu_out), 1.6e-2, "cuda vs cpu out")
    assert_close(lse.cpu(), to64(cpu_lse), 1e-2, "cuda vs cpu lse")
    out = ga.flash_attn_func(q.cuda(), k.cuda(), v.cuda(), window_size=(32, 16))
    assert_close(out.cpu(), to64(ga.flash_attn_func(q, k, v, window_size=(32, 16))), 1.6e-2,
                 "cuda vs cpu window")
