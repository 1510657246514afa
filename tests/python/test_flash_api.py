"""gpu_attention's flash-attn compatible API on the CPU backend, against a float64 numpy reference.

Run with the built package on the path:  PYTHONPATH=<build>/python python3 -m pytest tests/python
The import below is deliberately unguarded: a missing or broken build fails the suite.
"""

import math
import re
import sys

import numpy as np
import pytest

import gpu_attention as ga
from reference import (assert_close, causal_rule, cu_seqlens, e4m3_decode, int32, make,
                       needs_torch, ref_dense, ref_single, ref_varlen, rng_for, to64, torch,
                       visibility)

# ---- frameworks --------------------------------------------------------------------------------

# (framework, dtype name, tolerance on out, tolerance on lse)
CASES = [
    ("numpy", "float16", 2e-3, 1e-3),
    ("numpy", "float32", 2e-5, 2e-5),
    pytest.param("torch", "float16", 2e-3, 1e-3, marks=needs_torch),
    pytest.param("torch", "bfloat16", 1.6e-2, 1e-2, marks=needs_torch),
    pytest.param("torch", "float32", 2e-5, 2e-5, marks=needs_torch),
]


# ---- dense -------------------------------------------------------------------------------------

# (B, Sq, Sk, Hq, Hkv, D)
DENSE_SHAPES = [
    (2, 77, 77, 4, 4, 64),  # awkward length, MHA
    (1, 77, 130, 8, 2, 128),  # Sq < Sk, GQA 4:1
    (2, 130, 77, 4, 1, 64),  # Sq > Sk, MQA: causal leaves the first rows without keys
    (3, 1, 77, 8, 2, 64),  # decode-like single query
    (1, 77, 130, 4, 2, 256),  # head dim 256, Sq < Sk, GQA 2:1
]


@pytest.mark.parametrize("fw,dtype,tol,lse_tol", CASES)
@pytest.mark.parametrize("shape", DENSE_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_dense_matches_reference(fw, dtype, tol, lse_tol, shape, causal):
    b, sq, sk, hq, hkv, d = shape
    rng = rng_for("dense", fw, dtype, shape, causal)
    q = make(fw, dtype, (b, sq, hq, d), rng)
    k = make(fw, dtype, (b, sk, hkv, d), rng)
    v = make(fw, dtype, (b, sk, hkv, d), rng)
    out, lse, probs = ga.flash_attn_func(q, k, v, causal=causal, return_attn_probs=True)
    assert probs is None
    assert type(out) is type(q) and out.dtype == q.dtype
    assert lse.dtype == (np.float32 if fw == "numpy" else torch.float32)
    want_out, want_lse = ref_dense(to64(q), to64(k), to64(v), 1 / math.sqrt(d),
                                   causal_rule(causal))
    assert_close(out, want_out, tol, "out")
    assert_close(lse, want_lse, lse_tol, "lse")


@pytest.mark.parametrize("fw,dtype,tol,lse_tol", CASES)
def test_softmax_scale_and_plain_return(fw, dtype, tol, lse_tol):
    rng = rng_for("scale", fw, dtype)
    q = make(fw, dtype, (2, 33, 4, 64), rng)
    k = make(fw, dtype, (2, 50, 2, 64), rng)
    v = make(fw, dtype, (2, 50, 2, 64), rng)
    out = ga.flash_attn_func(q, k, v, softmax_scale=0.3, causal=True)
    assert not isinstance(out, tuple)
    want, _ = ref_dense(to64(q), to64(k), to64(v), 0.3, causal_rule(True))
    assert_close(out, want, tol, "out")


def test_deterministic_flag_and_repeatability():
    rng = rng_for("det")
    q, k, v = (make("numpy", "float16", (2, 77, 4, 64), rng) for _ in range(3))
    a = ga.flash_attn_func(q, k, v, causal=True, deterministic=True)
    b = ga.flash_attn_func(q, k, v, causal=True, deterministic=True)
    assert np.array_equal(a, b)


# ---- varlen ------------------------------------------------------------------------------------


@pytest.mark.parametrize("fw,dtype,tol,lse_tol", CASES)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_varlen_matches_reference(fw, dtype, tol, lse_tol, causal):
    lens_q = [1, 77, 33, 128, 5]
    lens_k = [9, 77, 1, 100, 5]  # sequence 2 has Sq > Sk: causal rows without keys
    cu_q, cu_k = cu_seqlens(lens_q), cu_seqlens(lens_k)
    hq, hkv, d = 8, 2, 64
    rng = rng_for("varlen", fw, dtype, causal)
    q = make(fw, dtype, (cu_q[-1], hq, d), rng)
    k = make(fw, dtype, (cu_k[-1], hkv, d), rng)
    v = make(fw, dtype, (cu_k[-1], hkv, d), rng)
    out, lse, probs = ga.flash_attn_varlen_func(
        q, k, v, int32(fw, cu_q), int32(fw, cu_k), max(lens_q), max(lens_k), causal=causal,
        return_attn_probs=True)
    assert probs is None
    assert tuple(lse.shape) == (hq, cu_q[-1])
    want_out, want_lse = ref_varlen(to64(q), to64(k), to64(v), cu_q, cu_k, 1 / math.sqrt(d),
                                    causal_rule(causal))
    assert_close(out, want_out, tol, "out")
    assert_close(lse, want_lse, lse_tol, "lse")
    plain = ga.flash_attn_varlen_func(q, k, v, int32(fw, cu_q), int32(fw, cu_k), max(lens_q),
                                      max(lens_k), causal=causal)
    assert np.array_equal(to64(plain), to64(out))


def test_varlen_accepts_numpy_integer_max_seqlen():
    rng = rng_for("npint")
    q, k, v = (make("numpy", "float16", (10, 2, 64), rng) for _ in range(3))
    cu = np.array([0, 4, 10], dtype=np.int32)
    out = ga.flash_attn_varlen_func(q, k, v, cu, cu, np.int64(6), np.int32(6))
    want, _ = ref_varlen(to64(q), to64(k), to64(v), cu, cu, 1 / 8, causal_rule(False))
    assert_close(out, want, 2e-3, "out")


# ---- packed and kvcache entry points ------------------------------------------------------------


def test_packed_variants_equal_unpacked():
    rng = rng_for("packed")
    qkv = make("numpy", "float16", (2, 40, 3, 4, 64), rng)
    want = ga.flash_attn_func(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], causal=True)
    assert np.array_equal(ga.flash_attn_qkvpacked_func(qkv, causal=True), want)
    kv = np.ascontiguousarray(qkv[:, :, 1:])
    assert np.array_equal(ga.flash_attn_kvpacked_func(qkv[:, :, 0], kv, causal=True), want)

    cu = np.array([0, 40, 80], dtype=np.int32)
    flat = qkv.reshape(80, 3, 4, 64)
    want_flat = want.reshape(80, 4, 64)
    got = ga.flash_attn_varlen_qkvpacked_func(flat, cu, 40, causal=True)
    assert np.array_equal(got, want_flat)
    got = ga.flash_attn_varlen_kvpacked_func(flat[:, 0], np.ascontiguousarray(flat[:, 1:]), cu, cu,
                                             40, 40, causal=True)
    assert np.array_equal(got, want_flat)


@pytest.mark.parametrize("causal", [False, True])
def test_kvcache_whole_cache_equals_flash_attn_func(causal):
    rng = rng_for("kvcache", causal)
    q = make("numpy", "float16", (3, 2, 8, 128), rng)
    kc = make("numpy", "float16", (3, 77, 2, 128), rng)
    vc = make("numpy", "float16", (3, 77, 2, 128), rng)
    out = ga.flash_attn_with_kvcache(q, kc, vc, causal=causal, num_splits=4)
    assert not isinstance(out, tuple)
    out2, lse = ga.flash_attn_with_kvcache(q, kc, vc, causal=causal, return_softmax_lse=True)
    ref_out, ref_lse, _ = ga.flash_attn_func(q, kc, vc, causal=causal, return_attn_probs=True)
    assert np.array_equal(out, ref_out) and np.array_equal(out2, ref_out)
    assert np.array_equal(lse, ref_lse)
    want_out, want_lse = ref_dense(to64(q), to64(kc), to64(vc), 1 / math.sqrt(128),
                                   causal_rule(causal))
    assert_close(out, want_out, 2e-3, "out")
    assert_close(lse, want_lse, 1e-3, "lse")


@pytest.mark.parametrize("causal", [False, True])
def test_kvcache_seqlens_attend_to_the_first_keys(causal):
    """cache_seqlens (an int32 array, or one int): sequence b attends to its first
    cache_seqlens[b] keys, as flash_attn_func on the cut cache does (0 keys: out 0, lse -inf)."""
    rng = rng_for("kvcache-seqlens", causal)
    q = make("numpy", "float16", (3, 2, 8, 64), rng)
    kc = make("numpy", "float16", (3, 50, 2, 64), rng)
    vc = make("numpy", "float16", (3, 50, 2, 64), rng)
    used = np.array([50, 7, 0], dtype=np.int32)
    out, lse = ga.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=used, causal=causal,
                                         return_softmax_lse=True)
    for b, n in enumerate(used):
        if n == 0:
            assert np.all(out[b] == 0) and np.all(np.isneginf(lse[b]))
            continue
        want, want_lse, _ = ga.flash_attn_func(q[b:b + 1], kc[b:b + 1, :n], vc[b:b + 1, :n],
                                               causal=causal, return_attn_probs=True)
        assert np.array_equal(out[b:b + 1], want), b
        assert np.array_equal(lse[b:b + 1], want_lse), b
    same = ga.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=7, causal=causal)
    want = ga.flash_attn_func(q, kc[:, :7], vc[:, :7], causal=causal)
    assert np.array_equal(same, want)
    with pytest.raises(ValueError, match=r"cache_seqlens\[0\] is 51"):
        ga.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=51)


@pytest.mark.parametrize("page", [1, 5, 16, 64])
@pytest.mark.parametrize("causal", [False, True])
def test_kvcache_block_table_reads_a_paged_cache(page, causal):
    """block_table: k_cache/v_cache are a pool of pages in any order, with pages no sequence
    uses; the call equals the one over the dense cache the pages were cut from, bit for bit, with
    and without cache_seqlens. Entries past a sequence's used pages are never read."""
    rng = rng_for("kvcache-paged", page, causal)
    B, Sk, Hkv, D = 3, 64, 2, 64
    q = make("numpy", "float16", (B, 2, 8, D), rng)
    kc = make("numpy", "float16", (B, Sk, Hkv, D), rng)
    vc = make("numpy", "float16", (B, Sk, Hkv, D), rng)
    per_seq = -(-Sk // page)
    pages = B * per_seq + 3
    order = rng.permutation(pages)
    kp = make("numpy", "float16", (pages, page, Hkv, D), rng)  # unused pages hold values too
    vp = make("numpy", "float16", (pages, page, Hkv, D), rng)
    table = order[:B * per_seq].reshape(B, per_seq).astype(np.int32)
    for b in range(B):
        for i in range(per_seq):
            n = min(page, Sk - i * page)
            kp[table[b, i], :n] = kc[b, i * page:i * page + n]
            vp[table[b, i], :n] = vc[b, i * page:i * page + n]
    used = np.array([Sk, 9, 0], dtype=np.int32)
    got, lse = ga.flash_attn_with_kvcache(q, kp, vp, cache_seqlens=used, block_table=table,
                                         causal=causal, return_softmax_lse=True)
    want, want_lse = ga.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=used, causal=causal,
                                               return_softmax_lse=True)
    assert np.array_equal(got, want) and np.array_equal(lse, want_lse)
    unchecked = ga.flash_attn_with_kvcache(q, kp, vp, cache_seqlens=used, block_table=table,
                                           causal=causal, check_indices=False)
    assert np.array_equal(unchecked, want)
    if Sk % page == 0:  # the whole logical cache is the dense one
        got = ga.flash_attn_with_kvcache(q, kp, vp, block_table=table, causal=causal)
        assert np.array_equal(got, ga.flash_attn_with_kvcache(q, kc, vc, causal=causal))
    padded = table.copy()
    padded[1, -(-9 // page):] = -1  # sequence 1 uses 9 keys
    padded[2, :] = 12345            # sequence 2 uses none
    got = ga.flash_attn_with_kvcache(q, kp, vp, cache_seqlens=used, block_table=padded,
                                     causal=causal)
    assert np.array_equal(got, want)
    padded[1, 0] = pages
    with pytest.raises(ValueError, match=rf"block_table\[1\]\[0\] is {pages}"):
        ga.flash_attn_with_kvcache(q, kp, vp, cache_seqlens=used, block_table=padded)


@pytest.mark.parametrize("page", [None, 1, 16])
@pytest.mark.parametrize("causal", [False, True])
def test_kvcache_appends_k_and_v(page, causal):
    """k/v with cache_seqlens: the new rows are written into the cache in place at rows
    cache_seqlens[b].. (through block_table for a paged cache) and attended, as flash-attn does:
    the result equals the call on the updated cache with cache_seqlens + seqlen_new."""
    rng = rng_for("kvcache-append", page, causal)
    B, Sk, Hkv, D, sn = 3, 48, 2, 64, 2
    q = make("numpy", "float16", (B, sn, 8, D), rng)
    kc = make("numpy", "float16", (B, Sk, Hkv, D), rng)
    vc = make("numpy", "float16", (B, Sk, Hkv, D), rng)
    kn = make("numpy", "float16", (B, sn, Hkv, D), rng)
    vn = make("numpy", "float16", (B, sn, Hkv, D), rng)
    used = np.array([0, 20, Sk - sn], dtype=np.int32)
    want_k, want_v = kc.copy(), vc.copy()
    for b in range(B):
        want_k[b, used[b]:used[b] + sn] = kn[b]
        want_v[b, used[b]:used[b] + sn] = vn[b]
    want = ga.flash_attn_with_kvcache(q, want_k, want_v, cache_seqlens=used + sn, causal=causal)
    if page is None:
        got = ga.flash_attn_with_kvcache(q, kc, vc, k=kn, v=vn, cache_seqlens=used, causal=causal)
        assert np.array_equal(kc, want_k) and np.array_equal(vc, want_v)
    else:
        per_seq = Sk // page
        table = rng.permutation(B * per_seq).reshape(B, per_seq).astype(np.int32)
        kp = np.empty((B * per_seq, page, Hkv, D), np.float16)
        vp = np.empty_like(kp)
        for b in range(B):
            for i in range(per_seq):
                kp[table[b, i]] = kc[b, i * page:(i + 1) * page]
                vp[table[b, i]] = vc[b, i * page:(i + 1) * page]
        got = ga.flash_attn_with_kvcache(q, kp, vp, k=kn, v=vn, cache_seqlens=used,
                                         block_table=table, causal=causal)
        for b in range(B):
            for i in range(per_seq):
                assert np.array_equal(kp[table[b, i]], want_k[b, i * page:(i + 1) * page])
                assert np.array_equal(vp[table[b, i]], want_v[b, i * page:(i + 1) * page])
    assert np.array_equal(got, want)
    assert np.array_equal(used, [0, 20, Sk - sn])  # cache_seqlens is not updated


def _fuzz_settings(default_cases):
    """GPUATTN_FUZZ_SEED / GPUATTN_FUZZ_CASES as the C++ suites read them (README)."""
    import os

    def number(name, unset, hi):
        text = os.environ.get(name)
        if text is None:
            return unset
        if not text.isdigit() or int(text) > hi:
            raise ValueError(f"{name}='{text}' is not a whole number in [0, {hi}]")
        return int(text)

    return number("GPUATTN_FUZZ_SEED", 20261130, 2**64 - 1), number("GPUATTN_FUZZ_CASES",
                                                                     default_cases, 100000)


def _random_view(rng, x):
    """x (a fresh array) as the same values in another memory layout: contiguous, every dimension
    but the last reversed in memory (a transposed view), or a slice of a wider buffer (strides
    with gaps). The last dimension stays contiguous."""
    kind = int(rng.integers(0, 3))
    if kind == 1:
        axes = tuple(reversed(range(x.ndim - 1))) + (x.ndim - 1,)
        return np.ascontiguousarray(x.transpose(axes)).transpose(axes)
    if kind == 2:
        wide = np.zeros(x.shape[:-2] + (2 * x.shape[-2] + 1, x.shape[-1]), x.dtype)
        wide[..., 1::2, :] = x
        return wide[..., 1::2, :]
    return x


def test_random_calls_match_reference():
    """Random flash_attn_func and flash_attn_varlen_func calls on numpy arrays (float16 / float32,
    every head dim, GQA and MQA, Sq != Sk, lengths at tile edges and of 0 and 1 in varlen batches,
    causal, windows, a scale, transposed and gapped views) against the float64 reference.
    GPUATTN_FUZZ_SEED / GPUATTN_FUZZ_CASES pick another set (README)."""
    seed, cases = _fuzz_settings(80)
    rng = np.random.default_rng(seed)

    def length(hi):
        return int(rng.choice([1, 2, 63, 64, 65, 127, 128, 129, int(rng.integers(1, hi + 1))]))

    for case in range(cases):
        dt = str(rng.choice(["float16", "float32"]))
        hkv = int(rng.choice([1, 2, 3]))
        hq, D = hkv * int(rng.choice([1, 2, 4])), int(rng.choice([64, 128, 256]))
        causal = bool(rng.random() < 0.5)
        window = (-1, -1) if rng.random() < 0.7 else \
            (int(rng.integers(-1, 80)), int(rng.choice([-1, 0, int(rng.integers(0, 40))])))
        scale = None if rng.random() < 0.8 else float(rng.uniform(0.02, 0.3))
        sc = scale if scale is not None else 1 / math.sqrt(D)
        varlen = bool(rng.random() < 0.4)
        if varlen:
            n = int(rng.integers(1, 5))
            lq = [0 if rng.random() < 0.15 else length(150) for _ in range(n)]
            lk = [0 if rng.random() < 0.15 else length(200) for _ in range(n)]
            lq[0], lk[0] = max(lq[0], 1), max(lk[0], 1)
            cq, ck = cu_seqlens(lq), cu_seqlens(lk)
            shapes = [(cq[-1], hq, D), (ck[-1], hkv, D), (ck[-1], hkv, D)]
        else:
            B, sq = int(rng.integers(1, 4)), length(150)
            sk = sq if rng.random() < 0.4 else length(200)
            shapes = [(B, sq, hq, D), (B, sk, hkv, D), (B, sk, hkv, D)]
        q, k, v = (_random_view(rng, make("numpy", dt, sh, rng)) for sh in shapes)
        what = (f"case {case} (replay: GPUATTN_FUZZ_SEED={seed} GPUATTN_FUZZ_CASES={case + 1}): "
                f"{dt} {'varlen ' + str(lq) + '/' + str(lk) if varlen else shapes[0]} Hkv{hkv} "
                f"causal {causal} window {window} scale {scale} strides "
                f"{[x.strides for x in (q, k, v)]}")
        args = dict(causal=causal, window_size=window, softmax_scale=scale,
                    return_attn_probs=True)
        if varlen:
            out, lse, _ = ga.flash_attn_varlen_func(q, k, v, cq, ck, max(lq), max(lk), **args)
            seqs = [(slice(cq[b], cq[b + 1]), slice(ck[b], ck[b + 1])) for b in range(len(lq))]
            pick = [(q[a], k[c], v[c], out[a], lse[:, a]) for a, c in seqs]
        else:
            out, lse, _ = ga.flash_attn_func(q, k, v, **args)
            pick = [(q[b], k[b], v[b], out[b], lse[b]) for b in range(q.shape[0])]
        tol, lse_tol = (2e-3, 1e-3) if dt == "float16" else (2e-5, 2e-5)
        for i, (qb, kb, vb, ob, lb) in enumerate(pick):
            if qb.shape[0] == 0:
                continue
            if kb.shape[0] == 0:  # no key: out 0, lse -inf (ref_single reduces over the keys)
                o, l = np.zeros(qb.shape), np.full((hq, qb.shape[0]), -np.inf)
            else:
                vis = visibility(qb.shape[0], kb.shape[0], causal, window)
                o, l = ref_single(qb, kb, vb, sc, vis)
            assert_close(ob, o, tol, what + f": out of sequence {i}")
            assert_close(lb, l, lse_tol, what + f": lse of sequence {i}")


def test_kvcache_random_calls():
    """Random flash_attn_with_kvcache calls on the CPU backend (float16 / float32, every head dim,
    GQA and MQA, 1-6 query rows, a dense cache or pages of 1-64 keys in a shuffled pool, 16/32-bit
    or int8 / E4M3 caches with per-head or single scales, the whole cache or cache_seqlens (an
    array or an int), 0-6 rows appended, causal, windows, a scale). The cache keeps every row it
    had but the appended ones, which land at cache_seqlens[b].. (quantized: within half a step of
    x / scale, or saturated); out and lse match the float64 reference over the cache as it ends up,
    its first cache_seqlens + seqlen_new keys. GPUATTN_FUZZ_SEED / GPUATTN_FUZZ_CASES pick another
    set (README)."""
    seed, cases = _fuzz_settings(60)
    rng = np.random.default_rng(seed)
    for case in range(cases):
        dt = str(rng.choice(["float16", "float32"]))
        B, hkv = int(rng.integers(1, 4)), int(rng.choice([1, 2, 3]))
        hq, D = hkv * int(rng.choice([1, 2, 4])), int(rng.choice([64, 128, 256]))
        sq, sn = int(rng.integers(1, 7)), int(rng.choice([0, 0, 1, 2, 3, 6]))
        page = None if rng.random() < 0.5 else int(rng.choice([1, 2, 5, 16, 64]))
        quant = None if rng.random() < 0.7 else str(rng.choice(["int8", "e4m3"]))
        cap = int(rng.integers(max(sn, 1), 200))
        if page:
            cap = -(-cap // page) * page
        whole = sn == 0 and rng.random() < 0.3
        as_int = not whole and rng.random() < 0.2
        used = np.full(B, int(rng.integers(0, cap - sn + 1)), np.int32) if as_int else \
            rng.integers(0, cap - sn + 1, B).astype(np.int32)
        causal = bool(rng.random() < 0.5)
        window = (-1, -1) if rng.random() < 0.7 else \
            (int(rng.integers(-1, 60)), int(rng.choice([-1, 0, int(rng.integers(0, 30))])))
        scale = None if rng.random() < 0.8 else float(rng.uniform(0.02, 0.3))
        what = (f"case {case} (replay: GPUATTN_FUZZ_SEED={seed} GPUATTN_FUZZ_CASES={case + 1}): "
                f"{dt} B{B} Hq{hq} Hkv{hkv} D{D} sq{sq} new{sn} cap{cap} page{page} cache "
                f"{quant or dt} used {'whole' if whole else used.tolist()}"
                f"{' (int)' if as_int else ''} causal {causal} window {window} scale {scale}")
        q = make("numpy", dt, (B, sq, hq, D), rng)
        shape = (B, cap, hkv, D)
        if quant == "int8":
            kc, vc = (rng.integers(-127, 128, shape).astype(np.int8) for _ in range(2))
            decode = lambda x: np.asarray(x, np.float64)  # noqa: E731
        elif quant == "e4m3":
            kc, vc = (rng.integers(0, 0x7F, shape).astype(np.uint8) |
                      (rng.integers(0, 2, shape) << 7).astype(np.uint8) for _ in range(2))
            decode = e4m3_decode
        else:
            kc, vc = make("numpy", dt, shape, rng), make("numpy", dt, shape, rng)
            decode = lambda x: np.asarray(x, np.float64)  # noqa: E731
        args = dict(causal=causal, window_size=window, softmax_scale=scale,
                    return_softmax_lse=True)
        ks = vs = np.ones(hkv)
        if quant:
            unit = 1 / 40 if quant == "int8" else 1 / 16
            if rng.random() < 0.3:  # one scale for every head, as a Python float
                ks, vs = np.full(hkv, unit * 0.9), np.full(hkv, unit * 1.1)
                args.update(k_scale=float(ks[0]), v_scale=float(vs[0]))
            else:
                ks = (unit * rng.uniform(0.5, 1.5, hkv)).astype(np.float32)
                vs = (unit * rng.uniform(0.5, 1.5, hkv)).astype(np.float32)
                args.update(k_scale=ks, v_scale=vs)
            ks, vs = np.asarray(ks, np.float32), np.asarray(vs, np.float32)
        kn = make("numpy", dt, (B, sn, hkv, D), rng) if sn else None
        vn = make("numpy", dt, (B, sn, hkv, D), rng) if sn else None
        if not whole:
            args["cache_seqlens"] = int(used[0]) if as_int else used
        if sn:
            args.update(k=kn, v=vn)
        if page:
            per_seq = cap // page
            table = rng.permutation(B * per_seq + 2)[:B * per_seq].reshape(B, per_seq)
            table = table.astype(np.int32)
            kp = np.empty((B * per_seq + 2, page, hkv, D), kc.dtype)  # 2 pages unused
            vp = np.empty_like(kp)
            kp[...], vp[...] = kc.reshape(-1, hkv, D)[0], vc.reshape(-1, hkv, D)[0]
            for b in range(B):
                for i in range(per_seq):
                    kp[table[b, i]] = kc[b, i * page:(i + 1) * page]
                    vp[table[b, i]] = vc[b, i * page:(i + 1) * page]
            unused = [p for p in range(B * per_seq + 2) if p not in set(table.ravel())]
            kp_unused, vp_unused = kp[unused].copy(), vp[unused].copy()
            out, lse = ga.flash_attn_with_kvcache(q, kp, vp, block_table=table, **args)
            assert np.array_equal(kp[unused], kp_unused), what + ": an unused page changed"
            assert np.array_equal(vp[unused], vp_unused), what + ": an unused page changed"
            got_k = np.stack([np.concatenate([kp[t] for t in table[b]]) for b in range(B)])
            got_v = np.stack([np.concatenate([vp[t] for t in table[b]]) for b in range(B)])
        else:
            got_k, got_v = kc.copy(), vc.copy()
            out, lse = ga.flash_attn_with_kvcache(q, got_k, got_v, **args)
        for b in range(B):
            new = np.zeros(cap, bool)
            if sn:
                new[used[b]:used[b] + sn] = True
            for got, old, rows, sc_h in ((got_k, kc, kn, ks), (got_v, vc, vn, vs)):
                assert np.array_equal(got[b, ~new], old[b, ~new]), what + f": old rows of {b}"
                if not sn:
                    continue
                if not quant:
                    assert np.array_equal(got[b, new], rows[b]), what + f": new rows of {b}"
                    continue
                x = rows[b].astype(np.float64) / sc_h[None, :, None]
                stored = decode(got[b, new])
                if quant == "int8":
                    want = np.clip(x, -127, 127)
                    # x / scale in float32 (a few ulps of 127: ~1e-5) may round a near-tie
                    # either way
                    ok = np.abs(stored - want) <= 0.5 + 1e-4
                else:
                    want = np.clip(x, -448, 448)
                    half = np.maximum(np.abs(want) / 16, 2.0 ** -10)  # half a step of 3 bits
                    ok = np.abs(stored - want) <= half * (1 + 1e-5)
                assert ok.all(), what + f": new rows of {b} not x / scale rounded"
        sc = scale if scale is not None else 1 / math.sqrt(D)
        tol = 2e-3 if dt == "float16" else 2e-5
        for b in range(B):
            keys = cap if whole else int(used[b]) + sn
            if keys == 0:  # no key: out 0, lse -inf (ref_single reduces over the keys)
                o, l = np.zeros((sq, hq, D)), np.full((hq, sq), -np.inf)
            else:
                kd = decode(got_k[b, :keys]) * (ks[None, :, None] if quant else 1)
                vd = decode(got_v[b, :keys]) * (vs[None, :, None] if quant else 1)
                o, l = ref_single(q[b], kd, vd, sc, visibility(sq, keys, causal, window))
            assert_close(out[b], o, tol if not quant else 3e-3, what + f": out of sequence {b}")
            assert_close(lse[b], l, 1e-3 if dt == "float16" or quant else 2e-5,
                         what + f": lse of {b}")


def test_kvcache_append_errors():
    rng = rng_for("kvcache-append-bad")
    q = make("numpy", "float16", (2, 1, 4, 64), rng)
    kc = make("numpy", "float16", (2, 16, 4, 64), rng)
    kn = make("numpy", "float16", (2, 1, 4, 64), rng)
    before = kc.copy()
    with pytest.raises(ValueError, match="pass both or neither"):
        ga.flash_attn_with_kvcache(q, kc, kc.copy(), k=kn)
    with pytest.raises(ValueError, match="needs cache_seqlens"):
        ga.flash_attn_with_kvcache(q, kc, kc.copy(), k=kn, v=kn)
    with pytest.raises(ValueError, match=r"cache_seqlens\[1\] is 16"):
        ga.flash_attn_with_kvcache(q, kc, kc.copy(), k=kn, v=kn,
                                   cache_seqlens=np.array([3, 16], np.int32))
    assert np.array_equal(kc, before)


def test_kvcache_names_and_ranges():
    """flash_attn_with_kvcache's errors name k_cache / v_cache (its k and v are the new keys);
    new keys that lie in the cache are refused (they would be overwritten as they are read);
    numbers past int32 / float32 are named as passed; causal takes numpy's bool."""
    rng = rng_for("kvcache-names")
    q = make("numpy", "float32", (1, 1, 1, 64), rng)
    kc = make("numpy", "float32", (1, 8, 1, 64), rng)
    vc = make("numpy", "float32", (1, 8, 1, 64), rng)
    before_k, before_v = kc.copy(), vc.copy()
    with pytest.raises(TypeError, match="k_cache must be"):
        ga.flash_attn_with_kvcache(q, None, vc, cache_seqlens=1)
    with pytest.raises(ValueError, match="k_cache dtype float16 differs from q dtype float32"):
        ga.flash_attn_with_kvcache(q, kc.astype(np.float16), vc, cache_seqlens=1)
    with pytest.raises(ValueError, match="k's memory overlaps k_cache's"):  # the caller's names
        ga.flash_attn_with_kvcache(q, kc, vc, k=kc[:, 2:5], v=vc[:, 2:5].copy(),
                                   cache_seqlens=np.array([3], np.int32))
    assert np.array_equal(kc, before_k) and np.array_equal(vc, before_v)
    with pytest.raises(ValueError, match=r"cache_seqlens=1099511627776 must be in \[0, "):
        ga.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=2**40)
    with pytest.raises(ValueError, match=r"softmax_scale=1e\+39 is out of float32's range"):
        ga.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=1, softmax_scale=1e39)
    with pytest.raises(ValueError, match=r"softmax_scale=1e-46 is out of float32's range"):
        ga.flash_attn_func(q, kc, vc, softmax_scale=1e-46)
    with pytest.raises(ValueError, match=r"softmax_scale=10+ is out of float32's range"):
        ga.flash_attn_func(q, kc, vc, softmax_scale=10**400)
    with pytest.raises(ValueError, match=r"q dtype >f4 is not in the machine's byte order"):
        ga.flash_attn_func(q.astype(">f4"), kc, vc)
    frozen = kc.copy()
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="k_cache is read-only"):
        ga.flash_attn_with_kvcache(q, frozen, vc, k=q, v=q, cache_seqlens=np.array([3], np.int32))
    out = ga.flash_attn_func(q, kc, vc, causal=np.True_)
    assert np.array_equal(out, ga.flash_attn_func(q, kc, vc, causal=True))
    with pytest.raises(TypeError, match="causal must be a bool, got builtins.str"):
        ga.flash_attn_func(q, kc, vc, causal="yes")


def test_float32_range_refuses_only_values_that_become_0_or_inf():
    """A float argument is refused only when float32 rounds it to 0 (a nonzero value) or to inf (a
    finite value): the smallest denormal (1e-45 -> 1.4e-45) and float32's largest (3.4028235e38)
    are taken; half the smallest denormal and float32's largest plus half a step are refused."""
    from gpu_attention.flash_attn_interface import _float32_arg
    for value in (1e-45, -1e-45, 8e-46, 3.4028235e38, -3.4028235e38, 3.4028235677973362e38,
                  np.float32(1e-45), 0.0, -0.0):
        assert _float32_arg(value, "x") == float(value)
    for value, becomes in ((7.006492321624085e-46, "0"), (7e-46, "0"), (-7e-46, "0"),
                           (3.4028235677973366e38, "inf"), (-3.4028236e38, "inf"),
                           (np.float64(1e39), "inf")):
        with pytest.raises(ValueError, match=re.escape(f"x={value!r} is out of float32's range "
                                                       f"(it would become {becomes})")):
            _float32_arg(value, "x")
    rng = rng_for("float32-range")
    q = make("numpy", "float32", (1, 3, 1, 64), rng)
    out = ga.flash_attn_func(q, q, q, softmax_scale=1e-45)  # every score ~0: the mean of v
    assert_close(out, np.broadcast_to(to64(q).mean(axis=1, keepdims=True), q.shape), 2e-5, "out")
    with pytest.raises(ValueError, match="softmax_scale 3.40282347e.38 must be positive, finite "
                                         "and at most"):  # the library's own range check
        ga.flash_attn_func(q, q, q, softmax_scale=3.4028235e38)


ON_DEVICES = [pytest.param(("numpy", "cpu"), id="numpy"),
              pytest.param(("torch", "cpu"), id="torch-cpu", marks=needs_torch),
              pytest.param(("torch", "cuda"), id="torch-cuda", marks=needs_torch)]


@pytest.mark.parametrize("where", ON_DEVICES)
@pytest.mark.parametrize("paged", [False, True])
def test_kvcache_append_refused_calls_write_nothing(where, paged):
    """With k/v appended, a call the attention refuses (q against the cache, the window) raises
    before anything is written: both caches keep every byte. Torch tensors reach the library
    through the fast path's check of q, then the general path's (on CUDA too, where there is a
    GPU); numpy arrays through the general path's. A good call with the same caches then appends
    and attends."""
    fw, device = where
    if device == "cuda" and not (torch.cuda.is_available() and ga.cuda_available()):
        pytest.skip("no CUDA device")
    rng = rng_for("kvcache-append-refused", fw, device, paged)
    b, sk, hq, hkv, d = 2, 32, 4, 2, 64

    def arr(shape, dtype="float16"):
        x = make(fw, dtype, shape, rng)
        return x.to(device) if fw == "torch" else x

    if paged:  # 4 pages of 16 keys, sequence 0 on pages 3 and 1, sequence 1 on 0 and 2
        kc, vc = arr((4, 16, hkv, d)), arr((4, 16, hkv, d))
        table = np.array([[3, 1], [0, 2]], np.int32)
    else:
        kc, vc = arr((b, sk, hkv, d)), arr((b, sk, hkv, d))
        table = None
    used = np.array([5, 20], np.int32)
    if fw == "torch":
        used = torch.from_numpy(used).to(device)
        table = None if table is None else torch.from_numpy(table).to(device)
    kept = [x.clone() if fw == "torch" else x.copy() for x in (kc, vc)]
    new_k, new_v = arr((b, 2, hkv, d)), arr((b, 2, hkv, d))
    good = arr((b, 1, hq, d))
    bad_q = {
        "head dim 32": (arr((b, 1, hq, 32)), {}, "head dim 32 is not supported"),
        "batch 3": (arr((3, 1, hq, d)), {}, "q batch 3|batch = 3"),
        "3 heads over 2": (arr((b, 1, 3, d)), {}, "q heads 3 are not a multiple of kv heads 2"),
        "float32 q": (arr((b, 1, hq, d), "float32"), {}, "differs from q dtype float32"),
        "rank 3": (arr((b, hq, d)), {}, "q has rank 3"),
        "window (-5, 0)": (good, dict(window_size=(-5, 0)), "the left window -5 is invalid"),
        "softmax_scale -1": (good, dict(softmax_scale=-1.0), "softmax_scale"),
    }

    def untouched(caches, before, name):
        for cache, was in zip(caches, before):
            same = torch.equal(cache, was) if fw == "torch" else np.array_equal(cache, was)
            assert same, f"{name}: the cache was written by a refused call"

    for name, (q, extra, match) in bad_q.items():
        with pytest.raises((ValueError, NotImplementedError), match=match):
            ga.flash_attn_with_kvcache(q, kc, vc, k=new_k, v=new_v, cache_seqlens=used,
                                       block_table=table, **extra)
        untouched((kc, vc), kept, name)
    # q, the cache and k all of head dim 32, which the append takes and the attention does not
    kc32, vc32 = arr(kc.shape[:3] + (32,)), arr(vc.shape[:3] + (32,))
    kept32 = [x.clone() if fw == "torch" else x.copy() for x in (kc32, vc32)]
    with pytest.raises(NotImplementedError, match="head dim 32 is not supported"):
        ga.flash_attn_with_kvcache(arr((b, 1, hq, 32)), kc32, vc32, k=arr((b, 2, hkv, 32)),
                                   v=arr((b, 2, hkv, 32)), cache_seqlens=used, block_table=table)
    untouched((kc32, vc32), kept32, "head dim 32 throughout")
    # a bad table entry of a page before cache_seqlens, which the append does not read: refused
    # first on the CPU (on CUDA the attention reads the table's values after the append)
    if paged and device == "cpu":
        bad_table = table.clone() if fw == "torch" else table.copy()
        bad_table[1, 0] = 99
        with pytest.raises(ValueError, match=r"block_table\[1\]\[0\] is 99"):
            ga.flash_attn_with_kvcache(good, kc, vc, k=new_k, v=new_v, cache_seqlens=used,
                                       block_table=bad_table)
        untouched((kc, vc), kept, "a bad page before cache_seqlens")
    out = ga.flash_attn_with_kvcache(good, kc, vc, k=new_k, v=new_v, cache_seqlens=used,
                                     block_table=table)
    assert out.shape == good.shape
    rows = kc[3, 5:7] if paged else kc[0, 5:7]  # sequence 0's rows 5 and 6
    assert (torch.equal(rows, new_k[0]) if fw == "torch" else np.array_equal(rows, new_k[0]))


def test_kvcache_append_allocates_out_once(monkeypatch):
    """An appending call on the general path checks the attention (check_only) before the append
    and then runs it: out and lse are allocated once, by the check, and the run writes them. The
    result matches the same call over the appended cache without k/v."""
    from gpu_attention import flash_attn_interface as fai

    rng = rng_for("kvcache-allocates-once")
    q = make("numpy", "float16", (2, 1, 4, 64), rng)
    kc = make("numpy", "float16", (2, 16, 2, 64), rng)
    vc = make("numpy", "float16", (2, 16, 2, 64), rng)
    kn = make("numpy", "float16", (2, 3, 2, 64), rng)
    vn = make("numpy", "float16", (2, 3, 2, 64), rng)
    used = np.array([4, 11], np.int32)
    made = []
    empty = fai._empty
    monkeypatch.setattr(fai, "_empty", lambda *a, **kw: made.append(a[2]) or empty(*a, **kw))
    out, lse = ga.flash_attn_with_kvcache(q, kc, vc, k=kn, v=vn, cache_seqlens=used, causal=True,
                                          return_softmax_lse=True)
    assert made == [(2, 1, 4, 64), (2, 4, 1)], made
    monkeypatch.setattr(fai, "_empty", empty)
    want, want_lse = ga.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=used + 3, causal=True,
                                                return_softmax_lse=True)
    assert np.array_equal(out, want) and np.array_equal(lse, want_lse)


def test_kvcache_pdl():
    """pdl (programmatic dependent launch of a CUDA decode kernel) leaves the result alone, here on
    the CPU, which ignores it; anything but a bool is a TypeError naming it, raised before k/v are
    appended."""
    rng = rng_for("kvcache-pdl")
    q = make("numpy", "float16", (2, 1, 4, 64), rng)
    kc = make("numpy", "float16", (2, 16, 4, 64), rng)
    vc = make("numpy", "float16", (2, 16, 4, 64), rng)
    kn = make("numpy", "float16", (2, 1, 4, 64), rng)
    used = np.array([3, 15], np.int32)
    want = ga.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=used, causal=True)
    got = ga.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=used, causal=True, pdl=True)
    assert np.array_equal(got, want)
    before = kc.copy()
    for bad in (1, "yes", None):
        with pytest.raises(TypeError, match="pdl must be True or False"):
            ga.flash_attn_with_kvcache(q, kc, vc, k=kn, v=kn, cache_seqlens=used, pdl=bad)
    assert np.array_equal(kc, before)


def test_kvcache_unsupported_options():
    rng = rng_for("kvcache-opts")
    q = make("numpy", "float16", (2, 1, 4, 64), rng)
    kc = make("numpy", "float16", (2, 16, 4, 64), rng)
    with pytest.raises(ValueError, match="softcap -30 must be finite and >= 0"):
        ga.flash_attn_with_kvcache(q, kc, kc, softcap=-30.0)
    # ALiBi runs (test_alibi.py); slopes of another dtype than float32 are named.
    with pytest.raises(ValueError, match="alibi_slopes has dtype float64, expected float32"):
        ga.flash_attn_with_kvcache(q, kc, kc, alibi_slopes=np.ones(4, np.float64))
    with pytest.raises(ValueError, match="window_size"):
        ga.flash_attn_with_kvcache(q, kc, kc, window_size=(-2, 0))
    with pytest.raises(ValueError, match="num_splits"):
        ga.flash_attn_with_kvcache(q, kc, kc, num_splits=-1)


# ---- window_size: exact reductions (real windows: test_masks.py) ----------------------------------


def test_window_sizes_that_are_no_window():
    rng = rng_for("window")
    q = make("numpy", "float16", (1, 20, 2, 64), rng)
    k = make("numpy", "float16", (1, 30, 2, 64), rng)
    v = make("numpy", "float16", (1, 30, 2, 64), rng)
    full = ga.flash_attn_func(q, k, v)
    causal = ga.flash_attn_func(q, k, v, causal=True)
    assert not np.array_equal(full, causal)
    assert np.array_equal(ga.flash_attn_func(q, k, v, window_size=(-1, 0)), causal)
    assert np.array_equal(ga.flash_attn_func(q, k, v, window_size=(29, 0)), causal)  # >= Sk-1
    assert np.array_equal(ga.flash_attn_func(q, k, v, window_size=(29, 19)), full)  # >= Sq-1
    assert np.array_equal(ga.flash_attn_func(q, k, v, window_size=(100, -1)), full)
    assert np.array_equal(ga.flash_attn_func(q, k, v, causal=True, window_size=(-1, 5)), causal)
    for window in [(28, 0), (-1, 18), (4, 4), (0, 0)]:  # real windows: neither full nor causal
        out = ga.flash_attn_func(q, k, v, window_size=window)
        assert not np.array_equal(out, full) and not np.array_equal(out, causal)
    for window in [(1,), "ab", (1.5, 0), None, (-2, 0), (0, -3)]:
        with pytest.raises(ValueError, match="window_size"):
            ga.flash_attn_func(q, k, v, window_size=window)


# ---- layouts -------------------------------------------------------------------------------------


def test_non_contiguous_inputs():
    rng = rng_for("strided")
    big = make("numpy", "float16", (2, 90, 6, 128), rng)
    # slices along sequence and heads keep the head dim contiguous: zero-copy
    q = big[:, 3:80, 1:5, :64]
    k = big[:, 10:87, 2:4, 64:]
    v = big[:, :77, 4:6, :64]
    assert not q.flags.c_contiguous
    out, lse, _ = ga.flash_attn_func(q, k, v, causal=True, return_attn_probs=True)
    want_out, want_lse = ref_dense(to64(q), to64(k), to64(v), 1 / 8, causal_rule(True))
    assert_close(out, want_out, 2e-3, "out")
    assert_close(lse, want_lse, 1e-3, "lse")
    # a strided head dim is copied first, as flash-attn's maybe_contiguous does
    out = ga.flash_attn_func(big[..., ::2], big[..., 1::2], big[..., ::2])
    want, _ = ref_dense(to64(big[..., ::2]), to64(big[..., 1::2]), to64(big[..., ::2]), 1 / 8,
                        causal_rule(False))
    assert_close(out, want, 2e-3, "out")
    # [B, H, S, D] memory seen as [B, S, H, D] (torch SDPA's layout, transposed view)
    bhsd = make("numpy", "float16", (2, 4, 33, 64), rng)
    x = bhsd.transpose(0, 2, 1, 3)
    out = ga.flash_attn_func(x, x, x, causal=True)
    want, _ = ref_dense(to64(x), to64(x), to64(x), 1 / 8, causal_rule(True))
    assert_close(out, want, 2e-3, "out")


def test_size_one_and_broadcast_dimensions():
    rng = rng_for("size1")
    q = make("numpy", "float16", (2, 1, 4, 64), rng)
    # a size-1 dimension with a stride no real layout would have (torch views produce such)
    q_odd = np.lib.stride_tricks.as_strided(q, shape=q.shape,
                                            strides=(q.strides[0], 2, q.strides[2], 2))
    k1 = make("numpy", "float16", (2, 30, 1, 64), rng)
    v1 = make("numpy", "float16", (2, 30, 1, 64), rng)
    # MQA spelled as a broadcast to 4 kv heads: stride 0, read-only, no copy
    k4 = np.broadcast_to(k1, (2, 30, 4, 64))
    v4 = np.broadcast_to(v1, (2, 30, 4, 64))
    want, _ = ref_dense(to64(q), to64(k1), to64(v1), 1 / 8, causal_rule(False))
    assert_close(ga.flash_attn_func(q_odd, k1, v1), want, 2e-3, "out")
    assert_close(ga.flash_attn_func(q, k4, v4), want, 2e-3, "out")


def test_read_only_inputs():
    rng = rng_for("ro")
    q, k, v = (make("numpy", "float32", (1, 17, 2, 64), rng) for _ in range(3))
    for x in (q, k, v):
        x.setflags(write=False)
    out = ga.flash_attn_func(q, k, v)
    want, _ = ref_dense(to64(q), to64(k), to64(v), 1 / 8, causal_rule(False))
    assert_close(out, want, 2e-5, "out")


def test_bad_layouts_raise():
    rng = rng_for("badlayout")
    big = make("numpy", "float16", (1, 20, 2, 136), rng)
    odd = make("numpy", "float16", (1, 20, 2, 130), rng)
    ok = make("numpy", "float16", (1, 20, 2, 64), rng)
    with pytest.raises(ValueError, match="16-byte aligned"):
        ga.flash_attn_func(big[..., 1:65], ok, ok)
    with pytest.raises(ValueError, match="multiple of 16 bytes"):
        ga.flash_attn_func(odd[..., :64], ok, ok)  # head stride 130 halves = 260 bytes
    with pytest.raises(ValueError, match="negative stride"):
        ga.flash_attn_func(ok[:, ::-1], ok, ok)


# ---- error paths ---------------------------------------------------------------------------------


@pytest.fixture
def qkv16():
    rng = rng_for("errors")
    return tuple(make("numpy", "float16", (2, 16, 4, 64), rng) for _ in range(3))


def test_unsupported_options_raise(qkv16):
    q, k, v = qkv16
    with pytest.raises(NotImplementedError, match="dropout_p"):
        ga.flash_attn_func(q, k, v, dropout_p=0.1)
    with pytest.raises(ValueError, match="dropout_p"):
        ga.flash_attn_func(q, k, v, dropout_p=1.5)
    # ALiBi runs (test_alibi.py); slopes of another shape are named.
    with pytest.raises(ValueError, match=r"alibi_slopes has shape \[5\], expected \[Hq = 4\]"):
        ga.flash_attn_func(q, k, v, alibi_slopes=np.ones(5, np.float32))
    with pytest.raises(ValueError, match="softcap nan must be finite and >= 0"):
        ga.flash_attn_func(q, k, v, softcap=float("nan"))
    with pytest.raises(TypeError, match="softcap must be a float"):
        ga.flash_attn_func(q, k, v, softcap="50")
    with pytest.raises(ValueError, match="window_size"):
        ga.flash_attn_func(q, k, v, window_size=(8, -8))
    with pytest.raises(TypeError, match="softmax_scale"):
        ga.flash_attn_func(q, k, v, softmax_scale="0.1")
    for bad in (float("inf"), float("nan"), -0.5, 0.0):
        with pytest.raises(ValueError, match="softmax_scale"):
            ga.flash_attn_func(q, k, v, softmax_scale=bad)


def test_bad_shapes_and_dtypes_raise(qkv16):
    q, k, v = qkv16
    rng = rng_for("bad-shapes")
    d96 = make("numpy", "float16", (2, 16, 4, 96), rng)
    with pytest.raises(NotImplementedError, match="head dim 96"):
        ga.flash_attn_func(d96, d96, d96)
    d512 = make("numpy", "float16", (1, 4, 2, 512), rng)
    with pytest.raises(NotImplementedError,
                       match=r"head dim 512 is not supported \(64, 128, 256\)"):
        ga.flash_attn_func(d512, d512, d512)
    with pytest.raises(ValueError, match="dtype"):
        ga.flash_attn_func(q, k.astype(np.float32), v)
    with pytest.raises(NotImplementedError, match="float64"):
        ga.flash_attn_func(q.astype(np.float64), k, v)
    with pytest.raises(ValueError, match="dtype"):
        ga.flash_attn_func(q, k, v.astype(np.float64))
    with pytest.raises(ValueError, match="rank"):
        ga.flash_attn_func(q[0], k[0], v[0])
    with pytest.raises(ValueError, match="dimensions"):
        ga.flash_attn_func(q[None], k[None], v[None])
    k3 = make("numpy", "float16", (2, 16, 3, 64), rng)
    with pytest.raises(ValueError, match="multiple of kv heads"):
        ga.flash_attn_func(q, k3, k3)
    kb = make("numpy", "float16", (3, 16, 4, 64), rng)
    with pytest.raises(ValueError, match="batch"):
        ga.flash_attn_func(q, kb, kb)
    with pytest.raises(ValueError, match="v shape"):
        ga.flash_attn_func(q, k, v[:, :8])
    with pytest.raises(ValueError, match="head dim"):
        ga.flash_attn_func(q, make("numpy", "float16", (2, 16, 4, 128), rng), v)
    with pytest.raises(ValueError):
        ga.flash_attn_func(q[:, :0], k, v)  # empty query
    with pytest.raises(TypeError, match="q must be"):
        ga.flash_attn_func(q.tolist(), k, v)
    with pytest.raises(TypeError, match="k must be"):
        ga.flash_attn_func(q, None, v)


def test_varlen_errors():
    rng = rng_for("varlen-errors")
    q, k, v = (make("numpy", "float16", (10, 2, 64), rng) for _ in range(3))
    cu = np.array([0, 4, 10], dtype=np.int32)
    f = ga.flash_attn_varlen_func
    with pytest.raises(TypeError, match="max_seqlen_q"):
        f(q, k, v, cu, cu, 6.0, 6)
    with pytest.raises(TypeError, match="max_seqlen_k"):
        f(q, k, v, cu, cu, 6, True)
    with pytest.raises(ValueError, match="max_seqlen_q"):
        f(q, k, v, cu, cu, 0, 6)
    with pytest.raises(ValueError, match="max_seqlen_k"):
        f(q, k, v, cu, cu, 6, 2**31)
    with pytest.raises(ValueError, match="max_seqlen"):
        f(q, k, v, cu, cu, 5, 6)  # sequence 1 has length 6
    with pytest.raises(ValueError, match="int32"):
        f(q, k, v, cu.astype(np.int64), cu, 6, 6)
    with pytest.raises(ValueError, match="rows"):
        f(q, k, v, np.array([0, 4, 9], np.int32), cu, 6, 6)
    with pytest.raises(ValueError, match="decreases|negative"):
        f(q, k, v, np.array([0, 11, 10], np.int32), cu, 11, 6)
    with pytest.raises(ValueError, match="entries"):
        f(q, k, v, np.array([0, 4, 6, 10], np.int32), cu, 6, 6)
    with pytest.raises(ValueError, match="rank"):
        f(q[None], k[None], v[None], cu, cu, 6, 6)
    with pytest.raises(ValueError, match="cu_seqlens"):
        f(q, k, v, None, cu, 6, 6)
    with pytest.raises(NotImplementedError, match="block_table"):
        f(q, k, v, cu, cu, 6, 6, block_table=np.zeros((2, 1), np.int32))
    with pytest.raises(NotImplementedError, match="dropout_p"):
        f(q, k, v, cu, cu, 6, 6, dropout_p=0.5)
    with pytest.raises(ValueError, match="window_size"):
        f(q, k, v, cu, cu, 6, 6, window_size=(-7, 0))


def test_module_surface():
    assert isinstance(ga.__version__, str) and ga.__version__.count(".") == 2
    assert isinstance(ga.cuda_available(), bool)
    for name in ga.__all__:
        assert hasattr(ga, name), name


def elf_sections(path):
    """(bytes, section headers) of an ELF64 little-endian file; None when `path` is no such file
    (macOS, Windows). A header is (name, type, flags, addr, offset, size, link, info, align,
    entsize)."""
    import struct

    data = open(path, "rb").read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    return data, [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                  for i in range(shnum)]


def _c_string(data, pos):
    return data[pos:data.index(b"\0", pos)].decode()


def elf_dynamic_symbols(path):
    """(name, binding) of every symbol an ELF64 little-endian shared object defines in .dynsym;
    None when `path` is no such file."""
    import struct

    elf = elf_sections(path)
    if elf is None:
        return None
    data, sections = elf
    symbols = []
    for _, sh_type, _, _, offset, size, link, _, _, entsize in sections:
        if sh_type != 11:  # SHT_DYNSYM
            continue
        strtab = sections[link][4]
        for pos in range(offset, offset + size, entsize):
            st_name, st_info, _, st_shndx, _, _ = struct.unpack_from("<IBBHQQ", data, pos)
            if st_shndx == 0:  # undefined: imported, not exported
                continue
            name = _c_string(data, strtab + st_name)
            if name:
                symbols.append((name, st_info >> 4))
    return symbols


def elf_needed(path):
    """The DT_NEEDED entries (shared libraries loaded with it) of an ELF64 little-endian shared
    object; None when `path` is no such file."""
    import struct

    elf = elf_sections(path)
    if elf is None:
        return None
    data, sections = elf
    needed = []
    for _, sh_type, _, _, offset, size, link, _, _, _ in sections:
        if sh_type != 6:  # SHT_DYNAMIC
            continue
        strtab = sections[link][4]
        for pos in range(offset, offset + size, 16):
            tag, value = struct.unpack_from("<qQ", data, pos)
            if tag == 0:  # DT_NULL
                break
            if tag == 1:  # DT_NEEDED
                needed.append(_c_string(data, strtab + value))
    return needed


def test_extension_does_not_load_nccl():
    """NCCL is opened when the first NCCL communicator is made, not loaded with the module: loaded
    first, the CUDA toolkit's older libnccl.so.2 made a later `import torch` (2.15, whose
    libtorch_cuda.so needs a newer NCCL) fail with an undefined symbol (ncclCommResume)."""
    needed = elf_needed(ga._C.__file__)
    if needed is None:
        pytest.skip("not an ELF64 little-endian extension")
    assert needed, "no DT_NEEDED entries read: the parser is wrong"
    assert any(name.startswith(("libc.so", "libstdc++")) for name in needed), needed
    assert not [name for name in needed if "nccl" in name], needed


@needs_torch
def test_torch_imports_after_the_module():
    import subprocess

    code = "import gpu_attention, torch; print(torch.__version__)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]


def test_extension_exports_only_its_init():
    """The extension keeps the library, nanobind and any statically linked C++ runtime private. A
    toolchain that linked libstdc++.a into it used to export STB_GNU_UNIQUE locale facet ids that
    the loader merged with numpy's libstdc++.so.6: `ostream << pointer` (the library's "not
    16-byte aligned" message) then called a null function and crashed the interpreter."""
    symbols = elf_dynamic_symbols(ga._C.__file__)
    if symbols is None:
        pytest.skip("not an ELF64 little-endian extension")
    unique = [name for name, binding in symbols if binding == 10]  # STB_GNU_UNIQUE
    assert not unique, f"extension exports STB_GNU_UNIQUE symbols: {unique[:5]}"
    exported = sorted({name for name, _ in symbols} - {"PyInit__C", "_init", "_fini"})
    assert not exported, f"extension exports more than PyInit__C: {exported[:10]}"


# ---- torch specifics ------------------------------------------------------------------------------


# ---- arrays of no elements ---------------------------------------------------------------------

# (lens_q, lens_k) of varlen batches with sequences of no rows, in the middle and at the end; all
# but the first have a side of no rows at all (q, or k and v, of 0 rows).
EMPTY_SEQUENCES = {
    "middle-and-end": ([5, 0, 7, 0], [6, 3, 0, 0]),
    "no-keys": ([3, 0, 5, 0], [0, 0, 0, 0]),
    "no-queries": ([0, 0, 0, 0], [4, 0, 2, 0]),
    "all-empty": ([0, 0], [0, 0]),
}


def on_device(where):
    """(fw, device) of ON_DEVICES, and a function that puts a numpy array there (torch: a tensor
    on the device); skips a CUDA case without a usable device."""
    fw, device = where
    if device == "cuda" and not (torch.cuda.is_available() and ga.cuda_available()):
        pytest.skip("no CUDA device")
    return fw, (lambda x: torch.from_numpy(np.ascontiguousarray(x)).to(device)
                if fw == "torch" else x)


@pytest.mark.parametrize("where", ON_DEVICES)
@pytest.mark.parametrize("lens", EMPTY_SEQUENCES.values(), ids=EMPTY_SEQUENCES.keys())
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_varlen_with_empty_sequences(where, lens, causal):
    """The library takes varlen sequences of no rows anywhere in the batch, and sides of no rows
    at all; so do flash_attn_varlen_func and sparse_attn_varlen_func, whatever the framework
    exports for an array of no elements (torch: no storage; numpy: zero strides). out is
    (total_q, nheads, headdim) and lse (nheads, total_q), of 0 rows too; rows that see no key
    get out 0 and lse -inf, the others match the reference."""
    fw, put = on_device(where)
    lens_q, lens_k = lens
    cu_q, cu_k = cu_seqlens(lens_q), cu_seqlens(lens_k)
    hq, hkv, d = 4, 2, 64
    max_q, max_k = max(max(lens_q), 1), max(max(lens_k), 1)  # positive, as the library needs
    rng = rng_for("varlen-empty-sequences", *where, lens_q, lens_k, causal)
    q = make("numpy", "float16", (cu_q[-1], hq, d), rng)
    k = make("numpy", "float16", (cu_k[-1], hkv, d), rng)
    v = make("numpy", "float16", (cu_k[-1], hkv, d), rng)
    want_out, want_lse = ref_varlen(to64(q), to64(k), to64(v), cu_q, cu_k, 1 / 8,
                                    causal_rule(causal))
    args = (put(q), put(k), put(v), put(cu_q), put(cu_k), max_q, max_k)
    out, lse, _ = ga.flash_attn_varlen_func(*args, causal=causal, return_attn_probs=True)
    assert tuple(out.shape) == (cu_q[-1], hq, d) and tuple(lse.shape) == (hq, cu_q[-1])
    assert_close(out, want_out, 2e-3, "out")
    assert_close(lse, want_lse, 1e-3, "lse")
    # the sparse masks: a window with a global token, and a block layout with every block on
    want_out, want_lse = ref_varlen(to64(q), to64(k), to64(v), cu_q, cu_k, 1 / 8,
                                    lambda sq, sk: visibility(sq, sk, causal, (2, 1), 1))
    layout = put(np.ones((1, -(-max_q // 64), -(-max_k // 64)), np.uint8))
    out, lse, _ = ga.sparse_attn_varlen_func(*args, causal=causal, window_size=(2, 1),
                                             global_tokens=1, block_mask=layout, block_size=64,
                                             return_attn_probs=True)
    assert_close(out, want_out, 2e-3, "sparse out")
    assert_close(lse, want_lse, 1e-3, "sparse lse")


@pytest.mark.parametrize("where", ON_DEVICES)
def test_empty_arrays_meet_the_library_checks(where):
    """Arrays of no elements reach the library's own checks, and a call it refuses raises its
    ValueError naming the size (the module refused every such array by name before, and a
    max_seqlen of 0 was refused in Python): a dense batch, seqlen_q or seqlen_k of 0 (flash-attn
    takes seqlen_k 0; the library does not), an empty KV cache or page pool, appended k/v of no
    rows, and cache_seqlens, scales, cu_seqlens or a block layout of no elements. Plain torch
    tensors take the fast path, which passes them as they are, and then the general path."""
    fw, put = on_device(where)
    rng = rng_for("empty-arrays-checked", *where)
    q, k, v = (put(make("numpy", "float16", (2, 8, h, 64), rng)) for h in (4, 2, 2))
    lib = "gpuattn::attention_forward: "
    cases = [
        (lambda: ga.flash_attn_func(q[:0], k[:0], v[:0]),
         lib + r"batch size \(q dim 0\) is 0, must be positive"),
        (lambda: ga.flash_attn_func(q[:, :0], k, v, causal=True),
         lib + r"q sequence length \(Sq\) is 0, must be positive"),
        (lambda: ga.flash_attn_func(q, k[:, :0], v[:, :0]),
         lib + r"k sequence length \(Sk\) is 0, must be positive"),
        (lambda: ga.flash_attn_func(q, k[:, :0], v[:, :0], window_size=(4, 4)),
         lib + r"k sequence length \(Sk\) is 0, must be positive"),
        (lambda: ga.flash_attn_func(q, k, v[:, :0]),
         lib + r"v shape \[2, 0, 2, 64\] differs from k shape \[2, 8, 2, 64\]"),
        (lambda: ga.sparse_attn_func(q, k[:, :0], v[:, :0], window_size=(2, 0), global_tokens=1),
         lib + r"k sequence length \(Sk\) is 0, must be positive"),
        (lambda: ga.sparse_attn_func(q, k, v, block_mask=put(np.ones((1, 0, 1), np.uint8)),
                                     block_size=64),
         lib + r"mask.block_sparse.layout shape \[1, 0, 1\] must be \[Hq or 1, ceil\(Sq / "
               r"block_q\), ceil\(Sk / block_k\)\] = \[4 or 1, 1, 1\]"),
        (lambda: ga.flash_attn_with_kvcache(q[:, :1], k[:, :0], v[:, :0]),
         lib + r"k_cache sequence length \(Sk\) is 0, must be positive"),
        (lambda: ga.flash_attn_with_kvcache(q[:, :1], k[:0], v[:0], cache_seqlens=3,
                                            block_table=put(np.zeros((2, 1), np.int32))),
         lib + r"k_cache page count \(k_cache dim 0\) is 0, must be positive"),
        (lambda: ga.flash_attn_with_kvcache(q[:, :1], k, v,
                                            cache_seqlens=put(np.zeros(0, np.int32))),
         lib + r"cache_seqlens has shape \[0\], expected \[batch = 2\]"),
        (lambda: ga.flash_attn_with_kvcache(q[:, :1], k, v, k=k[:, :0], v=v[:, :0],
                                            cache_seqlens=put(np.array([1, 2], np.int32))),
         r"gpuattn::append_kv: k has shape \[2, 0, 2, 64\]: every size must be positive"),
        (lambda: ga.flash_attn_varlen_func(q[0], k[0], v[0], put(np.zeros(0, np.int32)),
                                           put(np.array([0, 8], np.int32)), 8, 8),
         lib + r"cu_seqlens_q has 0 entries, needs batch \+ 1 >= 2"),
        (lambda: ga.flash_attn_varlen_func(q[0, :0], k[0, :0], v[0, :0],
                                           put(np.zeros(3, np.int32)), put(np.zeros(3, np.int32)),
                                           0, 0),
         lib + r"max_seqlen_q is 0, must be positive"),
    ]
    if fw == "torch" or where[1] == "cpu":  # an int8 cache (numpy: int8 arrays)
        k8, v8 = (x.to(torch.int8) if fw == "torch" else x.astype(np.int8) for x in (k, v))
        scale = put(np.ones(0, np.float32))
        cases.append((lambda: ga.flash_attn_with_kvcache(q[:, :1], k8, v8, k_scale=scale,
                                                         v_scale=scale),
                      lib + r"k_scale has shape \[0\], expected \[Hkv = 2\] or \[1\]"))
    for call, message in cases:
        with pytest.raises(ValueError, match=message):
            call()


def test_empty_arrays_in_the_module():
    """The module itself: an array of no elements crosses with row-major strides whatever numpy
    exports (zeros), so the library takes an all-empty varlen call through _C and writes nothing;
    empty_shapes (the wrappers' rows of storage) is checked by name; a torch tensor of no elements
    passed as it is has no storage and is refused by name (the wrappers never pass one)."""
    q = np.empty((0, 2, 64), np.float16)
    assert q.size == 0
    lse = np.empty((2, 0), np.float32)
    cu = np.zeros(3, np.int32)
    _C = ga._C
    _C.attention_forward(q, q, q, np.empty_like(q), lse, cu, cu, 4, 4)
    row = np.zeros((1, 2, 64), np.float16)
    with pytest.raises(ValueError, match=r"empty_shapes .* names an argument that is absent or "
                                         r"takes no array"):
        _C.attention_forward(q, q, q, np.empty_like(q), None, cu, cu, 4, 4,
                             empty_shapes={"lse": (2, 0)})
    with pytest.raises(ValueError, match=r"empty_shapes gives q the shape \[2, 2, 64\], which is "
                                         r"no empty part of the array passed, \[1, 2, 64\]"):
        _C.attention_forward(row, q, q, np.empty_like(q), None, cu, cu, 4, 4,
                             empty_shapes={"q": (2, 2, 64)})
    with pytest.raises(TypeError, match=r"empty_shapes\['q'\] must be a tuple of ints"):
        _C.attention_forward(row, q, q, np.empty_like(q), None, cu, cu, 4, 4,
                             empty_shapes={"q": [0, 2, 64]})
    _C.attention_forward(row, q, q, np.empty_like(q), None, cu, cu, 4, 4,
                         empty_shapes={"q": (0, 2, 64)})
    if torch is not None:
        t = torch.empty((0, 2, 64), dtype=torch.float16)
        with pytest.raises(ValueError, match=r"q has no elements \(shape \[0, 2, 64\]\) and was "
                                             r"exported without storage"):
            _C.attention_forward(t, q, q, np.empty_like(q), None, cu, cu, 4, 4)
    # sequence_parallel_attention takes the arrays as they are: the library names the batch
    group = ga.RankGroup.local_cpu(2)
    empty = [np.empty((0, 4, 2, 64), np.float32) for _ in range(2)]
    with pytest.raises(ValueError, match=r"shards\[0\]: gpuattn::attention_forward: batch size "
                                         r"\(q dim 0\) is 0, must be positive"):
        ga.sequence_parallel_attention(group, empty, empty, empty, empty)


@needs_torch
def test_torch_errors_and_grad():
    rng = rng_for("torch-errors")
    q, k, v = (make("torch", "float16", (1, 16, 2, 64), rng) for _ in range(3))
    with pytest.raises(TypeError, match="k is a numpy array but q is a torch"):
        ga.flash_attn_func(q, k.numpy(), v)
    with pytest.raises(ValueError, match="dtype"):
        ga.flash_attn_func(q, k.to(torch.bfloat16), v)
    qg = q.float().requires_grad_()
    with pytest.raises(NotImplementedError, match="requires grad"):
        ga.flash_attn_func(qg, k.float(), v.float())
    with torch.no_grad():
        out = ga.flash_attn_func(qg, k.float(), v.float())
    want, _ = ref_dense(to64(q), to64(k), to64(v), 1 / 8, causal_rule(False))
    assert_close(out, want, 2e-5, "out")
    # torch SDPA layout: [B, H, S, D] contiguous, passed as a transposed view
    x = make("torch", "float16", (1, 2, 16, 64), rng).transpose(1, 2)
    out = ga.flash_attn_func(x, x, x, causal=True)
    want, _ = ref_dense(to64(x), to64(x), to64(x), 1 / 8, causal_rule(True))
    assert_close(out, want, 2e-3, "out")
    if not ga.cuda_available() and torch.cuda.is_available():  # no usable CUDA device
        with pytest.raises(RuntimeError, match=r"^q on cuda:0 needs a CUDA device, but none is "
                                               "usable: this build of gpu_attention has no CUDA"):
            ga.flash_attn_func(q.cuda(), k.cuda(), v.cuda())


@needs_torch
def test_torch_tensors_cross_as_capsules(monkeypatch):
    """Torch tensors reach the library as torch.utils.dlpack.to_dlpack capsules: the Python-level
    Tensor.__dlpack__ that nanobind would call costs ~4 us a tensor (bench/host_overhead.py), so it
    must not be called at all; outputs and lse still land in the caller's tensors."""
    calls = []
    original = torch.Tensor.__dlpack__

    def counted(self, *args, **kwargs):
        calls.append(tuple(self.shape))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "__dlpack__", counted)
    rng = rng_for("capsules")
    q, k, v = (make("torch", "float16", (2, 33, 4, 64), rng) for _ in range(3))
    out, lse, _ = ga.flash_attn_func(q, k, v, causal=True, return_attn_probs=True)
    assert calls == [], f"Tensor.__dlpack__ called for shapes {calls}"
    want, want_lse = ref_dense(to64(q), to64(k), to64(v), 1 / 8, causal_rule(True))
    assert_close(out, want, 2e-3, "out")
    assert_close(lse, want_lse, 1e-4, "lse")
    q.__dlpack__()  # the patch is in effect
    assert calls == [(2, 33, 4, 64)]


@needs_torch
@pytest.mark.skipif(torch is None or not torch.cuda.is_available() or not ga.cuda_available(),
                    reason="needs a CUDA build and a CUDA device")
def test_torch_cuda_matches_cpu():
    rng = rng_for("cuda")
    q, k, v = (make("torch", "bfloat16", (2, 77, 4, 128), rng) for _ in range(3))
    want, want_lse = ref_dense(to64(q), to64(k), to64(v), 1 / math.sqrt(128), causal_rule(True))
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        out, lse, _ = ga.flash_attn_func(q.cuda(), k.cuda(), v.cuda(), causal=True,
                                         return_attn_probs=True)
    stream.synchronize()
    assert out.is_cuda and lse.is_cuda
    assert_close(out.cpu(), want, 1.6e-2, "out")
    assert_close(lse.cpu(), want_lse, 1e-2, "lse")
    with pytest.raises(ValueError, match="host/device"):
        ga.flash_attn_func(q.cuda(), k, v.cuda())


@needs_torch
@pytest.mark.skipif(torch is None or not torch.cuda.is_available() or not ga.cuda_available()
                    or not hasattr(torch, "float8_e4m3fn"),
                    reason="needs torch with float8, a CUDA build and a CUDA device")
@pytest.mark.parametrize("fmt", ["int8", "e4m3"])
def test_torch_cuda_quantized_kvcache(fmt):
    """torch tensors on the GPU: an int8 or float8_e4m3fn cache with per-head float32 scales, read
    in place by the 8-bit decode kernel (one query row, lengths 1..300) and through the
    dequantized copy (a causal prefill of 70 rows); appended rows quantized exactly as torch
    rounds them (x / scale, to nearest even)."""
    gen = torch.Generator().manual_seed(20)
    b, length, hk, hq, d = 3, 300, 2, 8, 128
    spread = torch.tensor([1.0, 3.0])[None, None, :, None]  # the two heads' scales differ
    kf = torch.randn(b, length, hk, d, generator=gen) * spread
    vf = torch.randn(b, length, hk, d, generator=gen)
    top = 448.0 if fmt == "e4m3" else 127.0
    ks = (kf.abs().amax(dim=(0, 1, 3)) / top).float()
    vs = (vf.abs().amax(dim=(0, 1, 3)) / top).float()

    def quantize(x, s):
        x = x.float() / s[None, None, :, None]
        if fmt == "e4m3":
            return x.to(torch.float8_e4m3fn)
        return torch.round(x).clamp(-127, 127).to(torch.int8)

    kc, vc = quantize(kf, ks), quantize(vf, vs)
    kd = kc.to(torch.float64) * ks.double()[None, None, :, None]
    vd = vc.to(torch.float64) * vs.double()[None, None, :, None]
    used = torch.tensor([300, 1, 177], dtype=torch.int32)
    dev = torch.device("cuda")
    for sq, causal in ((1, False), (70, True)):
        q = torch.randn(b, sq, hq, d, generator=gen).to(torch.bfloat16)
        out = ga.flash_attn_with_kvcache(q.to(dev), kc.to(dev), vc.to(dev),
                                         cache_seqlens=used.to(dev), causal=causal,
                                         k_scale=ks.to(dev), v_scale=vs.to(dev))
        assert out.is_cuda and out.dtype == torch.bfloat16 and out.shape == q.shape
        for i, n in enumerate(used.tolist()):
            want, _ = ref_dense(to64(q[i:i + 1]), kd[i:i + 1, :n].numpy(),
                                vd[i:i + 1, :n].numpy(), 1 / math.sqrt(d), causal_rule(causal))
            assert_close(out[i:i + 1].cpu(), want, 1.6e-2, f"Sq {sq} out of sequence {i}")
    # The append: new bf16 rows at each sequence's end, quantized with the cache's scales.
    kc2, vc2 = kc.to(dev), vc.to(dev)
    knew = torch.randn(b, 2, hk, d, generator=gen).to(torch.bfloat16)
    vnew = torch.randn(b, 2, hk, d, generator=gen).to(torch.bfloat16)
    q = torch.randn(b, 2, hq, d, generator=gen).to(torch.bfloat16)
    at = torch.tensor([5, 0, 298], dtype=torch.int32)
    ga.flash_attn_with_kvcache(q.to(dev), kc2, vc2, k=knew.to(dev), v=vnew.to(dev),
                               cache_seqlens=at.to(dev), causal=True, k_scale=ks.to(dev),
                               v_scale=vs.to(dev))
    kc2, vc2 = kc2.cpu(), vc2.cpu()
    for i, pos in enumerate(at.tolist()):
        for cache, new, s, what in ((kc2, knew, ks, "k"), (vc2, vnew, vs, "v")):
            got = cache[i:i + 1, pos:pos + 2].view(torch.uint8)
            want = quantize(new[i:i + 1].float(), s).view(torch.uint8)
            assert torch.equal(got, want), f"{what} rows appended at {pos} of sequence {i}"
        rest = torch.cat([kc2[i:i + 1, :pos], kc2[i:i + 1, pos + 2:]], dim=1).view(torch.uint8)
        orig = torch.cat([kc[i:i + 1, :pos], kc[i:i + 1, pos + 2:]], dim=1).view(torch.uint8)
        assert torch.equal(rest, orig), f"k rows of sequence {i} other than the appended ones"


@pytest.mark.parametrize("fmt", ["int8", "e4m3"])
def test_kvcache_quantized_cache_with_per_head_scales(fmt):
    """k_scale/v_scale: an int8 cache, or E4M3 bytes (uint8 in numpy), read as x * scale[head];
    k/v appended are quantized with the same scales; a float scale is one for every head."""
    rng = rng_for("kvcache-quantized", fmt)
    q = make("numpy", "float16", (2, 3, 8, 64), rng)
    if fmt == "int8":
        kc = rng.integers(-127, 128, (2, 40, 2, 64)).astype(np.int8)
        vc = rng.integers(-127, 128, (2, 40, 2, 64)).astype(np.int8)
        decode = lambda x: x.astype(np.float64)  # noqa: E731
    else:
        kc = rng.integers(0, 0x7F, (2, 40, 2, 64)).astype(np.uint8)  # finite, both signs below
        kc |= (rng.integers(0, 2, kc.shape) << 7).astype(np.uint8)
        vc = rng.integers(0, 0x7F, (2, 40, 2, 64)).astype(np.uint8)
        decode = e4m3_decode
    ks = np.array([0.02, 0.05], dtype=np.float32)
    vs = np.array([0.03, 0.01], dtype=np.float32)
    used = np.array([40, 13], dtype=np.int32)
    out = ga.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=used, causal=True, k_scale=ks,
                                     v_scale=vs)
    kd = (decode(kc) * ks[None, None, :, None]).astype(np.float32)
    vd = (decode(vc) * vs[None, None, :, None]).astype(np.float32)
    for b, n in enumerate(used):
        want, _ = ref_dense(to64(q[b:b + 1]), kd[b:b + 1, :n].astype(np.float64),
                            vd[b:b + 1, :n].astype(np.float64), 1 / math.sqrt(64),
                            causal_rule(True))
        assert_close(out[b:b + 1], want, 3e-3, f"out of sequence {b}")
    # Appending quantizes: a row of 16-bit keys lands as round(x / scale).
    knew = np.full((2, 1, 2, 64), 0.5, dtype=np.float16)
    kc2, vc2 = kc.copy(), vc.copy()
    ga.flash_attn_with_kvcache(q, kc2, vc2, k=knew, v=knew, cache_seqlens=np.array([3, 5], np.int32),
                               k_scale=ks, v_scale=vs)
    got = decode(kc2[0, 3, 0])
    assert np.allclose(got, 0.5 / 0.02, rtol=0.07), got[:4]
    # One scale for every head, as a Python float.
    same = ga.flash_attn_with_kvcache(q, kc, vc, k_scale=0.02, v_scale=0.03)
    want_all = ga.flash_attn_with_kvcache(q, kc, vc, k_scale=np.array([0.02, 0.02], np.float32),
                                          v_scale=np.array([0.03, 0.03], np.float32))
    assert np.array_equal(same, want_all)
    with pytest.raises(ValueError, match=r"k_scale\[1\] is -1"):
        ga.flash_attn_with_kvcache(q, kc, vc, k_scale=np.array([1, -1], np.float32), v_scale=vs)
