"""ALiBi (alibi_slopes, as flash-attn): query i of head h of sequence b adds
-alibi_slopes[b][h] * |i + Sk - Sq - j| to its score for key j, after the scale and the soft-cap,
before the softmax, and the lse is of the biased scores. Checked against the float64 reference
(and a closed form) through flash_attn_func, flash_attn_varlen_func, the packed forms,
flash_attn_with_kvcache (appended, paged, cache_leftpad, cache_batch_idx) and the native call
(outputs poisoned first), at awkward shapes, on numpy, torch CPU and CUDA; and every bad slope
array named, with outputs and caches untouched."""
import math

import numpy as np
import pytest

import gpu_attention as ga
from reference import (KVCACHE_FRAMEWORKS, assert_close, causal_rule, cu_seqlens, int32_on, make,
                       needs_cuda, needs_torch, on, ref_dense, ref_varlen, rng_for, to64, torch,
                       visibility)

# (framework, dtype, device, tolerance on out, on lse)
FRAMEWORKS = [
    ("numpy", "float16", "cpu", 2e-3, 1e-3),
    ("numpy", "float32", "cpu", 2e-5, 2e-5),
    pytest.param("torch", "bfloat16", "cpu", 1.6e-2, 1e-2, marks=needs_torch),
    pytest.param("torch", "float32", "cpu", 2e-5, 2e-5, marks=needs_torch),
    pytest.param("torch", "float16", "cuda", 2e-3, 1e-3, marks=needs_cuda),
    pytest.param("torch", "bfloat16", "cuda", 1.6e-2, 1e-2, marks=needs_cuda),
]


def slopes_for(h, batch=None, rng=None):
    """float32 numpy slopes: ALiBi's geometric ones, 2^(-8 (h + 1) / H) (BLOOM's for a power of
    two), [H]; with `batch`, [batch, H] rows of them scaled per sequence, one of them with a
    negative and a zero slope (the bias any finite slope gives)."""
    base = 2.0 ** (-8.0 * (np.arange(h) + 1) / h)
    if batch is None:
        return base.astype(np.float32)
    rng = rng or np.random.default_rng(0)
    rows = base[None, :] * rng.uniform(0.25, 4.0, (batch, 1))
    rows[-1, 0] = -0.05
    if h > 1:
        rows[-1, 1] = 0.0
    return rows.astype(np.float32)


def arr(fw, device, x):
    """A numpy array as an array of framework fw on `device` (numpy: itself)."""
    return x if fw == "numpy" else torch.from_numpy(np.ascontiguousarray(x)).to(device)


def qkv_on(fw, dtype, device, shapes, rng, scale=1.0):
    xs = []
    for shape in shapes:
        x = make(fw, dtype, shape, rng)
        if scale != 1.0:
            x = x * scale if fw == "numpy" else (x * scale).to(x.dtype)
        xs.append(on(fw, device, x))
    return xs


# ---- flash_attn_func ----------------------------------------------------------------------------

SHAPES = [(2, 77, 77, 4, 4, 64),    # S = 77: no tile multiple
          (1, 33, 130, 8, 2, 128),  # Sq < Sk, GQA 4:1
          (2, 100, 41, 4, 1, 64),   # Sq > Sk (causal: the first rows see no key), MQA
          (1, 40, 40, 2, 1, 256)]


@pytest.mark.parametrize("fw,dtype,device,tol,lse_tol", FRAMEWORKS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("per_seq", [False, True], ids=["H", "BH"])
def test_dense_alibi_matches_reference(fw, dtype, device, tol, lse_tol, shape, causal, per_seq):
    b, sq, sk, hq, hkv, d = shape
    rng = rng_for("alibi-dense", fw, dtype, device, shape, causal, per_seq)
    q, k, v = qkv_on(fw, dtype, device, [(b, sq, hq, d), (b, sk, hkv, d), (b, sk, hkv, d)], rng)
    slopes = slopes_for(hq, b if per_seq else None, rng)
    out, lse, _ = ga.flash_attn_func(q, k, v, causal=causal, alibi_slopes=arr(fw, device, slopes),
                                     return_attn_probs=True)
    want, want_lse = ref_dense(to64(q), to64(k), to64(v), 1 / math.sqrt(d), causal_rule(causal),
                               alibi=slopes)
    assert_close(out, want, tol, "out")
    assert_close(lse, want_lse, lse_tol, "lse")
    if not per_seq:  # the same slopes as a [B, H] array (a broadcast view: batch stride 0)
        rows = np.broadcast_to(slopes, (b, hq))
        if fw == "torch":
            rows = torch.from_numpy(slopes).to(device).expand(b, hq)
        again = ga.flash_attn_func(q, k, v, causal=causal, alibi_slopes=rows)
        assert np.array_equal(to64(again), to64(out)), "[H] and its [B, H] broadcast differ"


@pytest.mark.parametrize("fw,dtype,device,tol,lse_tol", FRAMEWORKS)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_dense_alibi_with_softcap_and_window(fw, dtype, device, tol, lse_tol, causal):
    """Soft-capped logits (past the cap) biased after the cap, under a sliding window, at
    Sq != Sk and GQA 4:1."""
    rng = rng_for("alibi-softcap-window", fw, dtype, device, causal)
    b, sq, sk, hq, hkv, d = 2, 45, 77, 8, 2, 64
    q, k = qkv_on(fw, dtype, device, [(b, sq, hq, d), (b, sk, hkv, d)], rng, 6.0)
    (v,) = qkv_on(fw, dtype, device, [(b, sk, hkv, d)], rng)
    slopes = slopes_for(hq, b, rng)
    window = (16, 0 if causal else 5)
    out, lse, _ = ga.flash_attn_func(q, k, v, causal=causal, window_size=window, softcap=8.0,
                                     alibi_slopes=arr(fw, device, slopes), return_attn_probs=True)
    want, want_lse = ref_dense(to64(q), to64(k), to64(v), 1 / math.sqrt(d),
                               lambda a, c: visibility(a, c, causal, window), 8.0, slopes)
    assert_close(out, want, tol, "out")
    assert_close(lse, want_lse, lse_tol * 8, "lse")


def test_lse_is_the_documented_formula():
    """q = 0: every score is 0 but the bias, so lse = log sum_j exp(-slope |i + Sk - Sq - j|)
    over the keys a row sees and out the matching average of v, in closed form, without the
    reference. (flash-attn's causal kernels add slope * j instead: the same out, an lse larger by
    slope * (i + Sk - Sq); ours is the documented formula's.)"""
    rng = rng_for("alibi-lse-formula")
    sq, sk, h, d = 9, 20, 2, 64
    q = np.zeros((1, sq, h, d), np.float32)
    k = make("numpy", "float32", (1, sk, h, d), rng)
    v = make("numpy", "float32", (1, sk, h, d), rng)
    slopes = np.array([0.5, -0.25], np.float32)
    for causal in (False, True):
        out, lse, _ = ga.flash_attn_func(q, k, v, causal=causal, alibi_slopes=slopes,
                                         return_attn_probs=True)
        for hh in range(h):
            for i in range(sq):
                p = i + sk - sq
                j = np.arange(p + 1 if causal else sk)
                bias = -float(slopes[hh]) * np.abs(p - j)
                want_lse = np.log(np.exp(bias).sum())
                assert abs(lse[0, hh, i] - want_lse) <= 2e-5 * max(1, abs(want_lse)), (hh, i)
                w = np.exp(bias - want_lse)
                want_out = (w[:, None] * v[0, j, hh].astype(np.float64)).sum(0)
                assert np.abs(out[0, i, hh] - want_out).max() <= 2e-5, (hh, i)
                if causal:  # flash-attn's causal convention: + slope * j, an lse shifted by
                    flash = np.log(np.exp(float(slopes[hh]) * j).sum())  # slope * p
                    assert abs(flash - (want_lse + float(slopes[hh]) * p)) < 1e-9


def test_steep_slopes_pick_the_nearest_key():
    """A slope near the library's bound (8e28 x 1 / softmax_scale 8 = 6.4e29 would be refused;
    1e28 gives 8e28): every key but the nearest gets a bias of -1e28 per step, so out is the
    nearest key's v and lse its score (the row's key position clamped to the keys)."""
    rng = rng_for("alibi-steep")
    sq, sk, h, d = 12, 7, 2, 64
    q, k, v = (make("numpy", "float32", (1, s, h, d), rng) for s in (sq, sk, sk))
    out, lse, _ = ga.flash_attn_func(q, k, v, alibi_slopes=np.full(h, 1e28, np.float32),
                                     return_attn_probs=True)
    for i in range(sq):
        j = min(max(i + sk - sq, 0), sk - 1)
        for hh in range(h):
            assert np.array_equal(out[0, i, hh], v[0, j, hh]), (i, hh)
            score = float(np.dot(q[0, i, hh].astype(np.float64), k[0, j, hh])) / 8
            dist = abs(i + sk - sq - j)
            assert abs(lse[0, hh, i] - (score - 1e28 * dist)) <= 1e-4 * max(1, 1e28 * dist)


@pytest.mark.parametrize("fw,dtype,device,tol,lse_tol", FRAMEWORKS)
def test_packed_forms_take_alibi(fw, dtype, device, tol, lse_tol):
    """flash_attn_qkvpacked_func / kvpacked_func and their varlen forms pass alibi_slopes on:
    the same result as the unpacked call (bit for bit on the CPU backend)."""
    rng = rng_for("alibi-packed", fw, dtype, device)
    b, s, h, d = 2, 37, 4, 64
    (qkv,) = qkv_on(fw, dtype, device, [(b, s, 3, h, d)], rng)
    slopes = arr(fw, device, slopes_for(h, b, rng))
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    want = to64(ga.flash_attn_func(q, k, v, causal=True, alibi_slopes=slopes))

    def same(got, what):  # the CPU backend: bit for bit; CUDA: within the dtype's tolerance
        got = to64(got).reshape(want.shape)
        if device == "cpu":
            assert np.array_equal(got, want), what
        else:
            assert_close(got, want, tol, what)

    same(ga.flash_attn_qkvpacked_func(qkv, causal=True, alibi_slopes=slopes), "qkvpacked")
    same(ga.flash_attn_kvpacked_func(q, qkv[:, :, 1:], causal=True, alibi_slopes=slopes),
         "kvpacked")
    flat = qkv.reshape(b * s, 3, h, d)
    cu = arr(fw, device, cu_seqlens([s] * b))
    same(ga.flash_attn_varlen_qkvpacked_func(flat, cu, s, causal=True, alibi_slopes=slopes),
         "varlen qkvpacked")
    same(ga.flash_attn_varlen_kvpacked_func(flat[:, 0], flat[:, 1:], cu, cu, s, s, causal=True,
                                            alibi_slopes=slopes), "varlen kvpacked")
    want_ref, _ = ref_dense(to64(q), to64(k), to64(v), 1 / math.sqrt(d), causal_rule(True),
                            alibi=to64(slopes))
    assert_close(want, want_ref, tol, "out")


def test_fp8_attention_and_int8_cache_take_alibi():
    """FP8 q/k/v with descales (flash_attn_func) and an int8 KV cache with scales
    (flash_attn_with_kvcache) against the reference over the dequantized values (numpy: the CPU
    backend; test_cuda_8bit_cache_decode_with_alibi is the CUDA decode kernel's)."""
    from reference import e4m3_bytes, e4m3_decode
    rng = rng_for("alibi-fp8")
    q, k, v = (e4m3_bytes(rng.standard_normal(s) * 2) for s in
               [(2, 33, 4, 64), (2, 50, 2, 64), (2, 50, 2, 64)])
    slopes = slopes_for(4, 2, rng)
    out, lse, _ = ga.flash_attn_func(q, k, v, causal=True, alibi_slopes=slopes, q_descale=0.5,
                                     k_descale=0.25, v_descale=2.0, return_attn_probs=True)
    want, want_lse = ref_dense(e4m3_decode(q) * 0.5, e4m3_decode(k) * 0.25, e4m3_decode(v) * 2,
                               1 / 8, causal_rule(True), alibi=slopes)
    assert_close(out, want, 2e-5, "fp8 out")
    assert_close(lse, want_lse, 2e-5, "fp8 lse")
    qh = make("numpy", "float32", (2, 1, 4, 64), rng)
    kc, vc = (rng.integers(-127, 128, (2, 40, 2, 64)).astype(np.int8) for _ in range(2))
    used = np.array([17, 40], np.int32)
    out, lse = ga.flash_attn_with_kvcache(qh, kc, vc, cache_seqlens=used, k_scale=0.01,
                                          v_scale=0.02, alibi_slopes=slopes[1],
                                          return_softmax_lse=True)
    for b in range(2):
        n = used[b]
        want, want_lse = ref_dense(to64(qh)[b:b + 1], kc[b:b + 1, :n] * 0.01,
                                   vc[b:b + 1, :n] * 0.02, 1 / 8, causal_rule(False),
                                   alibi=slopes[1])
        assert_close(out[b:b + 1], want, 2e-5, f"int8 out of sequence {b}")
        assert_close(lse[b:b + 1], want_lse, 2e-5, f"int8 lse of sequence {b}")


@needs_torch
def test_torch_slopes_that_require_grad_are_read_detached():
    rng = rng_for("alibi-grad")
    q, k, v = (make("torch", "float32", (1, 16, 2, 64), rng) for _ in range(3))
    slopes = torch.tensor([0.5, 0.125], requires_grad=True)
    out = ga.flash_attn_func(q, k, v, alibi_slopes=slopes)
    want = ga.flash_attn_func(q, k, v, alibi_slopes=slopes.detach().clone())
    assert torch.equal(out, want)


@needs_torch
def test_alibi_calls_with_plain_tensors_take_the_fast_path(monkeypatch):
    """Plain float32 slopes of a plain torch call go through the fast path (_fast_forward with
    the slopes), with the general path's results bit for bit: flash_attn_func, and
    flash_attn_with_kvcache without and with an append ([H] and [B, H] slopes); check_indices
    reaches the native call. Slopes the library would not take as they are (float16, a wrong
    shape, a last stride of 2, a batch stride under nheads) take the general path, which refuses
    them before an append writes anything."""
    import gpu_attention.flash_attn_interface as fai

    rng = rng_for("alibi-fast-path")
    q, kc, vc, kn, vn = (make("torch", "float16", s, rng) for s in
                         [(2, 1, 4, 64), (2, 16, 2, 64), (2, 16, 2, 64), (2, 1, 2, 64),
                          (2, 1, 2, 64)])
    used = torch.tensor([5, 15], dtype=torch.int32)
    calls = []
    fast = fai._fast_forward

    def spy(*args, **kwargs):
        calls.append(kwargs.get("alibi_slopes"))
        return fast(*args, **kwargs)

    for slopes in (torch.from_numpy(slopes_for(4)), torch.from_numpy(slopes_for(4, 2, rng))):
        general = slopes.clone().requires_grad_(True)  # read detached, on the general path
        want = ga.flash_attn_func(q, kc, vc, alibi_slopes=general, causal=True)
        want_kv = ga.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=used, alibi_slopes=general)
        kc2, vc2 = kc.clone(), vc.clone()
        want_app = ga.flash_attn_with_kvcache(q, kc2, vc2, k=kn, v=vn, cache_seqlens=used,
                                              alibi_slopes=general)
        monkeypatch.setattr(fai, "_fast_forward", spy)
        calls.clear()
        assert torch.equal(ga.flash_attn_func(q, kc, vc, alibi_slopes=slopes, causal=True), want)
        assert torch.equal(ga.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=used,
                                                      alibi_slopes=slopes), want_kv)
        kc3, vc3 = kc.clone(), vc.clone()
        assert torch.equal(ga.flash_attn_with_kvcache(q, kc3, vc3, k=kn, v=vn, cache_seqlens=used,
                                                      alibi_slopes=slopes), want_app)
        assert torch.equal(kc3, kc2) and torch.equal(vc3, vc2)
        assert len(calls) >= 3 and all(c is slopes for c in calls), calls
        monkeypatch.setattr(fai, "_fast_forward", fast)

    # check_indices=False reaches the native call (the slopes' values are then trusted on CUDA).
    slopes = torch.from_numpy(slopes_for(4))
    seen = []
    monkeypatch.setattr(fai, "_fast_forward",
                        lambda *a, **kw: seen.append(kw.get("check_indices")) or fast(*a, **kw))
    ga.flash_attn_func(q, kc, vc, alibi_slopes=slopes, check_indices=False)
    assert seen == [False], seen

    def refuse(*args, **kwargs):
        raise AssertionError("slopes the library does not take as they are took the fast path")

    monkeypatch.setattr(fai, "_fast_forward", refuse)
    base = torch.from_numpy(slopes_for(8, 2, rng))
    strided = [
        torch.from_numpy(slopes_for(4)).half(), torch.from_numpy(slopes_for(5)),
        torch.from_numpy(slopes_for(4, 3, rng)),
        base[:, ::2],  # last stride 2
        torch.as_strided(base, (2, 4), (1, 1)),  # batch stride 1, under nheads
    ]
    for bad in strided:
        with pytest.raises(ValueError, match="alibi_slopes"):
            ga.flash_attn_func(q, kc, vc, alibi_slopes=bad)
        kc4, vc4 = kc.clone(), vc.clone()
        with pytest.raises(ValueError, match="alibi_slopes"):
            ga.flash_attn_with_kvcache(q, kc4, vc4, k=kn, v=vn, cache_seqlens=used,
                                       alibi_slopes=bad)
        assert torch.equal(kc4, kc) and torch.equal(vc4, vc), "a refused call wrote the caches"


@needs_torch
def test_values_checked_before_an_append_are_named_as_the_library_names_them():
    """_check_alibi_before_append (the CUDA append's value check, a host copy; run here on CPU
    tensors) names a slope as the library does: [b][h] for one row a sequence, [h] for a single
    row, whether (nheads,), (1, nheads) or a row expanded over the batch (batch stride 0)."""
    import gpu_attention.flash_attn_interface as fai

    q = torch.zeros((2, 1, 4, 64), dtype=torch.float16)
    row = torch.tensor([0.5, float("nan"), 0.25, 0.125])
    per_seq = torch.stack([torch.tensor([0.5, 0.5, 0.25, 0.125]), row])
    for slopes, name in ((row, r"alibi_slopes\[1\] is nan"),
                         (row[None], r"alibi_slopes\[1\] is nan"),
                         (row[None].expand(2, 4), r"alibi_slopes\[1\] is nan"),
                         (per_seq, r"alibi_slopes\[1\]\[1\] is nan")):
        with pytest.raises(ValueError, match=name):
            fai._check_alibi_before_append(slopes, q, None, 0.0)
    fai._check_alibi_before_append(per_seq[:1] * 0 + 0.5, q, None, 0.0)  # finite: no error


# ---- the native call: outputs poisoned first -----------------------------------------------------


@pytest.mark.parametrize("per_seq", [False, True], ids=["H", "BH"])
def test_native_call_writes_every_output_element(per_seq):
    """gpu_attention._C.attention_forward into NaN-filled out and lse (the API that takes the
    outputs): every element written and right; a refused call leaves them NaN."""
    rng = rng_for("alibi-native", per_seq)
    b, sq, sk, hq, hkv, d = 2, 77, 50, 4, 2, 64
    q = make("numpy", "float16", (b, sq, hq, d), rng)
    k = make("numpy", "float16", (b, sk, hkv, d), rng)
    v = make("numpy", "float16", (b, sk, hkv, d), rng)
    slopes = slopes_for(hq, b if per_seq else None, rng)
    out = np.full(q.shape, np.nan, np.float16)
    lse = np.full((b, hq, sq), np.nan, np.float32)
    ga._C.attention_forward(q, k, v, out, lse, causal=True, alibi_slopes=slopes)
    want, want_lse = ref_dense(to64(q), to64(k), to64(v), 1 / 8, causal_rule(True), alibi=slopes)
    assert_close(out, want, 2e-3, "out")
    assert_close(lse, want_lse, 1e-3, "lse")
    out[:], lse[:] = np.nan, np.nan
    bad = slopes.copy()
    bad.reshape(-1)[-1] = np.nan
    with pytest.raises(ValueError, match=r"alibi_slopes\[.*\] is nan, must be finite"):
        ga._C.attention_forward(q, k, v, out, lse, causal=True, alibi_slopes=bad)
    assert np.isnan(out).all() and np.isnan(lse).all(), "a refused call wrote its outputs"


def test_native_varlen_call_writes_every_output_element():
    rng = rng_for("alibi-native-varlen")
    lens_q, lens_k = [1, 30, 0, 12], [1, 30, 4, 40]
    cq, ck = cu_seqlens(lens_q), cu_seqlens(lens_k)
    hq, hkv, d = 4, 1, 64
    q = make("numpy", "float32", (sum(lens_q), hq, d), rng)
    k = make("numpy", "float32", (sum(lens_k), hkv, d), rng)
    v = make("numpy", "float32", (sum(lens_k), hkv, d), rng)
    slopes = slopes_for(hq, len(lens_q), rng)
    out = np.full(q.shape, np.nan, np.float32)
    lse = np.full((hq, sum(lens_q)), np.nan, np.float32)
    ga._C.attention_forward(q, k, v, out, lse, cq, ck, 30, 40, alibi_slopes=slopes)
    want, want_lse = ref_varlen(to64(q), to64(k), to64(v), cq, ck, 1 / 8, causal_rule(False),
                                alibi=slopes)
    assert_close(out, want, 2e-5, "out")
    assert_close(lse, want_lse, 2e-5, "lse")


# ---- flash_attn_varlen_func ---------------------------------------------------------------------


@pytest.mark.parametrize("fw,dtype,device,tol,lse_tol", FRAMEWORKS)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("per_seq", [False, True], ids=["H", "BH"])
def test_varlen_alibi_matches_reference(fw, dtype, device, tol, lse_tol, causal, per_seq):
    """Sequences of 1 query and 1 key, of 77 each, Sq < Sk, Sq > Sk and none (causal: rows that
    see no key), GQA 4:1, positions counted per sequence."""
    rng = rng_for("alibi-varlen", fw, dtype, device, causal, per_seq)
    lens_q, lens_k = [1, 77, 5, 0, 33, 40], [1, 77, 130, 3, 2, 40]
    cq, ck = cu_seqlens(lens_q), cu_seqlens(lens_k)
    hq, hkv, d = 8, 2, 64
    q, k, v = qkv_on(fw, dtype, device, [(sum(lens_q), hq, d), (sum(lens_k), hkv, d),
                                         (sum(lens_k), hkv, d)], rng)
    slopes = slopes_for(hq, len(lens_q) if per_seq else None, rng)
    out, lse, _ = ga.flash_attn_varlen_func(q, k, v, arr(fw, device, cq), arr(fw, device, ck), 77,
                                            130, causal=causal,
                                            alibi_slopes=arr(fw, device, slopes),
                                            return_attn_probs=True)
    want, want_lse = ref_varlen(to64(q), to64(k), to64(v), cq, ck, 1 / math.sqrt(d),
                                causal_rule(causal), alibi=slopes)
    assert_close(out, want, tol, "out")
    assert_close(lse, want_lse, lse_tol, "lse")


@pytest.mark.parametrize("fw,dtype,device,tol,lse_tol", FRAMEWORKS)
def test_varlen_alibi_with_window_and_softcap(fw, dtype, device, tol, lse_tol):
    rng = rng_for("alibi-varlen-window", fw, dtype, device)
    lens_q, lens_k = [5, 0, 70, 1], [9, 3, 70, 40]
    cq, ck = cu_seqlens(lens_q), cu_seqlens(lens_k)
    q, k = qkv_on(fw, dtype, device, [(sum(lens_q), 4, 64), (sum(lens_k), 1, 64)], rng, 6.0)
    (v,) = qkv_on(fw, dtype, device, [(sum(lens_k), 1, 64)], rng)
    slopes = slopes_for(4, len(lens_q), rng)
    out, lse, _ = ga.flash_attn_varlen_func(q, k, v, arr(fw, device, cq), arr(fw, device, ck), 70,
                                            70, causal=True, window_size=(16, 0), softcap=8.0,
                                            alibi_slopes=arr(fw, device, slopes),
                                            return_attn_probs=True)
    want, want_lse = ref_varlen(to64(q), to64(k), to64(v), cq, ck, 1 / 8.0,
                                lambda a, c: visibility(a, c, True, (16, 0)), 8.0, slopes)
    assert_close(out, want, tol, "out")
    assert_close(lse, want_lse, lse_tol * 8, "lse")


# ---- flash_attn_with_kvcache --------------------------------------------------------------------


@pytest.mark.parametrize("fw,dtype,device,tol", KVCACHE_FRAMEWORKS)
@pytest.mark.parametrize("paged", [False, True], ids=["dense", "paged"])
@pytest.mark.parametrize("sq", [1, 5], ids=["decode", "sq5"])
@pytest.mark.parametrize("per_seq", [False, True], ids=["H", "BH"])
def test_kvcache_alibi_matches_reference(fw, dtype, device, tol, paged, sq, per_seq):
    """k/v appended at cache_seqlens, then attended with the slopes over the cache as it ends up
    (GQA 4:1; one query: the split-KV decode kernel's shape;
    paged: pages of 16 keys in a shuffled pool), causal for sq > 1. The caches change only in the
    appended rows."""
    rng = rng_for("alibi-kvcache", fw, dtype, device, paged, sq, per_seq)
    B, Hq, Hkv, D, cap, page = 3, 8, 2, 128, 64, 16
    used = np.array([10, 0, cap - sq], np.int32)
    q, kn, vn = qkv_on(fw, dtype, device, [(B, sq, Hq, D), (B, sq, Hkv, D), (B, sq, Hkv, D)], rng)
    if paged:
        kc, vc = qkv_on(fw, dtype, device, [(B * cap // page, page, Hkv, D)] * 2, rng)
        perm = rng.permutation(B * cap // page).astype(np.int32).reshape(B, cap // page)
        table = int32_on(fw, device, perm)

        def logical(pool):  # [B, cap, Hkv, D]: each sequence's pages in table order
            return to64(pool)[perm].reshape(B, cap, Hkv, D)
    else:
        kc, vc = qkv_on(fw, dtype, device, [(B, cap, Hkv, D)] * 2, rng)
        table = None
        logical = to64
    k0, v0 = logical(kc), logical(vc)
    slopes = slopes_for(Hq, B if per_seq else None, rng)
    causal = sq > 1
    out, lse = ga.flash_attn_with_kvcache(q, kc, vc, k=kn, v=vn,
                                          cache_seqlens=int32_on(fw, device, used),
                                          block_table=table, causal=causal,
                                          alibi_slopes=arr(fw, device, slopes),
                                          return_softmax_lse=True)
    k1, v1 = logical(kc), logical(vc)
    for b in range(B):
        k0[b, used[b]:used[b] + sq] = to64(kn)[b]
        v0[b, used[b]:used[b] + sq] = to64(vn)[b]
    assert np.array_equal(k1, k0) and np.array_equal(v1, v0), "the caches differ"
    for b in range(B):
        n = used[b] + sq
        row = slopes if not per_seq else slopes[b:b + 1]
        want, want_lse = ref_dense(to64(q)[b:b + 1], k1[b:b + 1, :n], v1[b:b + 1, :n],
                                   1 / math.sqrt(D), causal_rule(causal), alibi=row)
        assert_close(out[b:b + 1], want, tol, f"out of sequence {b}")
        assert_close(lse[b:b + 1], want_lse, tol, f"lse of sequence {b}")


@pytest.mark.parametrize("fw,dtype,device,tol", KVCACHE_FRAMEWORKS)
def test_kvcache_alibi_with_leftpad_and_batch_idx(fw, dtype, device, tol):
    """cache_leftpad: keys (and distances) count from the pad; cache_batch_idx: sequence b's cache
    row and its slopes row b."""
    rng = rng_for("alibi-kvcache-leftpad", fw, dtype, device)
    B, Bc, Hq, Hkv, D, cap, sq = 3, 5, 4, 1, 64, 40, 3
    rows, used, pad = [4, 0, 2], np.array([7, 0, 30], np.int32), np.array([3, 0, 12], np.int32)
    q, kn, vn, kc, vc = qkv_on(fw, dtype, device, [(B, sq, Hq, D), (B, sq, Hkv, D),
                                                   (B, sq, Hkv, D), (Bc, cap, Hkv, D),
                                                   (Bc, cap, Hkv, D)], rng)
    slopes = slopes_for(Hq, B, rng)
    out, lse = ga.flash_attn_with_kvcache(q, kc, vc, k=kn, v=vn,
                                          cache_seqlens=int32_on(fw, device, used),
                                          cache_batch_idx=int32_on(fw, device, rows),
                                          cache_leftpad=int32_on(fw, device, pad), causal=True,
                                          alibi_slopes=arr(fw, device, slopes),
                                          return_softmax_lse=True)
    kc1, vc1 = to64(kc), to64(vc)
    for b, r in enumerate(rows):
        keys = slice(pad[b], used[b] + sq)
        want, want_lse = ref_dense(to64(q)[b:b + 1], kc1[r:r + 1, keys], vc1[r:r + 1, keys],
                                   1 / math.sqrt(D), causal_rule(True), alibi=slopes[b:b + 1])
        assert_close(out[b:b + 1], want, tol, f"out of sequence {b}")
        assert_close(lse[b:b + 1], want_lse, tol, f"lse of sequence {b}")


@needs_cuda
@pytest.mark.parametrize("dtype,tol", [("float16", 2e-3), ("bfloat16", 1.6e-2)])
@pytest.mark.parametrize("check_indices", [True, False])
def test_cuda_paged_decode_with_alibi(dtype, tol, check_indices):
    """The serving call: a paged decode step (one query, GQA 8:1, pages of 16 keys in a shuffled
    pool) with an append and [B, H] slopes on the GPU, against the reference; with
    check_indices=False the slopes are trusted (no host copy)."""
    rng = rng_for("alibi-cuda-decode", dtype, check_indices)
    B, Hq, Hkv, D, page, pages = 4, 16, 2, 128, 16, 8
    used = np.array([0, 17, 100, 127], np.int32)
    dev = "cuda"
    q, kn, vn = qkv_on("torch", dtype, dev, [(B, 1, Hq, D), (B, 1, Hkv, D), (B, 1, Hkv, D)], rng)
    kpool, vpool = qkv_on("torch", dtype, dev, [(B * pages, page, Hkv, D)] * 2, rng)
    perm = rng.permutation(B * pages).astype(np.int32).reshape(B, pages)
    slopes = slopes_for(Hq, B, rng)
    out, lse = ga.flash_attn_with_kvcache(q, kpool, vpool, k=kn, v=vn,
                                          cache_seqlens=int32_on("torch", dev, used),
                                          block_table=int32_on("torch", dev, perm),
                                          alibi_slopes=torch.from_numpy(slopes).to(dev),
                                          return_softmax_lse=True, check_indices=check_indices)
    torch.cuda.synchronize()
    kp, vp = to64(kpool), to64(vpool)
    for b in range(B):
        n = used[b] + 1
        k_seq = kp[perm[b]].reshape(pages * page, Hkv, D)[:n]
        v_seq = vp[perm[b]].reshape(pages * page, Hkv, D)[:n]
        assert np.array_equal(k_seq[-1], to64(kn)[b, 0]), "the new key is not in its page"
        want, want_lse = ref_dense(to64(q)[b:b + 1], k_seq[None], v_seq[None], 1 / math.sqrt(D),
                                   causal_rule(False), alibi=slopes[b:b + 1])
        assert_close(out[b:b + 1], want, tol, f"out of sequence {b}")
        assert_close(lse[b:b + 1], want_lse, tol, f"lse of sequence {b}")


@needs_cuda
@pytest.mark.parametrize("cache", ["int8", "float8_e4m3fn"])
@pytest.mark.parametrize("dtype,tol", [("float16", 2e-3), ("bfloat16", 1.6e-2)])
def test_cuda_8bit_cache_decode_with_alibi(cache, dtype, tol):
    """A decode step over an 8-bit cache with per-KV-head scales (read in place by the 8-bit decode
    kernel), GQA 4:1, [B, H] slopes, against the reference over the dequantized values."""
    rng = rng_for("alibi-cuda-8bit", cache, dtype)
    B, Hq, Hkv, D, S = 3, 8, 2, 128, 300
    used = np.array([1, 150, 300], np.int32)
    dev = "cuda"
    (q,) = qkv_on("torch", dtype, dev, [(B, 1, Hq, D)], rng)
    if cache == "int8":
        kc, vc = (torch.from_numpy(rng.integers(-127, 128, (B, S, Hkv, D)).astype(np.int8)).to(dev)
                  for _ in range(2))
    else:
        kc, vc = (torch.from_numpy(rng.standard_normal((B, S, Hkv, D)) * 4).to(dev).to(
            torch.float8_e4m3fn) for _ in range(2))
    k_scale = np.array([0.02, 0.05], np.float32)
    v_scale = np.array([0.03, 0.01], np.float32)
    slopes = slopes_for(Hq, B, rng)
    out, lse = ga.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=int32_on("torch", dev, used),
                                          k_scale=torch.from_numpy(k_scale).to(dev),
                                          v_scale=torch.from_numpy(v_scale).to(dev),
                                          alibi_slopes=torch.from_numpy(slopes).to(dev),
                                          return_softmax_lse=True)
    torch.cuda.synchronize()
    k64 = kc.float().cpu().numpy().astype(np.float64) * k_scale[None, None, :, None]
    v64 = vc.float().cpu().numpy().astype(np.float64) * v_scale[None, None, :, None]
    for b in range(B):
        n = used[b]
        want, want_lse = ref_dense(to64(q)[b:b + 1], k64[b:b + 1, :n], v64[b:b + 1, :n],
                                   1 / math.sqrt(D), causal_rule(False), alibi=slopes[b:b + 1])
        assert_close(out[b:b + 1], want, tol, f"out of sequence {b}")
        assert_close(lse[b:b + 1], want_lse, tol, f"lse of sequence {b}")


# ---- errors ------------------------------------------------------------------------------------


def _dense_inputs(fw="numpy", device="cpu"):
    rng = rng_for("alibi-errors", fw)
    return qkv_on(fw, "float16", device, [(2, 16, 4, 64), (2, 16, 2, 64), (2, 16, 2, 64)], rng)


def _bad_slopes(fw, device):
    """(slopes, exception, regex) for every bad slope array of a call with batch 2, Hq 4."""
    ok = slopes_for(4)
    base = [
        (ok.astype(np.float16), ValueError, r"alibi_slopes has dtype float16, expected float32"),
        (ok.astype(np.float64), ValueError, r"alibi_slopes has dtype float64, expected float32"),
        (np.arange(4, dtype=np.int32), ValueError, r"alibi_slopes has dtype int32, expected "
                                                   r"float32"),
        (slopes_for(5), ValueError,
         r"alibi_slopes has shape \[5\], expected \[Hq = 4\] or \[B = 2, Hq = 4\]"),
        (slopes_for(4, 3), ValueError, r"alibi_slopes has shape \[3, 4\], expected"),
        (slopes_for(5, 2), ValueError, r"alibi_slopes has shape \[2, 5\], expected"),
        (slopes_for(4, 2)[None], ValueError, r"alibi_slopes has shape \[1, 2, 4\], expected"),
        (slopes_for(4, 2).T.copy(), ValueError, r"alibi_slopes has shape \[4, 2\], expected"),
        (np.zeros((0,), np.float32), ValueError, r"alibi_slopes has shape \[0\], expected"),
        (np.array(0.5, np.float32), ValueError, r"alibi_slopes has 0 dimensions"),
        (np.ones((4, 2), np.float32)[:, 0], ValueError,
         r"alibi_slopes last-dimension stride is 2, must be 1"),
        (np.array([0.5, np.nan, 0.25, 0.1], np.float32), ValueError,
         r"alibi_slopes\[1\] is nan, must be finite"),
        (np.array([[0.5, 0.5, 0.25, 0.1], [0.5, 0.5, 0.25, -np.inf]], np.float32), ValueError,
         r"alibi_slopes\[1\]\[3\] is -inf, must be finite"),
        (np.array([0.5, 0.5, 1e29, 0.1], np.float32), ValueError,
         r"alibi_slopes\[2\] is 1.00000002e\+29: \|slope\| x max\(log2\(e\), 1 / softmax_scale\) "
         r"must be at most 1.58e29"),
        (np.array([0.5, -2e28, 0.25, 0.1], np.float32), ValueError,  # 2e28 x 8 = 1.6e29
         r"alibi_slopes\[1\] is -1.99999989e\+28"),
    ]
    if fw == "numpy":
        return base
    out = []
    for x, error, words in base:
        if x.ndim == 1 and x.shape[0] == 4 and x.dtype == np.float32 and "stride" in words:
            t = torch.ones((4, 2), dtype=torch.float32, device=device)[:, 0]
        else:
            t = torch.from_numpy(x.copy()).to(device)  # 0-d stays 0-d
        out.append((t, error, words))
    return out


def _numpy_bad_slopes():
    return _bad_slopes("numpy", "cpu")


@pytest.mark.parametrize("case", range(len(_numpy_bad_slopes())))
@pytest.mark.parametrize("fw", ["numpy", pytest.param("torch", marks=needs_torch)])
def test_bad_slopes_are_named_by_every_function(fw, case):
    q, k, v = _dense_inputs(fw)
    slopes, error, words = _bad_slopes(fw, "cpu")[case]
    with pytest.raises(error, match=words):
        ga.flash_attn_func(q, k, v, alibi_slopes=slopes)
    with pytest.raises(error, match=words):
        ga.flash_attn_func(q, k, v, causal=True, window_size=(3, 0), alibi_slopes=slopes,
                           return_attn_probs=True)
    stack = np.stack if fw == "numpy" else (lambda xs, axis: torch.stack(xs, dim=axis))
    qkv = stack([k, k, v], axis=2)  # 2 heads: a [4] slope array is then of another shape
    with pytest.raises(ValueError, match="alibi_slopes"):
        ga.flash_attn_qkvpacked_func(qkv, alibi_slopes=slopes)
    with pytest.raises(error, match=words):
        ga.flash_attn_kvpacked_func(q, qkv[:, :, 1:], alibi_slopes=slopes)
    cu = arr(fw, "cpu", cu_seqlens([16, 16]))
    flat = [x.reshape(32, *x.shape[2:]) for x in (q, k, v)]
    varlen_words = words.replace(r"\[B = 2", r"\[sequences = 2")
    with pytest.raises(error, match=varlen_words):
        ga.flash_attn_varlen_func(*flat, cu, cu, 16, 16, alibi_slopes=slopes)
    with pytest.raises(error, match=words):
        ga.flash_attn_with_kvcache(q, k, v, alibi_slopes=slopes)


@pytest.mark.parametrize("case", range(len(_numpy_bad_slopes())))
@pytest.mark.parametrize("fw", ["numpy", pytest.param("torch", marks=needs_torch)])
@pytest.mark.parametrize("paged", [False, True], ids=["dense", "paged"])
def test_bad_slopes_leave_the_kv_cache_untouched(fw, case, paged):
    """flash_attn_with_kvcache refuses a bad slope array before it appends k/v."""
    rng = rng_for("alibi-kvcache-errors", fw, paged)
    q, kn, kc, vc = qkv_on(fw, "float16", "cpu", [(2, 1, 4, 64), (2, 1, 2, 64), (2, 32, 2, 64),
                                                 (2, 32, 2, 64)], rng)
    table = None
    if paged:
        kc, vc = kc.reshape(8, 8, 2, 64), vc.reshape(8, 8, 2, 64)
        table = int32_on(fw, "cpu", np.arange(8).reshape(2, 4))
    before = [to64(kc), to64(vc)]
    slopes, error, words = _bad_slopes(fw, "cpu")[case]
    with pytest.raises(error, match=words):
        ga.flash_attn_with_kvcache(q, kc, vc, k=kn, v=kn,
                                   cache_seqlens=int32_on(fw, "cpu", [3, 30]), block_table=table,
                                   alibi_slopes=slopes)
    assert np.array_equal(to64(kc), before[0]) and np.array_equal(to64(vc), before[1]), \
        "a refused call appended"


def test_slope_bound_follows_the_softcap():
    """With a soft-cap the bound is |slope| x max(log2(e), 1 / softcap): a cap of 0.01 refuses
    2e27 (x 100 = 2e29) that the uncapped call (1 / scale = 8) takes."""
    q, k, v = _dense_inputs()
    slopes = np.array([0.5, 2e27, 0.25, 0.1], np.float32)
    ga.flash_attn_func(q, k, v, alibi_slopes=slopes)
    with pytest.raises(ValueError, match=r"alibi_slopes\[1\] is 1.99999998e\+27: \|slope\| x "
                                         r"max\(log2\(e\), 1 / softcap\)"):
        ga.flash_attn_func(q, k, v, softcap=0.01, alibi_slopes=slopes)
    # A large softmax_scale leaves log2(e) the larger unit: 1e29 x 1.4427 = 1.44e29 is taken.
    ga.flash_attn_func(q, k, v, softmax_scale=10.0, alibi_slopes=np.full(4, 1e29, np.float32))
    with pytest.raises(ValueError, match=r"alibi_slopes\[0\] is 1.19999998e\+29"):
        ga.flash_attn_func(q, k, v, softmax_scale=10.0,
                           alibi_slopes=np.full(4, 1.2e29, np.float32))


def test_slope_arrays_of_another_kind_are_type_errors():
    q, k, v = _dense_inputs()
    for slopes, words in (([0.5] * 4, "alibi_slopes must be a torch.Tensor or a numpy.ndarray, "
                                      "got list"),
                          (0.5, "alibi_slopes must be a torch.Tensor or a numpy.ndarray, got "
                                "float"),
                          ("0.5", "alibi_slopes must be a torch.Tensor or a numpy.ndarray, got "
                                  "str")):
        with pytest.raises(TypeError, match=words):
            ga.flash_attn_func(q, k, v, alibi_slopes=slopes)
        with pytest.raises(TypeError, match=words):
            ga.flash_attn_with_kvcache(q, k, v, k=k[:, :1], v=v[:, :1],
                                       cache_seqlens=np.array([1, 2], np.int32),
                                       alibi_slopes=slopes)


@needs_torch
def test_slopes_of_another_framework_are_type_errors():
    q, k, v = _dense_inputs()
    tq, tk, tv = _dense_inputs("torch")
    with pytest.raises(TypeError, match="alibi_slopes is a torch array but q is a numpy array"):
        ga.flash_attn_func(q, k, v, alibi_slopes=torch.from_numpy(slopes_for(4)))
    with pytest.raises(TypeError, match="alibi_slopes is a numpy array but q is a torch array"):
        ga.flash_attn_func(tq, tk, tv, alibi_slopes=slopes_for(4))
    cu = cu_seqlens([16, 16])
    with pytest.raises(TypeError, match="alibi_slopes is a numpy array but q is a torch array"):
        ga.flash_attn_varlen_func(tq.reshape(32, 4, 64), tk.reshape(32, 2, 64),
                                  tv.reshape(32, 2, 64), torch.from_numpy(cu),
                                  torch.from_numpy(cu), 16, 16, alibi_slopes=slopes_for(4))
    before = tk.clone()
    with pytest.raises(TypeError, match="alibi_slopes is a numpy array but q is a torch array"):
        ga.flash_attn_with_kvcache(tq[:, :1], tk, tv, k=tk[:, :1].clone(), v=tv[:, :1].clone(),
                                   cache_seqlens=torch.tensor([1, 2], dtype=torch.int32),
                                   alibi_slopes=slopes_for(4))
    assert torch.equal(tk, before), "a refused call appended"


def test_numpy_slopes_of_other_layouts():
    """Numpy arrays that DLPack cannot carry are named; any stride >= 0 of the batch dimension
    (a broadcast too) is taken; an overlapping one, a negative one and a non-native byte order
    are named."""
    q, k, v = _dense_inputs()
    rows = slopes_for(4, 2)
    want = ga.flash_attn_func(q, k, v, alibi_slopes=rows)
    spaced = np.zeros((2, 7), np.float32)
    spaced[:, 2:6] = rows
    assert np.array_equal(ga.flash_attn_func(q, k, v, alibi_slopes=spaced[:, 2:6]), want)
    same = np.broadcast_to(rows[0], (2, 4))
    assert np.array_equal(ga.flash_attn_func(q, k, v, alibi_slopes=same),
                          ga.flash_attn_func(q, k, v, alibi_slopes=rows[0]))
    overlap = np.lib.stride_tricks.as_strided(np.arange(8, dtype=np.float32) / 8, (2, 4), (4, 4))
    with pytest.raises(ValueError, match="alibi_slopes has batch stride 1: must be 0 or at least "
                                         "Hq = 4"):
        ga.flash_attn_func(q, k, v, alibi_slopes=overlap)
    with pytest.raises(ValueError, match="alibi_slopes last-dimension stride is -1"):
        ga.flash_attn_func(q, k, v, alibi_slopes=slopes_for(4)[::-1])
    with pytest.raises(ValueError, match="alibi_slopes dtype >f4 is not in the machine's byte "
                                         "order"):
        ga.flash_attn_func(q, k, v, alibi_slopes=slopes_for(4).astype(">f4"))
    packed = np.zeros(4, dtype=[("a", np.uint8), ("s", np.float32)])
    with pytest.raises(ValueError, match=r"alibi_slopes has byte strides \(5,\)"):
        ga.flash_attn_func(q, k, v, alibi_slopes=np.ndarray((4,), np.float32, packed.data, 1,
                                                            (5,)))
    # One head: a single slope's stride is never stepped over.
    one = np.ones((1, 3), np.float32)[:, ::3] * 0.5
    q1, k1, v1 = (x[:, :, :1] for x in (q, k, v))
    assert np.array_equal(ga.flash_attn_func(q1, k1, v1, alibi_slopes=one[0]),
                          ga.flash_attn_func(q1, k1, v1, alibi_slopes=np.array([0.5], np.float32)))


@needs_cuda
def test_cuda_slopes_on_another_device_and_bad_values():
    """CUDA q: slopes on the host are named (the library: another device than q's); a slope that
    is not finite is found on a host copy, before anything is appended to the cache."""
    q, k, v = _dense_inputs("torch", "cuda")
    with pytest.raises(ValueError, match="alibi_slopes"):
        ga.flash_attn_func(q, k, v, alibi_slopes=torch.from_numpy(slopes_for(4)))
    bad = torch.tensor([0.5, float("nan"), 0.25, 0.1], device="cuda")
    with pytest.raises(ValueError, match=r"alibi_slopes\[1\] is nan, must be finite"):
        ga.flash_attn_func(q, k, v, alibi_slopes=bad)
    before = [k.clone(), v.clone()]
    for slopes in (bad, torch.tensor([0.5, 0.5, 1e29, 0.1], device="cuda"),
                   torch.from_numpy(slopes_for(4))):
        with pytest.raises(ValueError, match="alibi_slopes"):
            ga.flash_attn_with_kvcache(q[:, :1], k, v, k=k[:, :1].clone(), v=v[:, :1].clone(),
                                       cache_seqlens=torch.tensor([1, 2], dtype=torch.int32,
                                                                  device="cuda"),
                                       alibi_slopes=slopes)
        assert torch.equal(k, before[0]) and torch.equal(v, before[1]), "a refused call appended"
    good = torch.from_numpy(slopes_for(4)).cuda()
    want = ga.flash_attn_func(q, k, v, alibi_slopes=good)
    got = ga.flash_attn_func(q, k, v, alibi_slopes=good, check_indices=False)
    assert torch.equal(got, want)


@needs_torch
@pytest.mark.parametrize("scale,softcap", [(None, 0.0), (10.0, 0.0), (0.01, 0.0), (None, 0.01),
                                           (0.3, 30.0)])
def test_pre_append_check_agrees_with_the_library(scale, softcap):
    """flash_attn_with_kvcache's check of CUDA slopes before it appends (the library reads device
    values only when the attention runs, after the append) refuses exactly what the library's
    own check refuses, with its message: here against the CPU backend's, at float32 neighbours
    of the bound, on host tensors (the check itself only copies the slopes to the host)."""
    import gpu_attention.flash_attn_interface as fai
    q, k, v = (x.float() for x in _dense_inputs("torch"))
    u = max(1.4426950408889634, 1 / (softcap if softcap else (scale or 1 / 8)))
    edge = np.float32(3.4028234663852886e38 / 2**31 / u)
    values = [0.5, -0.0, np.nan, np.inf, -np.inf, edge, -edge, 2 * edge, np.float32(1e-30)]
    up = down = edge
    for _ in range(3):  # float32 neighbours of the bound on both sides
        up, down = np.nextafter(up, np.float32(np.inf)), np.nextafter(down, np.float32(0))
        values += [up, down, -up]
    verdicts = set()
    for x in values:
        slopes = torch.tensor([0.25, float(x), 0.5, 0.125], dtype=torch.float32)
        try:
            ga.flash_attn_func(q, k, v, softmax_scale=scale, softcap=softcap, alibi_slopes=slopes)
            library = None
        except ValueError as e:
            library = str(e).split(": ", 1)[1]
        try:
            fai._check_alibi_before_append(slopes, q, scale, softcap)
            ours = None
        except ValueError as e:
            ours = str(e).split(": ", 1)[1]
        assert ours == library, f"slope {x!r}: {ours!r} != the library's {library!r}"
        verdicts.add(library is None)
    assert verdicts == {True, False}
    rows = torch.tensor([[0.25, 0.5, 0.5, 0.125], [0.25, 0.5, float("nan"), 0.125]])
    with pytest.raises(ValueError, match=r"^flash_attn_with_kvcache: alibi_slopes\[1\]\[2\] is "
                                         r"nan, must be finite$"):
        fai._check_alibi_before_append(rows, q, scale, softcap)
