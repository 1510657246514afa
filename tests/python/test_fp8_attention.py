"""FP8 attention through flash_attn_func and flash_attn_varlen_func (FlashAttention-3's q_descale,
k_descale, v_descale and out_dtype), and FP8 decode through flash_attn_with_kvcache (an FP8 q with
q_descale over an E4M3 cache with k_scale / v_scale, dense or paged, new rows appended or not),
against the float64 reference on the dequantized values (x * descale), on the CPU backend and,
with torch and a CUDA device, on the GPU.

q, k and v are E4M3: torch.float8_e4m3fn tensors, or numpy uint8 arrays of E4M3 bytes. Inputs are
random values about N(0, 1) times a spread that differs per head, quantized per head with the
scale absmax / 448 (so every head's descale differs and each one must be read).
"""

import math
import os

import numpy as np
import pytest

import gpu_attention as ga
from reference import (assert_close, causal_rule, cu_seqlens, e4m3_bytes, e4m3_decode, int32, make,
                       needs_torch, ref_dense, ref_varlen, rng_for, to64, torch, visibility)

# (framework, out_dtype name (None: the default, numpy float32 / torch bfloat16), tolerance on out,
# tolerance on lse)
CASES = [
    ("numpy", None, 2e-5, 2e-5),
    ("numpy", "float16", 2e-3, 1e-3),
    pytest.param("torch", None, 1.6e-2, 1e-2, marks=needs_torch),
    pytest.param("torch", "float16", 2e-3, 1e-3, marks=needs_torch),
    pytest.param("torch", "float32", 2e-5, 2e-5, marks=needs_torch),
]

CUDA = torch is not None and torch.cuda.is_available() and ga.cuda_available()


class Fp8:
    """One E4M3 operand: `x` as the call takes it (numpy uint8 bytes or a float8_e4m3fn tensor),
    `scale` float32 (heads,) (or (1,) for one scale), and `dequantized` float64, bytes x scale."""

    def __init__(self, fw, shape, rng, one_scale=False, device="cpu"):
        heads = shape[-2]
        spread = rng.uniform(0.5, 2.0, heads)[:, None]  # each head its own range, so its own scale
        values = rng.standard_normal(shape) * spread
        amax = np.abs(values).max(axis=tuple(range(len(shape) - 2)) + (len(shape) - 1,))
        scale = np.array([amax.max()] if one_scale else amax, dtype=np.float64) / 448
        self.scale = scale.astype(np.float32)
        self.bytes = e4m3_bytes(values / self.scale[:, None])
        self.dequantized = e4m3_decode(self.bytes) * self.scale.astype(np.float64)[:, None]
        self.x = self.bytes if fw == "numpy" else torch.from_numpy(self.bytes).view(
            torch.float8_e4m3fn).to(device)
        self.fw, self.device = fw, device

    def descale(self, scale=None):
        """The descale array in the operand's framework (and on its device)."""
        scale = self.scale if scale is None else np.asarray(scale, dtype=np.float32)
        return scale if self.fw == "numpy" else torch.from_numpy(scale).to(self.device)


def out_dtype_of(fw, name):
    if name is None:
        return None
    return getattr(np if fw == "numpy" else torch, name)


def expected_dtype(fw, name):
    if fw == "numpy":
        return np.dtype(name or "float32")
    return getattr(torch, name or "bfloat16")


def operands(fw, key, q_shape, kv_shape, one_scale=False, device="cpu"):
    rng = rng_for("fp8", fw, key)
    return (Fp8(fw, q_shape, rng, one_scale, device), Fp8(fw, kv_shape, rng, one_scale, device),
            Fp8(fw, kv_shape, rng, one_scale, device))


def descales(q, k, v, one_scale=False):
    """The call's keyword arguments: arrays of one scale per head, or Python floats."""
    if one_scale:
        return dict(q_descale=float(q.scale[0]), k_descale=float(k.scale[0]),
                    v_descale=float(v.scale[0]))
    return dict(q_descale=q.descale(), k_descale=k.descale(), v_descale=v.descale())


def rel_l2(got, want):
    """||got - want|| / ||want|| over the finite entries of want."""
    got, finite = to64(got), np.isfinite(want)
    return np.linalg.norm(got[finite] - want[finite]) / np.linalg.norm(want[finite])


# ---- dense ---------------------------------------------------------------------------------------

# (B, Sq, Sk, Hq, Hkv, D)
DENSE_SHAPES = [
    (2, 37, 70, 4, 4, 64),  # Sq < Sk, MHA
    (1, 37, 70, 8, 2, 128),  # GQA 4:1, head dim 128
    (2, 70, 37, 4, 1, 64),  # Sq > Sk, MQA: causal leaves the first rows without keys
]


@pytest.mark.parametrize("fw,out_name,tol,lse_tol", CASES)
@pytest.mark.parametrize("shape", DENSE_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("one_scale", [False, True], ids=["per-head", "one-scale"])
def test_fp8_dense_matches_reference(fw, out_name, tol, lse_tol, shape, causal, one_scale):
    b, sq, sk, hq, hkv, d = shape
    q, k, v = operands(fw, ("dense", shape, causal, one_scale), (b, sq, hq, d), (b, sk, hkv, d),
                       one_scale)
    out, lse, probs = ga.flash_attn_func(q.x, k.x, v.x, causal=causal, return_attn_probs=True,
                                         out_dtype=out_dtype_of(fw, out_name),
                                         **descales(q, k, v, one_scale))
    assert probs is None
    assert type(out) is type(q.x) and tuple(out.shape) == (b, sq, hq, d)
    assert out.dtype == expected_dtype(fw, out_name)
    assert lse.dtype == expected_dtype(fw, "float32")
    want_out, want_lse = ref_dense(q.dequantized, k.dequantized, v.dequantized, 1 / math.sqrt(d),
                                   causal_rule(causal))
    assert_close(out, want_out, tol, "out")
    assert_close(lse, want_lse, lse_tol, "lse")


def test_fp8_check_indices_is_accepted_on_the_cpu():
    """check_indices=False (ours) is accepted by flash_attn_func and flash_attn_varlen_func; the CPU
    backend checks every value anyway, so a bad descale is still named and the results are the
    same bits."""
    b, sq, sk, hq, hkv, d = 2, 37, 70, 4, 2, 128
    q, k, v = operands("numpy", "check-indices", (b, sq, hq, d), (b, sk, hkv, d))
    checked = ga.flash_attn_func(q.x, k.x, v.x, causal=True, **descales(q, k, v))
    trusted = ga.flash_attn_func(q.x, k.x, v.x, causal=True, check_indices=False,
                                 **descales(q, k, v))
    assert np.array_equal(checked, trusted)
    with pytest.raises(ValueError, match="q_descale"):
        ga.flash_attn_func(q.x, k.x, v.x, check_indices=False,
                           **dict(descales(q, k, v), q_descale=np.full(hq, -1.0, np.float32)))
    lens_q, lens_k = [1, 36], [9, 61]
    cu_q, cu_k = cu_seqlens(lens_q), cu_seqlens(lens_k)
    flat = [x.x.reshape(-1, *x.x.shape[2:]) for x in (q, k, v)]
    args = (flat[0][:cu_q[-1]], flat[1][:cu_k[-1]], flat[2][:cu_k[-1]], int32("numpy", cu_q),
            int32("numpy", cu_k), max(lens_q), max(lens_k))
    checked = ga.flash_attn_varlen_func(*args, causal=True, **descales(q, k, v))
    trusted = ga.flash_attn_varlen_func(*args, causal=True, check_indices=False,
                                        **descales(q, k, v))
    assert np.array_equal(checked, trusted)


def test_fp8_each_descale_matters():
    """Each descale is read, per head: the call with one of them changed (doubled, or its heads
    reversed) is the reference of the changed scales, far from the right answer. One scale as a
    Python float, as a (1,) array and repeated per head give the same bits."""
    b, sq, sk, hq, hkv, d = 2, 37, 70, 4, 2, 128
    q, k, v = operands("numpy", "matters", (b, sq, hq, d), (b, sk, hkv, d))
    right, _ = ref_dense(q.dequantized, k.dequantized, v.dequantized, 1 / math.sqrt(d),
                         causal_rule(True))
    for name, op in (("q_descale", q), ("k_descale", k), ("v_descale", v)):
        for how, wrong in (("doubled", op.scale * 2), ("heads reversed", op.scale[::-1].copy())):
            kwargs = dict(descales(q, k, v), **{name: wrong})
            got = ga.flash_attn_func(q.x, k.x, v.x, causal=True, **kwargs)
            ratio = (wrong / op.scale).astype(np.float64)
            operands_seen = [x.dequantized * (ratio[:, None] if x is op else 1)
                             for x in (q, k, v)]
            want, _ = ref_dense(*operands_seen, 1 / math.sqrt(d), causal_rule(True))
            assert_close(got, want, 2e-5, f"{name} {how}")
            err = np.max(np.abs(to64(got) - right))
            assert err > 0.05 * np.max(np.abs(right)), f"{name} {how} changed nothing ({err:.3g})"

    one = dict(q_descale=0.01, k_descale=0.02, v_descale=0.03)
    as_float = ga.flash_attn_func(q.x, k.x, v.x, **one)
    as_array = ga.flash_attn_func(q.x, k.x, v.x,
                                  **{n: np.array([s], np.float32) for n, s in one.items()})
    per_head = ga.flash_attn_func(q.x, k.x, v.x, q_descale=np.full(hq, 0.01, np.float32),
                                  k_descale=np.full(hkv, 0.02, np.float32),
                                  v_descale=np.full(hkv, 0.03, np.float32))
    assert np.array_equal(as_float, as_array)
    assert np.array_equal(as_float, per_head)


@pytest.mark.parametrize("causal,window", [(False, (12, 3)), (True, (20, 0))])
def test_fp8_window_matches_reference(causal, window):
    b, sq, sk, hq, hkv, d = 1, 37, 70, 4, 2, 64
    q, k, v = operands("numpy", ("window", window), (b, sq, hq, d), (b, sk, hkv, d))
    out = ga.flash_attn_func(q.x, k.x, v.x, causal=causal, window_size=window,
                             **descales(q, k, v))
    want, _ = ref_dense(q.dequantized, k.dequantized, v.dequantized, 1 / math.sqrt(d),
                        lambda sq, sk: visibility(sq, sk, causal, window))
    assert_close(out, want, 2e-5, f"window {window}")


# ---- varlen --------------------------------------------------------------------------------------


@pytest.mark.parametrize("fw,out_name,tol,lse_tol", CASES)
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_fp8_varlen_matches_reference(fw, out_name, tol, lse_tol, d, causal):
    lens_q = [1, 37, 12, 70]
    lens_k = [9, 70, 1, 37]  # sequences 2 and 3 have Sq > Sk: causal rows without keys
    cu_q, cu_k = cu_seqlens(lens_q), cu_seqlens(lens_k)
    hq, hkv = 8, 2
    q, k, v = operands(fw, ("varlen", d, causal), (cu_q[-1], hq, d), (cu_k[-1], hkv, d))
    out, lse, _ = ga.flash_attn_varlen_func(
        q.x, k.x, v.x, int32(fw, cu_q), int32(fw, cu_k), max(lens_q), max(lens_k), causal=causal,
        return_attn_probs=True, out_dtype=out_dtype_of(fw, out_name), **descales(q, k, v))
    assert out.dtype == expected_dtype(fw, out_name)
    assert tuple(lse.shape) == (hq, cu_q[-1])
    want_out, want_lse = ref_varlen(q.dequantized, k.dequantized, v.dequantized, cu_q, cu_k,
                                    1 / math.sqrt(d), causal_rule(causal))
    assert_close(out, want_out, tol, "out")
    assert_close(lse, want_lse, lse_tol, "lse")


# ---- decode: flash_attn_with_kvcache -------------------------------------------------------------


def as_bytes(x):
    """An E4M3 array's bytes as numpy uint8 (a host copy of a torch tensor)."""
    return x if isinstance(x, np.ndarray) else x.view(torch.uint8).cpu().numpy()


class Cache:
    """An E4M3 KV cache: k and v are Fp8 operands of the logical cache (B, Sk, Hkv, D); kx and vx
    what the call takes: those, or with `page` a pool of page-key pages in a random order with two
    spare pages of other bytes, read through `table` (int32 (B, Sk / page))."""

    def __init__(self, fw, shape, rng, page=None, one_scale=False, device="cpu"):
        self.k, self.v = (Fp8(fw, shape, rng, one_scale, device) for _ in range(2))
        self.page, self.table = page, None
        self.kx, self.vx = self.k.x, self.v.x
        if page is None:
            return
        b, sk, hkv, d = shape
        per_seq = sk // page
        order = rng.permutation(b * per_seq + 2)
        table = order[:b * per_seq].reshape(b, per_seq).astype(np.int32)
        pools = []
        for op in (self.k, self.v):
            pool = e4m3_bytes(rng.standard_normal((len(order), page, hkv, d)) * 100)
            pool[table] = op.bytes.reshape(b, per_seq, page, hkv, d)
            pools.append(pool if fw == "numpy" else
                         torch.from_numpy(pool).view(torch.float8_e4m3fn).to(device))
        self.kx, self.vx = pools
        self.table = int32(fw, table)
        if fw == "torch":
            self.table = self.table.to(device)

    def logical(self, x):
        """The bytes of kx or vx as the logical cache (B, Sk, Hkv, D), read now."""
        raw = as_bytes(x)
        if self.page is None:
            return raw
        table = self.table if isinstance(self.table, np.ndarray) else self.table.cpu().numpy()
        return raw[table].reshape(table.shape[0], -1, *raw.shape[2:])

    def dequantized(self, which):
        """float64 of the logical cache as it holds now (x * scale[head])."""
        op, x = (self.k, self.kx) if which == "k" else (self.v, self.vx)
        return e4m3_decode(self.logical(x)) * op.scale.astype(np.float64)[:, None]

    def scales(self, q, one_scale=False):
        """The call's q_descale, k_scale and v_scale: per-head arrays, or Python floats."""
        if one_scale:
            return dict(q_descale=float(q.scale[0]), k_scale=float(self.k.scale[0]),
                        v_scale=float(self.v.scale[0]))
        return dict(q_descale=q.descale(), k_scale=self.k.descale(), v_scale=self.v.descale())


def ref_decode(qd, kd, vd, used, causal):
    """The float64 reference of each sequence b of q over the first used[b] (>= 1) keys of the
    logical cache kd / vd, all dequantized: (out, lse) stacked over the batch."""
    scale = 1 / math.sqrt(qd.shape[-1])
    outs, lses = zip(*(ref_dense(qd[b:b + 1], kd[b:b + 1, :n], vd[b:b + 1, :n], scale,
                                 causal_rule(causal))
                       for b, n in enumerate(used)))
    return np.concatenate(outs), np.concatenate(lses)


def ref_of(q, cache, used, causal):
    return ref_decode(q.dequantized, cache.dequantized("k"), cache.dequantized("v"), used, causal)


@pytest.mark.parametrize("fw,out_name,tol,lse_tol", CASES)
@pytest.mark.parametrize("page", [None, 3, 16], ids=["dense", "page3", "page16"])
@pytest.mark.parametrize("sq", [1, 4], ids=["sq1", "sq4"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("one_scale", [False, True], ids=["per-head", "one-scale"])
def test_fp8_kvcache_matches_reference(fw, out_name, tol, lse_tol, page, sq, causal, one_scale):
    """FP8 decode (GQA 4:1) over each sequence's first cache_seqlens keys, causal bottom-right
    aligned to them (with Sq 4 over 2 keys the first two rows see none: out 0, lse -inf)."""
    b, sk, hq, hkv, d = 3, 48, 8, 2, 64
    rng = rng_for("fp8-kvcache", fw, page, sq, causal, one_scale)
    q = Fp8(fw, (b, sq, hq, d), rng, one_scale)
    cache = Cache(fw, (b, sk, hkv, d), rng, page, one_scale)
    used = [sk, 9, 2]
    out, lse = ga.flash_attn_with_kvcache(
        q.x, cache.kx, cache.vx, cache_seqlens=int32(fw, used), block_table=cache.table,
        causal=causal, return_softmax_lse=True, out_dtype=out_dtype_of(fw, out_name),
        **cache.scales(q, one_scale))
    assert type(out) is type(q.x) and tuple(out.shape) == (b, sq, hq, d)
    assert out.dtype == expected_dtype(fw, out_name)
    assert lse.dtype == expected_dtype(fw, "float32") and tuple(lse.shape) == (b, hq, sq)
    want_out, want_lse = ref_of(q, cache, used, causal)
    assert_close(out, want_out, tol, "out")
    assert_close(lse, want_lse, lse_tol, "lse")


@pytest.mark.parametrize("fw", ["numpy", pytest.param("torch", marks=needs_torch)])
@pytest.mark.parametrize("page", [None, 1, 16], ids=["dense", "page1", "page16"])
@pytest.mark.parametrize("sn", [1, 3], ids=["new1", "new3"])
def test_fp8_kvcache_appends_new_rows(fw, page, sn):
    """k/v (16-bit rows) appended in the FP8 call: each lands at rows cache_seqlens[b].. as a
    nearest E4M3 value of x / scale[head] (saturated), every other byte of the cache (and
    cache_seqlens) stays, and the call attends to cache_seqlens + sn keys of the updated cache."""
    b, sk, hq, hkv, d = 3, 48, 6, 2, 128
    rng = rng_for("fp8-kvcache-append", fw, page, sn)
    q = Fp8(fw, (b, sn, hq, d), rng)
    cache = Cache(fw, (b, sk, hkv, d), rng, page)
    new_dtype = "float16" if fw == "numpy" else "bfloat16"
    new_k, new_v = (make(fw, new_dtype, (b, sn, hkv, d), rng) for _ in range(2))
    used = int32(fw, [0, 20, sk - sn])
    before = [cache.logical(x).copy() for x in (cache.kx, cache.vx)]
    out = ga.flash_attn_with_kvcache(q.x, cache.kx, cache.vx, k=new_k, v=new_v,
                                     cache_seqlens=used, block_table=cache.table, causal=True,
                                     **cache.scales(q))
    assert np.array_equal(to64(used), [0, 20, sk - sn])  # cache_seqlens is not updated
    for old, x, new, op, what in ((before[0], cache.kx, new_k, cache.k, "k"),
                                  (before[1], cache.vx, new_v, cache.v, "v")):
        now = cache.logical(x)
        exact = np.clip(to64(new) / op.scale.astype(np.float64)[:, None], -448, 448)
        nearest = np.abs(e4m3_decode(e4m3_bytes(exact)) - exact)
        for i, at in enumerate([0, 20, sk - sn]):
            got = now[i, at:at + sn]
            assert np.all(np.abs(e4m3_decode(got) - exact[i]) <= nearest[i]), \
                f"{what} rows appended at {at} of sequence {i}"
            rest = np.ones(sk, bool)
            rest[at:at + sn] = False
            assert np.array_equal(now[i, rest], old[i, rest]), f"{what}: other rows of {i}"
    want, _ = ref_of(q, cache, [sn, 20 + sn, sk], True)
    assert_close(out, want, 2e-5 if fw == "numpy" else 1.6e-2, "out")


def test_fp8_kvcache_each_descale_matters():
    """Each scale is read, per head: the call with one changed (doubled, or head 0's alone
    quadrupled) is the reference of the changed scales, far from the right answer, and head 0's
    change leaves the query heads that do not read that head bit for bit. k_descale / v_descale
    (FlashAttention-3's names) are k_scale / v_scale; one scale as a float, a (1,) array or
    repeated per head gives the same bits; the whole cache is flash_attn_func's FP8 attention and
    a paged cache the dense one, bit for bit."""
    b, sk, hq, hkv, d = 2, 48, 4, 2, 64
    rng = rng_for("fp8-kvcache-matters")
    q = Fp8("numpy", (b, 2, hq, d), rng)
    cache = Cache("numpy", (b, sk, hkv, d), rng)
    used = [sk, 17]
    lens = int32("numpy", used)
    scales = cache.scales(q)
    right, _ = ref_of(q, cache, used, True)
    base = ga.flash_attn_with_kvcache(q.x, cache.kx, cache.vx, cache_seqlens=lens, causal=True,
                                      **scales)
    for name, op, reached in (("q_descale", q, 1), ("k_scale", cache.k, hq // hkv),
                              ("v_scale", cache.v, hq // hkv)):
        head0 = np.ones_like(op.scale)
        head0[0] = 4
        for how, wrong in (("doubled", op.scale * 2), ("head 0 x4", op.scale * head0)):
            got = ga.flash_attn_with_kvcache(q.x, cache.kx, cache.vx, cache_seqlens=lens,
                                             causal=True, **dict(scales, **{name: wrong}))
            ratio = (wrong / op.scale).astype(np.float64)[:, None]
            seen = [x.dequantized * (ratio if x is op else 1) for x in (q, cache.k, cache.v)]
            want, _ = ref_decode(*seen, used, True)
            assert_close(got, want, 2e-5, f"{name} {how}")
            err = np.max(np.abs(to64(got) - right)[:, :, :reached])
            assert err > 0.05 * np.max(np.abs(right)), f"{name} {how} changed nothing ({err:.3g})"
            if how == "head 0 x4":
                assert np.array_equal(got[:, :, reached:], base[:, :, reached:]), name

    vllm = ga.flash_attn_with_kvcache(q.x, cache.kx, cache.vx, cache_seqlens=lens, **scales)
    fa3 = ga.flash_attn_with_kvcache(q.x, cache.kx, cache.vx, cache_seqlens=lens,
                                     q_descale=scales["q_descale"], k_descale=scales["k_scale"],
                                     v_descale=scales["v_scale"])
    assert np.array_equal(vllm, fa3)
    one = dict(q_descale=0.01, k_scale=0.02, v_scale=0.03)
    as_float = ga.flash_attn_with_kvcache(q.x, cache.kx, cache.vx, cache_seqlens=lens, **one)
    as_array = ga.flash_attn_with_kvcache(
        q.x, cache.kx, cache.vx, cache_seqlens=lens,
        **{n: np.array([s], np.float32) for n, s in one.items()})
    per_head = ga.flash_attn_with_kvcache(
        q.x, cache.kx, cache.vx, cache_seqlens=lens, q_descale=np.full(hq, 0.01, np.float32),
        k_descale=np.full(hkv, 0.02, np.float32), v_descale=np.full(hkv, 0.03, np.float32))
    assert np.array_equal(as_float, as_array) and np.array_equal(as_float, per_head)

    whole, lse = ga.flash_attn_with_kvcache(q.x, cache.kx, cache.vx, causal=True,
                                            return_softmax_lse=True, **scales)
    want, want_lse, _ = ga.flash_attn_func(q.x, cache.kx, cache.vx, causal=True,
                                           return_attn_probs=True, q_descale=q.scale,
                                           k_descale=cache.k.scale, v_descale=cache.v.scale)
    assert np.array_equal(whole, want) and np.array_equal(lse, want_lse)
    per_seq = sk // 16  # the same cache in pages of 16 keys
    table = rng.permutation(b * per_seq).reshape(b, per_seq).astype(np.int32)
    pools = [np.empty((b * per_seq, 16, hkv, d), np.uint8) for _ in range(2)]
    for pool, op in zip(pools, (cache.k, cache.v)):
        pool[table] = op.bytes.reshape(b, per_seq, 16, hkv, d)
    got = ga.flash_attn_with_kvcache(q.x, *pools, cache_seqlens=lens, block_table=table,
                                     causal=True, **scales)
    assert np.array_equal(got, ga.flash_attn_with_kvcache(q.x, cache.kx, cache.vx,
                                                          cache_seqlens=lens, causal=True,
                                                          **scales))


@pytest.mark.parametrize("fw", ["numpy", pytest.param("torch", marks=needs_torch)])
def test_fp8_descales_as_numpy_reals_and_a_number_beside_an_array(fw):
    """A numpy real (numpy.float32, numpy.float64, numpy.int64) is taken as a Python float is, for
    every descale and cache scale. A number for one of k_descale / v_descale (k_scale / v_scale)
    beside an array for the other is made an array of the other's shape and stride (the library
    reads both with one stride): the call is the one with both arrays, bit for bit, for a
    contiguous array, a strided view and an appended row."""
    b, sq, sk, hq, hkv, d = 2, 5, 40, 4, 2, 64
    q, k, v = operands(fw, "numpy-reals", (b, sq, hq, d), (b, sk, hkv, d))

    def same(a, b):
        return np.array_equal(to64(a), to64(b))  # float64 holds every out dtype exactly

    def array(values, step=1):
        """float32 `values`, in a view of every step-th element when step > 1."""
        full = np.repeat(np.asarray(values, np.float32), step)
        return full[::step] if fw == "numpy" else torch.from_numpy(full)[::step]

    as_floats = ga.flash_attn_func(q.x, k.x, v.x, causal=True, q_descale=0.01, k_descale=0.02,
                                   v_descale=0.03)
    as_numpy = ga.flash_attn_func(q.x, k.x, v.x, causal=True, q_descale=np.float32(0.01),
                                  k_descale=np.float64(0.02), v_descale=np.float32(0.03))
    assert same(as_floats, as_numpy)
    ints = ga.flash_attn_func(q.x, k.x, v.x, q_descale=np.int64(1), k_descale=1, v_descale=1)
    assert same(ints, ga.flash_attn_func(q.x, k.x, v.x, q_descale=1.0, k_descale=1.0,
                                         v_descale=1.0))
    per_head = k.scale  # differs per head
    for step in (1, 3):
        for name, other in (("k_descale", "v_descale"), ("v_descale", "k_descale")):
            both = ga.flash_attn_func(q.x, k.x, v.x, causal=True, q_descale=0.01,
                                      **{name: array([0.03] * hkv), other: array(per_head)})
            for number in (0.03, np.float32(0.03)):
                got = ga.flash_attn_func(q.x, k.x, v.x, causal=True, q_descale=0.01,
                                         **{name: number, other: array(per_head, step)})
                assert same(got, both), (name, step, number)

    cache_k, cache_v = (Fp8(fw, (b, sk, hkv, d), rng_for("numpy-reals", fw, x)) for x in "kv")
    new = make(fw, "float16" if fw == "numpy" else "bfloat16", (b, 1, hkv, d),
               rng_for("numpy-reals", fw, "new"))
    lens = int32(fw, [3, 20])
    results = []
    for k_scale, v_scale in ((array(per_head), array([0.03] * hkv)),
                             (array(per_head, 2), np.float32(0.03)), (array(per_head), 0.03)):
        kc, vc = (x.x.clone() if fw == "torch" else x.x.copy() for x in (cache_k, cache_v))
        out = ga.flash_attn_with_kvcache(q.x, kc, vc, k=new, v=new, cache_seqlens=lens,
                                         causal=True, q_descale=np.float32(0.01),
                                         k_descale=k_scale, v_scale=v_scale)
        results.append((out, as_bytes(kc), as_bytes(vc)))
    for out, kb, vb in results[1:]:
        assert same(out, results[0][0])
        assert np.array_equal(kb, results[0][1]) and np.array_equal(vb, results[0][2])


# ---- errors --------------------------------------------------------------------------------------


def test_fp8_errors_name_the_argument():
    b, sq, sk, hq, hkv, d = 1, 37, 70, 4, 2, 64
    q, k, v = operands("numpy", "errors", (b, sq, hq, d), (b, sk, hkv, d))
    scales = descales(q, k, v)
    q16, k16 = (x.dequantized.astype(np.float16) for x in (q, k))
    cu_q, cu_k = cu_seqlens([sq]), cu_seqlens([sk])

    def varlen(qx, kx, vx, **kwargs):
        return ga.flash_attn_varlen_func(qx[0], kx[0], vx[0], cu_q, cu_k, sq, sk, **kwargs)

    for call in (ga.flash_attn_func, varlen):
        # a descale missing
        with pytest.raises(ValueError, match="q dtype is uint8 .FP8 attention. but q_descale, "
                                             "k_descale, v_descale are missing"):
            call(q.x, k.x, v.x)
        for name in scales:
            with pytest.raises(ValueError, match=f"but {name} is missing"):
                call(q.x, k.x, v.x, **{n: s for n, s in scales.items() if n != name})
        # descales (or out_dtype) for a 16-bit q
        with pytest.raises(ValueError, match="q_descale given but q dtype is float16"):
            call(q16, k16, k16, q_descale=0.5)
        with pytest.raises(ValueError, match="q_descale, k_descale, v_descale, out_dtype given "
                                             "but q dtype is float16"):
            call(q16, k16, k16, out_dtype=np.float32, **scales)
        # FP8 q beside 16-bit k or v
        with pytest.raises(ValueError, match="k dtype is float16 but q is FP8"):
            call(q.x, k16, v.x, **scales)
        with pytest.raises(ValueError, match="v dtype is float16 but q is FP8"):
            call(q.x, k.x, k16, **scales)
        # out_dtype, and descales the library refuses, named as the caller passed them
        for bad in (np.float64, np.int32, "bfloat16"):
            with pytest.raises(ValueError, match="out_dtype="):
                call(q.x, k.x, v.x, out_dtype=bad, **scales)
        with pytest.raises(ValueError, match=r"k_descale has shape \[3\]"):
            call(q.x, k.x, v.x, **dict(scales, k_descale=np.ones(3, np.float32)))
        with pytest.raises(ValueError, match=r"q_descale\[2\] is -1"):
            call(q.x, k.x, v.x, **dict(scales, q_descale=np.array([1, 1, -1, 1], np.float32)))
        with pytest.raises(ValueError, match="v_descale has dtype float64"):
            call(q.x, k.x, v.x, **dict(scales, v_descale=v.scale.astype(np.float64)))
        with pytest.raises(TypeError, match="q_descale must be a torch.Tensor or a numpy"):
            call(q.x, k.x, v.x, **dict(scales, q_descale=[0.5] * hq))


def test_16bit_calls_are_unchanged():
    """The FP8 keywords left at None change nothing in a 16-bit call."""
    rng = rng_for("fp8-16bit")
    q, k, v = (rng.standard_normal((1, 37, 2, 64)).astype(np.float16) for _ in range(3))
    out = ga.flash_attn_func(q, k, v, q_descale=None, k_descale=None, v_descale=None,
                             out_dtype=None)
    assert out.dtype == np.float16
    assert np.array_equal(out, ga.flash_attn_func(q, k, v))


def test_fp8_kvcache_errors_name_the_argument():
    """Bad FP8 decode calls raise ValueError naming the argument, as passed (q_descale, k_scale or
    k_descale). Every one comes before any row is appended, the library's checks of q_descale
    too (its shape, and here on the CPU its values: the attention is checked before the append):
    the caches stay untouched."""
    b, sk, hq, hkv, d = 2, 32, 4, 2, 64
    rng = rng_for("fp8-kvcache-errors")
    q = Fp8("numpy", (b, 1, hq, d), rng)
    for page in (None, 16):
        cache = Cache("numpy", (b, sk, hkv, d), rng, page)
        kx, vx = cache.kx, cache.vx
        kept = kx.copy(), vx.copy()
        new = make("numpy", "float16", (b, 1, hkv, d), rng)
        scales = cache.scales(q)
        q16 = q.dequantized.astype(np.float16)
        k16 = cache.k.dequantized.astype(np.float16)

        def call(qx, kc=kx, vc=vx, **kwargs):
            """The call with the new rows appended at rows 5 and 9."""
            return ga.flash_attn_with_kvcache(qx, kc, vc, k=new, v=new,
                                              cache_seqlens=np.array([5, 9], np.int32),
                                              block_table=cache.table, **kwargs)

        # the FP8 options with a 16-bit q (beside the same cache as a 16-bit q reads it)
        with pytest.raises(ValueError, match="q_descale given but q dtype is float16"):
            call(q16, **scales)
        with pytest.raises(ValueError, match="q_descale, out_dtype given but q dtype is float16"):
            call(q16, out_dtype=np.float32, **scales)
        with pytest.raises(ValueError, match="out_dtype given but q dtype is float16: q_descale "
                                             "and out_dtype are for FP8 attention"):
            call(q16, out_dtype=np.float16, k_scale=0.1, v_scale=0.1)
        # FP8 q: q_descale, the E4M3 cache and its scales are required
        with pytest.raises(ValueError, match="q dtype is uint8 .FP8 attention. but q_descale is "
                                             "missing"):
            call(q.x, k_scale=scales["k_scale"], v_scale=scales["v_scale"])
        with pytest.raises(ValueError, match=r"but k_scale \(or k_descale\) and v_scale \(or "
                                             r"v_descale\) are missing"):
            call(q.x, q_descale=scales["q_descale"])
        with pytest.raises(ValueError, match=r"but v_scale \(or v_descale\) is missing"):
            call(q.x, q_descale=scales["q_descale"], k_descale=scales["k_scale"])
        if page is None:
            with pytest.raises(ValueError, match="k_cache dtype is float16 but q is FP8 .uint8.: "
                                                 "FP8 attention reads an E4M3 cache"):
                call(q.x, k16, k16, **scales)
            with pytest.raises(ValueError, match="v_cache dtype is int8 but q is FP8"):
                call(q.x, kx, vx.view(np.int8), **scales)
        # k_scale and k_descale are one argument
        for x in "kv":
            with pytest.raises(ValueError, match=f"{x}_scale and {x}_descale are one argument"):
                call(q.x, **dict(scales, **{f"{x}_descale": scales[f"{x}_scale"]}))
        # out_dtype, and scales the library refuses, named as passed
        for bad in (np.float64, np.int32, "bfloat16"):
            with pytest.raises(ValueError, match="out_dtype="):
                call(q.x, out_dtype=bad, **scales)
        negative = np.array([1, -1], np.float32)
        with pytest.raises(ValueError, match=r"k_scale\[1\] is -1"):
            call(q.x, **dict(scales, k_scale=negative))
        with pytest.raises(ValueError, match=r"k_descale\[1\] is -1"):
            call(q.x, q_descale=scales["q_descale"], k_descale=negative,
                 v_scale=scales["v_scale"])
        with pytest.raises(ValueError, match="v_descale has dtype float64"):
            call(q.x, q_descale=scales["q_descale"], k_scale=scales["k_scale"],
                 v_descale=cache.v.scale.astype(np.float64))
        with pytest.raises(TypeError, match="k_descale must be a torch.Tensor or a numpy"):
            call(q.x, q_descale=scales["q_descale"], k_descale=[0.5] * hkv,
                 v_scale=scales["v_scale"])
        with pytest.raises(ValueError, match=r"q_descale has shape \[3\]"):
            call(q.x, **dict(scales, q_descale=np.ones(3, np.float32)))
        with pytest.raises(ValueError, match=r"q_descale\[2\] is -1"):
            call(q.x, **dict(scales, q_descale=np.array([1, 1, -1, 1], np.float32)))
        assert np.array_equal(kx, kept[0]) and np.array_equal(vx, kept[1]), page
        # and without an append
        with pytest.raises(ValueError, match=r"q_descale has shape \[3\]"):
            ga.flash_attn_with_kvcache(q.x, kx, vx, block_table=cache.table,
                                       **dict(scales, q_descale=np.ones(3, np.float32)))
        with pytest.raises(ValueError, match=r"q_descale\[2\] is -1"):
            ga.flash_attn_with_kvcache(
                q.x, kx, vx, block_table=cache.table,
                **dict(scales, q_descale=np.array([1, 1, -1, 1], np.float32)))
    # k_descale for a 16-bit cache: the library's error, named as passed
    k16 = make("numpy", "float16", (b, sk, hkv, d), rng)
    with pytest.raises(ValueError, match="k_descale is given but the cache dtype is float16"):
        ga.flash_attn_with_kvcache(q.dequantized.astype(np.float16), k16, k16, k_descale=0.1,
                                   v_descale=0.1)


def test_16bit_kvcache_calls_are_unchanged():
    """The FP8 keywords left at None change nothing in a 16-bit or 8-bit cache's call; k_descale
    / v_descale name k_scale / v_scale there too."""
    rng = rng_for("fp8-kvcache-16bit")
    q = make("numpy", "float16", (2, 1, 4, 64), rng)
    kc, vc = (make("numpy", "float16", (2, 20, 2, 64), rng) for _ in range(2))
    out = ga.flash_attn_with_kvcache(q, kc, vc, q_descale=None, k_descale=None, v_descale=None,
                                     out_dtype=None)
    assert out.dtype == np.float16
    assert np.array_equal(out, ga.flash_attn_with_kvcache(q, kc, vc))
    kb, vb = (e4m3_bytes(to64(x) * 40) for x in (kc, vc))
    want = ga.flash_attn_with_kvcache(q, kb, vb, k_scale=0.025, v_scale=0.025)
    assert np.array_equal(want, ga.flash_attn_with_kvcache(q, kb, vb, k_descale=0.025,
                                                           v_descale=0.025))


@needs_torch
def test_fp8_torch_errors():
    q, k, v = operands("torch", "torch-errors", (1, 37, 4, 64), (1, 70, 2, 64))
    scales = descales(q, k, v)
    kb = torch.from_numpy(k.dequantized).to(torch.bfloat16)
    with pytest.raises(ValueError, match="but q_descale, k_descale, v_descale are missing"):
        ga.flash_attn_func(q.x, k.x, v.x)
    with pytest.raises(ValueError, match="k dtype is torch.bfloat16 but q is FP8"):
        ga.flash_attn_func(q.x, kb, v.x, **scales)
    qb = torch.from_numpy(q.dequantized).to(torch.bfloat16)
    with pytest.raises(ValueError, match="k_descale, v_descale given but q dtype is torch.bfloat"):
        ga.flash_attn_func(qb, kb, kb, k_descale=scales["k_descale"], v_descale=1.0)
    with pytest.raises(ValueError, match="out_dtype="):
        ga.flash_attn_func(q.x, k.x, v.x, out_dtype=np.float32, **scales)
    with pytest.raises(TypeError, match="v_descale is a numpy array but q is a torch"):
        ga.flash_attn_func(q.x, k.x, v.x, **dict(scales, v_descale=v.scale))


@needs_torch
def test_fp8_kvcache_torch_errors():
    q = Fp8("torch", (2, 1, 4, 64), rng_for("fp8-kvcache-torch-errors"))
    cache = Cache("torch", (2, 32, 2, 64), rng_for("fp8-kvcache-torch-errors", "cache"))
    scales = cache.scales(q)
    kb = torch.from_numpy(cache.k.dequantized).to(torch.bfloat16)
    qb = torch.from_numpy(q.dequantized).to(torch.bfloat16)
    with pytest.raises(ValueError, match="q dtype is torch.float8_e4m3fn .FP8 attention. but "
                                         "q_descale is missing"):
        ga.flash_attn_with_kvcache(q.x, cache.kx, cache.vx, k_scale=scales["k_scale"],
                                   v_scale=scales["v_scale"])
    with pytest.raises(ValueError, match="k_cache dtype is torch.bfloat16 but q is FP8"):
        ga.flash_attn_with_kvcache(q.x, kb, kb, **scales)
    int8 = torch.zeros(2, 32, 2, 64, dtype=torch.int8)
    with pytest.raises(ValueError, match="k_cache dtype is torch.int8 but q is FP8"):
        ga.flash_attn_with_kvcache(q.x, int8, int8, **scales)
    with pytest.raises(ValueError, match="q_descale given but q dtype is torch.bfloat16"):
        ga.flash_attn_with_kvcache(qb, cache.kx, cache.vx, **scales)
    with pytest.raises(ValueError, match="out_dtype="):
        ga.flash_attn_with_kvcache(q.x, cache.kx, cache.vx, out_dtype=np.float32, **scales)
    with pytest.raises(TypeError, match="q_descale is a numpy array but q is a torch"):
        ga.flash_attn_with_kvcache(q.x, cache.kx, cache.vx, **dict(scales, q_descale=q.scale))
    with pytest.raises(TypeError, match="v_descale is a numpy array but q is a torch"):
        ga.flash_attn_with_kvcache(q.x, cache.kx, cache.vx, q_descale=scales["q_descale"],
                                   k_scale=scales["k_scale"], v_descale=cache.v.scale)
    # float32 out on the CPU: the numpy call's bits
    got = ga.flash_attn_with_kvcache(q.x, cache.kx, cache.vx, causal=True,
                                     out_dtype=torch.float32, **scales)
    want = ga.flash_attn_with_kvcache(q.bytes, cache.k.bytes, cache.v.bytes, causal=True,
                                      q_descale=q.scale, k_scale=cache.k.scale,
                                      v_scale=cache.v.scale)
    assert np.array_equal(got.numpy(), want)


# ---- CUDA ----------------------------------------------------------------------------------------


@needs_torch
@pytest.mark.skipif(not CUDA, reason="needs torch, a CUDA build and a CUDA device")
@pytest.mark.parametrize("shape", [
    (2, 300, 300, 8, 2, 128),  # head dim 128, dense: the sm_90a FP8 kernel where there is one
    (2, 37, 300, 8, 8, 128),  # Sq < Sk
    (1, 300, 70, 4, 1, 64),  # head dim 64, Sq > Sk: the FP8 kernel too
    (1, 300, 70, 4, 1, 256),  # head dim 256: the FP8 kernel too
], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_torch_cuda_fp8_matches_reference(shape, causal):
    """On the GPU the FP8 kernel rounds P to E4M3, so out is held to a relative L2 error (the C++
    suite's 0.06 for a call) rather than to bf16's element tolerance."""
    b, sq, sk, hq, hkv, d = shape
    q, k, v = operands("torch", ("cuda", shape, causal), (b, sq, hq, d), (b, sk, hkv, d),
                       device="cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())  # the operands' copies to the GPU
    with torch.cuda.stream(stream):
        out, lse, _ = ga.flash_attn_func(q.x, k.x, v.x, causal=causal, return_attn_probs=True,
                                         **descales(q, k, v))
        one = ga.flash_attn_func(q.x, k.x, v.x, causal=causal, q_descale=0.01, k_descale=0.02,
                                 v_descale=0.03, out_dtype=torch.float16)
        doubled = ga.flash_attn_func(q.x, k.x, v.x, causal=causal,
                                     **dict(descales(q, k, v), v_descale=v.descale(v.scale * 2)))
    stream.synchronize()
    assert out.is_cuda and out.dtype == torch.bfloat16 and one.dtype == torch.float16
    want, want_lse = ref_dense(q.dequantized, k.dequantized, v.dequantized, 1 / math.sqrt(d),
                               causal_rule(causal))
    assert rel_l2(out.cpu(), want) < 0.06
    assert_close(lse.cpu(), want_lse, 1e-2, "lse")
    assert rel_l2(doubled.cpu(), 2 * want) < 0.06  # v's descale is read
    unit = [e4m3_decode(x.bytes) for x in (q, k, v)]
    want_one, _ = ref_dense(unit[0] * 0.01, unit[1] * 0.02, unit[2] * 0.03, 1 / math.sqrt(d),
                            causal_rule(causal))
    assert rel_l2(one.cpu(), want_one) < 0.06
    # Trusted descales: the same kernels without the host copy, the same bits; a bad value is
    # then not seen (no error), where the checked call names it.
    trusted = ga.flash_attn_func(q.x, k.x, v.x, causal=causal, check_indices=False,
                                 **descales(q, k, v))
    torch.cuda.synchronize()
    assert torch.equal(trusted, out)
    bad = dict(descales(q, k, v), q_descale=q.descale(-q.scale))
    ga.flash_attn_func(q.x, k.x, v.x, causal=causal, check_indices=False, **bad)
    torch.cuda.synchronize()
    with pytest.raises(ValueError, match="q_descale"):
        ga.flash_attn_func(q.x, k.x, v.x, causal=causal, **bad)
    with pytest.raises(NotImplementedError, match="float32"):
        ga.flash_attn_func(q.x, k.x, v.x, out_dtype=torch.float32, **descales(q, k, v))


@needs_torch
@pytest.mark.skipif(not CUDA, reason="needs torch, a CUDA build and a CUDA device")
@pytest.mark.parametrize("d", [64, 128])
def test_torch_cuda_fp8_varlen_matches_reference(d):
    lens_q, lens_k = [1, 37, 12, 70], [9, 70, 1, 37]
    cu_q, cu_k = cu_seqlens(lens_q), cu_seqlens(lens_k)
    q, k, v = operands("torch", ("cuda-varlen", d), (cu_q[-1], 8, d), (cu_k[-1], 2, d),
                       device="cuda")
    out = ga.flash_attn_varlen_func(q.x, k.x, v.x, int32("torch", cu_q).cuda(),
                                    int32("torch", cu_k).cuda(), max(lens_q), max(lens_k),
                                    causal=True, out_dtype=torch.float16, **descales(q, k, v))
    assert out.is_cuda and out.dtype == torch.float16
    want, _ = ref_varlen(q.dequantized, k.dequantized, v.dequantized, cu_q, cu_k,
                         1 / math.sqrt(d), causal_rule(True))
    assert rel_l2(out.cpu(), want) < 0.06  # the FP8 kernel on Hopper (P rounded to E4M3)
    if (torch.cuda.get_device_capability()[0] != 9 or os.environ.get("GPUATTN_KERNEL") == "sm80"
            or os.environ.get("GPUATTN_FP8_KERNEL") == "0"):  # a dequantized q: 16-bit accuracy
        assert_close(out.cpu(), want, 4e-3, "out")
    trusted = ga.flash_attn_varlen_func(q.x, k.x, v.x, int32("torch", cu_q).cuda(),
                                        int32("torch", cu_k).cuda(), max(lens_q), max(lens_k),
                                        causal=True, out_dtype=torch.float16, check_indices=False,
                                        **descales(q, k, v))
    torch.cuda.synchronize()
    assert torch.equal(trusted, out)
    bad = dict(descales(q, k, v), v_descale=v.descale(-v.scale))
    args = (q.x, k.x, v.x, int32("torch", cu_q).cuda(), int32("torch", cu_k).cuda(), max(lens_q),
            max(lens_k))
    ga.flash_attn_varlen_func(*args, check_indices=False, **bad)
    torch.cuda.synchronize()
    with pytest.raises(ValueError, match="v_descale"):
        ga.flash_attn_varlen_func(*args, **bad)


@needs_torch
@pytest.mark.skipif(not CUDA, reason="needs torch, a CUDA build and a CUDA device")
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_torch_cuda_fp8_call_is_captured_into_a_graph(causal):
    """With check_indices=False an FP8 call makes no host copy, so it can be captured into a CUDA
    graph: a replay over new values in the same tensors gives the eager call's bits."""
    b, sq, sk, hq, hkv, d = 2, 300, 300, 8, 2, 128
    q, k, v = operands("torch", ("graph", causal), (b, sq, hq, d), (b, sk, hkv, d), device="cuda")
    kw = dict(descales(q, k, v), causal=causal, check_indices=False)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())  # the operands' copies to the GPU
    with torch.cuda.stream(stream):
        ga.flash_attn_func(q.x, k.x, v.x, **kw)  # the direct call the replays must equal
    stream.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        out = ga.flash_attn_func(q.x, k.x, v.x, **kw)
    q2, k2, v2 = operands("torch", ("graph-new", causal), (b, sq, hq, d), (b, sk, hkv, d),
                          device="cuda")
    for dst, src in ((q.x, q2.x), (k.x, k2.x), (v.x, v2.x)):
        dst.view(torch.uint8).copy_(src.view(torch.uint8))
    graph.replay()
    torch.cuda.synchronize()
    eager = ga.flash_attn_func(q2.x, k2.x, v2.x, **dict(descales(q, k, v), causal=causal))
    torch.cuda.synchronize()
    assert torch.equal(out, eager)


@needs_torch
@pytest.mark.skipif(not CUDA, reason="needs torch, a CUDA build and a CUDA device")
@pytest.mark.parametrize("page", [None, 16], ids=["dense", "page16"])
@pytest.mark.parametrize("sq", [1, 4], ids=["sq1", "sq4"])
def test_torch_cuda_fp8_kvcache_matches_reference(page, sq):
    """FP8 decode on the GPU (q dequantized into out_dtype, then the decode kernel over the E4M3
    cache in place), with 16-bit rows appended in the call: out is held to a relative L2 error,
    and a doubled v_scale doubles it."""
    b, sk, hq, hkv, d = 3, 320, 8, 2, 128
    rng = rng_for("fp8-kvcache-cuda", page, sq)
    q = Fp8("torch", (b, sq, hq, d), rng, device="cuda")
    cache = Cache("torch", (b, sk, hkv, d), rng, page, device="cuda")
    used = [sk, 1, 177]
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())  # the operands' copies to the GPU
    with torch.cuda.stream(stream):
        out = ga.flash_attn_with_kvcache(q.x, cache.kx, cache.vx,
                                         cache_seqlens=int32("torch", used).cuda(),
                                         block_table=cache.table, causal=True,
                                         **cache.scales(q))
        doubled = ga.flash_attn_with_kvcache(
            q.x, cache.kx, cache.vx, cache_seqlens=int32("torch", used).cuda(),
            block_table=cache.table, causal=True, out_dtype=torch.float16,
            **dict(cache.scales(q), v_scale=cache.v.descale(cache.v.scale * 2)))
    stream.synchronize()
    assert out.is_cuda and out.dtype == torch.bfloat16 and doubled.dtype == torch.float16
    want, _ = ref_of(q, cache, used, True)
    assert rel_l2(out.cpu(), want) < 0.06
    assert rel_l2(doubled.cpu(), 2 * want) < 0.06
    new_k, new_v = (make("torch", "bfloat16", (b, sq, hkv, d), rng).cuda() for _ in range(2))
    at = [0, 20, sk - sq]
    appended = ga.flash_attn_with_kvcache(q.x, cache.kx, cache.vx, k=new_k, v=new_v,
                                          cache_seqlens=int32("torch", at).cuda(),
                                          block_table=cache.table, causal=True,
                                          **cache.scales(q))
    torch.cuda.synchronize()
    want, _ = ref_of(q, cache, [n + sq for n in at], True)  # over the cache as appended
    assert rel_l2(appended.cpu(), want) < 0.06


def test_fp8_refuses_softcap():
    """Soft-capping runs on the 16-bit path only: an FP8 q with softcap is named as not supported,
    before anything runs."""
    q, k, v = operands("numpy", ("softcap",), (1, 9, 2, 64), (1, 9, 2, 64))
    with pytest.raises(NotImplementedError, match="softcap with an FP8 q"):
        ga.flash_attn_func(q.x, k.x, v.x, softcap=20.0, **descales(q, k, v))
