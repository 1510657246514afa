"""Shared by the tests in tests/python: the float64 numpy reference of attention under a visibility
rule, the mask rules themselves, and helpers for random inputs and comparisons.

Not a test module (pytest collects test_*.py only); the tests import it by name, which works since
pytest puts tests/python on sys.path for them.
"""

import zlib

import numpy as np
import pytest

try:
    import torch
except ImportError:  # torch is optional: its cases skip, the numpy ones still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


def _cuda_usable():
    import gpu_attention  # the built package, as every test module imports it
    return torch is not None and gpu_attention.cuda_available()


needs_cuda = pytest.mark.skipif(not _cuda_usable(), reason="needs torch and a CUDA device")


def on(fw, device, x):
    """x (made on the CPU by make) on `device`: torch tensors moved, numpy arrays as they are."""
    return x.to(device) if fw == "torch" else x

# ---- mask rules ----------------------------------------------------------------------------------


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


def causal_rule(causal):
    """vis_fn(sq, sk) of plain attention: every key, or causal (bottom-right aligned)."""
    return lambda sq, sk: visibility(sq, sk, causal)


# ---- reference attention -------------------------------------------------------------------------


def alibi_bias(slopes, sq, sk):
    """[Hq, Sq, Sk] float64: ALiBi's bias of one sequence, -slopes[h] * |i + sk - sq - j| (query
    i at key position i + sk - sq, bottom-right aligned; flash-attn's documented formula)."""
    i = np.arange(sq)[:, None]
    j = np.arange(sk)[None, :]
    dist = np.abs(i + (sk - sq) - j).astype(np.float64)
    return -np.asarray(slopes, dtype=np.float64)[:, None, None] * dist


def alibi_rows(alibi, batch):
    """alibi_slopes (None, [Hq] or [B, Hq]) as one [Hq] row (or None) per sequence."""
    if alibi is None:
        return [None] * batch
    a = np.asarray(alibi, dtype=np.float64)
    return [a if a.ndim == 1 else a[b] for b in range(batch)]


def ref_single(q, k, v, scale, visible, softcap=0.0, alibi=None):
    """fp64 attention of one sequence under a visibility [Sq, Sk] or per head [Hq or 1, Sq, Sk].
    q [Sq, Hq, D], k/v [Sk, Hkv, D] -> out [Sq, Hq, D], lse [Hq, Sq]; a row that sees no key
    (Sk = 0 too): out 0, lse -inf. softcap > 0: scores softcap * tanh(score / softcap).
    alibi: the sequence's slopes [Hq], whose alibi_bias is added after the soft-cap."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k = np.repeat(k, group, axis=1)  # query head h reads kv head h // group
    v = np.repeat(v, group, axis=1)
    s = np.einsum("qhd,khd->hqk", q, k) * scale
    if softcap:
        s = softcap * np.tanh(s / softcap)
    if alibi is not None:
        s = s + alibi_bias(alibi, s.shape[1], s.shape[2])
    s = np.where(np.broadcast_to(visible, s.shape), s, -np.inf)
    m = s.max(axis=-1, keepdims=True, initial=-np.inf)  # a sequence of no keys: -inf
    empty = ~np.isfinite(m)
    m = np.where(empty, 0.0, m)
    p = np.exp(s - m)
    denom = p.sum(axis=-1, keepdims=True)
    safe = np.where(denom > 0, denom, 1.0)
    out = np.einsum("hqk,khd->qhd", p / safe, v)
    lse = np.where(empty[..., 0], -np.inf, m[..., 0] + np.log(safe[..., 0]))
    return out, lse


def ref_dense(q, k, v, scale, vis_fn, softcap=0.0, alibi=None):
    """q [B, Sq, Hq, D] ... -> out [B, Sq, Hq, D], lse [B, Hq, Sq]; vis_fn(sq, sk) -> the
    visibility of ref_single; alibi: slopes [Hq] or [B, Hq] (None: no ALiBi)."""
    vis = vis_fn(q.shape[1], k.shape[1])
    slopes = alibi_rows(alibi, q.shape[0])
    outs, lses = zip(*(ref_single(q[b], k[b], v[b], scale, vis, softcap, slopes[b])
                       for b in range(q.shape[0])))
    return np.stack(outs), np.stack(lses)


def ref_varlen(q, k, v, cu_q, cu_k, scale, vis_fn, softcap=0.0, alibi=None):
    """q [total_q, Hq, D] ... -> out [total_q, Hq, D], lse [Hq, total_q]; positions per sequence,
    vis_fn(sq, sk) called per sequence; alibi: slopes [Hq] or [sequences, Hq] (None: none)."""
    out = np.zeros(q.shape, dtype=np.float64)
    lse = np.zeros((q.shape[1], q.shape[0]), dtype=np.float64)
    slopes = alibi_rows(alibi, len(cu_q) - 1)
    for b in range(len(cu_q) - 1):
        qs, qe, ks, ke = cu_q[b], cu_q[b + 1], cu_k[b], cu_k[b + 1]
        if qe == qs:
            continue
        o, l = ref_single(q[qs:qe], k[ks:ke], v[ks:ke], scale, vis_fn(qe - qs, ke - ks),
                          softcap, slopes[b])
        out[qs:qe] = o
        lse[:, qs:qe] = l
    return out, lse


# ---- inputs and comparisons ----------------------------------------------------------------------

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


def qkv(fw, dtype, b, sq, sk, hq, hkv, d, rng):
    return (make(fw, dtype, (b, sq, hq, d), rng), make(fw, dtype, (b, sk, hkv, d), rng),
            make(fw, dtype, (b, sk, hkv, d), rng))


def e4m3_decode(b):
    """FP8 E4M3 (fn) bytes -> float64, the format's definition (0x7f/0xff NaN)."""
    b = np.asarray(b).astype(np.int64)
    sign = np.where(b & 0x80, -1.0, 1.0)
    e, m = (b >> 3) & 0xF, b & 7
    val = np.where(e == 0, m * 2.0 ** -9, (1 + m / 8.0) * 2.0 ** (e - 7))
    return np.where((b & 0x7F) == 0x7F, np.nan, sign * val)


_E4M3_FINITE = np.array([b for b in range(256) if b & 0x7F != 0x7F], dtype=np.uint8)
_E4M3_ORDER = np.argsort(e4m3_decode(_E4M3_FINITE), kind="stable")
_E4M3_SORTED = e4m3_decode(_E4M3_FINITE)[_E4M3_ORDER]


def e4m3_bytes(x):
    """The E4M3 byte nearest to each float of x (uint8, same shape; saturated at +-448). Ties may
    go either way: the tests decode whatever bytes this gives."""
    x = np.clip(np.asarray(x, dtype=np.float64), -448.0, 448.0)
    hi = np.clip(np.searchsorted(_E4M3_SORTED, x), 1, len(_E4M3_SORTED) - 1)
    lo = hi - 1
    nearer = np.where(x - _E4M3_SORTED[lo] <= _E4M3_SORTED[hi] - x, lo, hi)
    return _E4M3_FINITE[_E4M3_ORDER[nearer]]


def cu_seqlens(lens):
    """int32 numpy [len(lens) + 1]: 0 and the running sums."""
    return np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)


def to64(x):
    if torch is not None and isinstance(x, torch.Tensor):
        return x.detach().cpu().to(torch.float64).numpy()
    return np.asarray(x, dtype=np.float64)


def int32(fw, values):
    a = np.asarray(values, dtype=np.int32)
    return a if fw == "numpy" else torch.from_numpy(a)


def int32_on(fw, device, values):
    """int32 values as an array of framework fw on `device` (numpy: on the host)."""
    return on(fw, device, int32(fw, values))


# (framework, dtype, device, tolerance on out) of the flash_attn_with_kvcache files
# (test_cache_batch_idx.py, test_cache_leftpad.py).
KVCACHE_FRAMEWORKS = [
    ("numpy", "float16", "cpu", 2e-3),
    ("numpy", "float32", "cpu", 2e-5),
    pytest.param("torch", "bfloat16", "cpu", 1.6e-2, marks=needs_torch),
    pytest.param("torch", "float16", "cuda", 2e-3, marks=needs_cuda),
    pytest.param("torch", "bfloat16", "cuda", 1.6e-2, marks=needs_cuda),
]


def assert_close(got, want, tol, what):
    got = to64(got)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    finite = np.isfinite(want)
    assert np.array_equal(np.isfinite(got), finite), f"{what}: non-finite pattern differs"
    assert np.array_equal(got[~finite], want[~finite]), f"{what}: infinities differ"
    err = np.max(np.abs(got[finite] - want[finite]), initial=0.0)
    scale = max(1.0, np.max(np.abs(want[finite]), initial=0.0))
    assert err <= tol * scale, f"{what}: max abs error {err:.3g} > {tol * scale:.3g}"
