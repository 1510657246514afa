"""Logit soft-capping (softcap > 0, as flash-attn): softcap * tanh(q.k * scale / softcap) before
the softmax, against the float64 reference, through flash_attn_func, flash_attn_varlen_func and
flash_attn_with_kvcache (appended, paged, decode-shaped), with logits large enough that the cap
bends them; on numpy, torch CPU and CUDA."""
import math

import numpy as np
import pytest

import gpu_attention as ga
from reference import (assert_close, causal_rule, cu_seqlens, make, needs_cuda, needs_torch,
                       ref_dense, ref_varlen, rng_for, to64, torch, visibility)

# (framework, dtype, device, tolerance on out, on lse)
FRAMEWORKS = [
    ("numpy", "float16", "cpu", 2e-3, 1e-3),
    ("numpy", "float32", "cpu", 2e-5, 2e-5),
    pytest.param("torch", "bfloat16", "cpu", 1.6e-2, 1e-2, marks=needs_torch),
    pytest.param("torch", "float16", "cuda", 2e-3, 1e-3, marks=needs_cuda),
    pytest.param("torch", "bfloat16", "cuda", 1.6e-2, 1e-2, marks=needs_cuda),
]


def big(fw, dtype, device, shape, rng, scale=6.0):
    """Random values times `scale` (logits of q.k/sqrt(D) ~ scale^2 sigma: past the caps)."""
    x = make(fw, dtype, shape, rng)
    x = x * scale if fw == "numpy" else (x * scale).to(x.dtype)
    return x if fw == "numpy" else x.to(device)


@pytest.mark.parametrize("fw,dtype,device,tol,lse_tol", FRAMEWORKS)
@pytest.mark.parametrize("shape", [(2, 77, 77, 4, 4, 64), (1, 33, 130, 8, 2, 128),
                                   (1, 40, 40, 2, 1, 256)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("softcap", [5.0, 30.0])
def test_dense_softcap_matches_reference(fw, dtype, device, tol, lse_tol, shape, causal, softcap):
    b, sq, sk, hq, hkv, d = shape
    rng = rng_for("softcap", fw, dtype, device, shape, causal, softcap)
    q = big(fw, dtype, device, (b, sq, hq, d), rng)
    k = big(fw, dtype, device, (b, sk, hkv, d), rng)
    v = big(fw, dtype, device, (b, sk, hkv, d), rng, 1.0)
    out, lse, _ = ga.flash_attn_func(q, k, v, causal=causal, softcap=softcap,
                                     return_attn_probs=True)
    want, want_lse = ref_dense(to64(q), to64(k), to64(v), 1 / math.sqrt(d), causal_rule(causal),
                               softcap)
    assert_close(out, want, tol, "out")
    assert_close(lse, want_lse, lse_tol * softcap, "lse")


@pytest.mark.parametrize("fw,dtype,device,tol,lse_tol", FRAMEWORKS)
def test_varlen_window_softcap_matches_reference(fw, dtype, device, tol, lse_tol):
    rng = rng_for("softcap-varlen", fw, dtype, device)
    lens_q, lens_k = [5, 0, 70, 1], [9, 3, 70, 40]
    cq, ck = cu_seqlens(lens_q), cu_seqlens(lens_k)
    q = big(fw, dtype, device, (sum(lens_q), 4, 64), rng)
    k = big(fw, dtype, device, (sum(lens_k), 2, 64), rng)
    v = big(fw, dtype, device, (sum(lens_k), 2, 64), rng, 1.0)
    cu = (cq, ck) if fw == "numpy" else tuple(torch.from_numpy(c).to(device) for c in (cq, ck))
    out, lse, _ = ga.flash_attn_varlen_func(q, k, v, *cu, 70, 70, causal=True,
                                            window_size=(16, 0), softcap=8.0,
                                            return_attn_probs=True)
    want, want_lse = ref_varlen(to64(q), to64(k), to64(v), cq, ck, 1 / 8.0,
                                lambda a, b: visibility(a, b, True, (16, 0)), 8.0)
    assert_close(out, want, tol, "out")
    assert_close(lse, want_lse, lse_tol * 8, "lse")


@pytest.mark.parametrize("fw,dtype,device,tol,lse_tol", FRAMEWORKS)
@pytest.mark.parametrize("paged", [False, True], ids=["dense", "paged"])
def test_kvcache_softcap_matches_reference(fw, dtype, device, tol, lse_tol, paged):
    """A decode-shaped call (one query row, GQA) with an append: the decode kernel runs it on
    CUDA, over the cache as it ends up."""
    rng = rng_for("softcap-kvcache", fw, dtype, device, paged)
    B, Hq, Hkv, D, cap = 2, 8, 2, 128, 64
    used = np.array([10, 50], np.int32)
    q = big(fw, dtype, device, (B, 1, Hq, D), rng)
    kn = big(fw, dtype, device, (B, 1, Hkv, D), rng)
    vn = big(fw, dtype, device, (B, 1, Hkv, D), rng, 1.0)
    kc = big(fw, dtype, device, (B, cap, Hkv, D), rng)
    vc = big(fw, dtype, device, (B, cap, Hkv, D), rng, 1.0)
    lens = used if fw == "numpy" else torch.from_numpy(used).to(device)
    table = None
    kp, vp = kc, vc
    if paged:
        kp, vp = kc.reshape(B * 4, 16, Hkv, D), vc.reshape(B * 4, 16, Hkv, D)
        bt = np.arange(B * 4, dtype=np.int32).reshape(B, 4)
        table = bt if fw == "numpy" else torch.from_numpy(bt).to(device)
    out, lse = ga.flash_attn_with_kvcache(q, kp, vp, k=kn, v=vn, cache_seqlens=lens,
                                          block_table=table, softcap=20.0,
                                          return_softmax_lse=True)
    kc64, vc64 = to64(kc).reshape(B, cap, Hkv, D), to64(vc).reshape(B, cap, Hkv, D)
    for b in range(B):
        n = used[b] + 1
        want, want_lse = ref_dense(to64(q)[b:b + 1], kc64[b:b + 1, :n], vc64[b:b + 1, :n],
                                   1 / math.sqrt(D), causal_rule(False), 20.0)
        assert_close(out[b:b + 1], want, tol, f"out of sequence {b}")
        assert_close(lse[b:b + 1], want_lse, lse_tol * 20, f"lse of sequence {b}")


def test_softcap_bends_only_large_logits():
    rng = rng_for("softcap-bends")
    q = make("numpy", "float32", (1, 16, 2, 64), rng) * 6
    k = make("numpy", "float32", (1, 16, 2, 64), rng) * 6
    v = make("numpy", "float32", (1, 16, 2, 64), rng)
    plain = ga.flash_attn_func(q, k, v)
    capped = ga.flash_attn_func(q, k, v, softcap=3.0)
    loose = ga.flash_attn_func(q, k, v, softcap=1e7)
    assert np.abs(plain - capped).max() > 0.1, "a cap of 3 left large logits unchanged"
    assert np.abs(plain - loose).max() < 1e-4, "a cap far above every logit changed the result"


@pytest.mark.parametrize("quant", ["int8", "e4m3"])
def test_quantized_cache_softcap_matches_reference(quant):
    """A soft-capped call over an 8-bit cache (decode-shaped: the 8-bit decode kernel on CUDA,
    the CPU backend's scaled loads here) against the reference over the dequantized keys."""
    from reference import e4m3_decode
    rng = rng_for("softcap-q8", quant)
    B, Hq, Hkv, D, cap = 2, 4, 2, 64, 40
    q = make("numpy", "float32", (B, 1, Hq, D), rng) * 4
    shape = (B, cap, Hkv, D)
    if quant == "int8":
        kc, vc = (rng.integers(-127, 128, shape).astype(np.int8) for _ in range(2))
        decode = lambda x: np.asarray(x, np.float64)  # noqa: E731
    else:
        kc, vc = ((rng.integers(0, 0x7F, shape).astype(np.uint8) |
                   (rng.integers(0, 2, shape) << 7).astype(np.uint8)) for _ in range(2))
        decode = e4m3_decode
    ks = np.array([0.05, 0.08], np.float32)
    vs = np.array([0.02, 0.03], np.float32)
    used = np.array([7, 40], np.int32)
    out, lse = ga.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=used, k_scale=ks, v_scale=vs,
                                          softcap=3.0, return_softmax_lse=True)
    k64 = decode(kc) * ks[None, None, :, None]
    v64 = decode(vc) * vs[None, None, :, None]
    for b in range(B):
        n = used[b]
        want, want_lse = ref_dense(to64(q)[b:b + 1], k64[b:b + 1, :n], v64[b:b + 1, :n],
                                   1 / math.sqrt(D), causal_rule(False), 3.0)
        assert_close(out[b:b + 1], want, 2e-5, f"out of sequence {b}")
        assert_close(lse[b:b + 1], want_lse, 2e-5 * 3, f"lse of sequence {b}")


def test_softcap_values_float32_cannot_hold_are_named():
    rng = rng_for("softcap-range")
    q, k, v = (make("numpy", "float32", (1, 4, 2, 64), rng) for _ in range(3))
    with pytest.raises(ValueError, match="softcap 1e-46 is outside float32's range"):
        ga.flash_attn_func(q, k, v, softcap=1e-46)
    with pytest.raises(ValueError, match="softcap 1e\\+39 is outside float32's range"):
        ga.flash_attn_func(q, k, v, softcap=1e39)
    # A ratio scale / softcap past float's normal range would change the result, not round it.
    with pytest.raises(ValueError, match="scale / softcap must be a normal float"):
        ga.flash_attn_func(q, k, v, softcap=1e38)
    with pytest.raises(ValueError, match="scale / softcap must be a normal float"):
        ga.flash_attn_func(q, k, v, softcap=1e-9, softmax_scale=1e30)
