"""The fast path of flash_attn_func and flash_attn_with_kvcache (flash_attn_interface.py).

A call of plain torch tensors (exactly torch.Tensor, rank 4, no grad, a unit last stride) with
flash-attn's default options goes straight to the library, skipping the general path's Python
checks. These tests pin that:
  - such calls take it (the general path, _forward, is never entered) and give the general path's
    results bit for bit, on the CPU backend and, where there is one, on CUDA;
  - every other call (numpy arrays, subclasses, grad, strides, windows, options of other types,
    appended k/v that are not plain, an int cache_seqlens) takes the general path, with the same
    results;
  - errors through the fast path are the library's, with the general path's type and message.
"""

import math

import numpy as np
import pytest

import gpu_attention as ga
from gpu_attention import flash_attn_interface as fi
from reference import (assert_close, causal_rule, e4m3_bytes, make, needs_torch, ref_dense,
                       rng_for, to64, torch)

pytestmark = needs_torch

DEVICES = ["cpu"]
if torch is not None and torch.cuda.is_available() and ga.cuda_available():
    DEVICES.append("cuda")


@pytest.fixture
def general_calls(monkeypatch):
    """The number of calls into the general path (_forward) since the test started; its
    check_only calls (the attention's check before the general path appends k/v) aside."""
    calls = []
    original = fi._forward

    def spy(*args, **kwargs):
        if not kwargs.get("check_only"):
            calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(fi, "_forward", spy)
    return calls


def tensors(device, dtype, shapes, key):
    rng = rng_for("fast-path", key, dtype)
    return [make("torch", dtype, shape, rng).to(device) for shape in shapes]


def general(q, k, v, causal, want_lse, softmax_scale=None, **extra):
    """The general path's result for the same call, through _forward itself."""
    sq = q.shape[1]
    sk = k.shape[1]
    mask = fi._resolve_mask((-1, -1), causal, sq, sk)
    return fi._forward(q, k, v, softmax_scale=softmax_scale, mask=mask, want_lse=want_lse,
                       **extra)


def bits(t):
    """The tensor's bits as integers: torch.equal would take -0.0 for +0.0 and fail on NaN."""
    return t.view({2: torch.int16, 4: torch.int32}[t.element_size()])


def same(a, b, what):
    assert a.shape == b.shape and a.dtype == b.dtype and a.device == b.device, what
    assert a.is_contiguous(), f"{what}: not contiguous"
    assert not a.requires_grad, what
    assert torch.equal(bits(a), bits(b)), f"{what}: differs from the general path's"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("causal", [False, True])
def test_plain_dense_calls_take_the_fast_path(general_calls, device, dtype, causal):
    # awkward sizes: Sq != Sk, neither a multiple of a tile, GQA 4:2
    q, k, v = tensors(device, dtype, [(2, 77, 4, 64), (2, 50, 2, 64), (2, 50, 2, 64)], causal)
    out = ga.flash_attn_func(q, k, v, causal=causal)
    out_l, lse, none = ga.flash_attn_func(q, k, v, causal=causal, return_attn_probs=True)
    scaled = ga.flash_attn_func(q, k, v, 0.0, 0.3, causal, (-1, -1), 0.0, None, True, False)
    assert general_calls == [], "a plain call entered the general path"
    assert none is None
    want, want_lse = general(q, k, v, causal, True)
    same(out, want, "out")
    same(out_l, want, "out with lse")
    same(lse, want_lse, "lse")
    same(scaled, general(q, k, v, causal, False, softmax_scale=0.3)[0], "out, softmax_scale 0.3")
    ref, ref_lse = ref_dense(to64(q), to64(k), to64(v), 1 / 8, causal_rule(causal))
    tol = 2e-3 if dtype == "float16" else 1.6e-2
    assert_close(out.cpu(), ref, tol, "out")
    assert_close(lse.cpu(), ref_lse, 1e-4 if device == "cpu" else 1e-2, "lse")


@pytest.mark.parametrize("device", DEVICES)
def test_softcapped_calls_take_the_fast_path(general_calls, device):
    """softcap (an int or a float >= 0) goes through the fast path as the general path passes it;
    an appending kvcache call with a cap the library refuses takes the general path, which checks
    the attention before it writes: the cache stays as it was."""
    q, k, v = tensors(device, "bfloat16", [(2, 33, 4, 64), (2, 70, 2, 64), (2, 70, 2, 64)],
                      "softcap")
    out, lse, _ = ga.flash_attn_func(q, k, v, causal=True, softcap=3, return_attn_probs=True)
    used = torch.tensor([60, 2], dtype=torch.int32, device=device)
    qd = q[:, :1].contiguous()
    new_k, new_v = tensors(device, "bfloat16", [(2, 2, 2, 64)] * 2, "softcap-new")
    kc, vc = k.clone(), v.clone()
    dec = ga.flash_attn_with_kvcache(qd, kc, vc, new_k, new_v, cache_seqlens=used, softcap=1.5)
    assert general_calls == [], "a soft-capped call entered the general path"
    mask = fi._with_softcap(fi._resolve_mask((-1, -1), True, 33, 70), 3.0)
    want, want_lse = fi._forward(q, k, v, softmax_scale=None, mask=mask, want_lse=True)
    same(out, want, "out")
    same(lse, want_lse, "lse")
    assert torch.equal(kc[0, 60:62], new_k[0]) and torch.equal(vc[1, 2:4], new_v[1])
    mask = fi._with_softcap(fi._resolve_mask((-1, -1), False, 1, 70), 1.5)
    want_dec, _ = fi._forward(qd, kc, vc, softmax_scale=None, mask=mask, want_lse=False,
                              seqused_k=used + 2)
    same(dec, want_dec, "decode with an append")
    before = kc.clone()
    with pytest.raises(ValueError, match="scale / softcap must be a normal float"):
        ga.flash_attn_with_kvcache(qd, kc, vc, new_k, new_v, cache_seqlens=used, softcap=1e38)
    assert torch.equal(kc, before), "a refused soft-capped call wrote the cache"
    # Likewise a softmax_scale the library refuses (past 2.36e38, or rounding to 0 in float32):
    # on CUDA the fast path would append before the attention's check.
    for scale in (1e39, 1e-46):
        with pytest.raises(ValueError, match="softmax_scale"):
            ga.flash_attn_with_kvcache(qd, kc, vc, new_k, new_v, cache_seqlens=used,
                                       softmax_scale=scale)
        assert torch.equal(kc, before), f"a refused softmax_scale {scale} wrote the cache"


@pytest.mark.parametrize("device", DEVICES)
def test_views_take_the_fast_path(general_calls, device):
    """torch SDPA's [B, H, S, D] memory as a transposed view, and packed qkv's views."""
    (x,) = tensors(device, "float16", [(1, 3, 33, 64)], "views")
    xt = x.transpose(1, 2)
    out = ga.flash_attn_func(xt, xt, xt, causal=True)
    (qkv,) = tensors(device, "float16", [(2, 19, 3, 2, 64)], "qkv")
    packed = ga.flash_attn_qkvpacked_func(qkv, causal=True)
    assert general_calls == []
    same(out, general(xt, xt, xt, True, False)[0], "transposed view")
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    same(packed, general(q, k, v, True, False)[0], "qkv packed")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("causal", [False, True])
def test_plain_kvcache_calls_take_the_fast_path(general_calls, device, causal):
    B, Sk, Hkv, D, page = 3, 40, 2, 64, 16
    q, kc, vc = tensors(device, "float16", [(B, 2, 4, D), (B, Sk, Hkv, D), (B, Sk, Hkv, D)],
                        ("kvcache", causal))
    used = torch.tensor([Sk, 9, 1], dtype=torch.int32, device=device)
    per_seq = -(-Sk // page)
    kp, vp = tensors(device, "float16", [(B * per_seq + 2, page, Hkv, D)] * 2, ("pages", causal))
    table = torch.randperm(B * per_seq + 2)[:B * per_seq].reshape(B, per_seq).to(torch.int32)
    table = table.to(device)
    whole = ga.flash_attn_with_kvcache(q, kc, vc, causal=causal)
    out, lse = ga.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=used, causal=causal,
                                          return_softmax_lse=True)
    paged = ga.flash_attn_with_kvcache(q, kp, vp, cache_seqlens=used, block_table=table,
                                       causal=causal, num_splits=2)
    unchecked = ga.flash_attn_with_kvcache(q, kp, vp, cache_seqlens=used, block_table=table,
                                           causal=causal, check_indices=False)
    chained = ga.flash_attn_with_kvcache(q, kp, vp, cache_seqlens=used, block_table=table,
                                         causal=causal, pdl=True)
    assert general_calls == []
    same(whole, general(q, kc, vc, causal, False)[0], "whole cache")
    want, want_lse = general(q, kc, vc, causal, True, seqused_k=used)
    same(out, want, "cache_seqlens")
    same(lse, want_lse, "cache_seqlens lse")
    want_paged = general(q, kp, vp, causal, False, seqused_k=used, block_table=table)[0]
    same(paged, want_paged, "paged")
    same(unchecked, want_paged, "paged, check_indices=False")
    same(chained, want_paged, "paged, pdl=True")
    # k/v appended: the caches written in place, then attended with cache_seqlens + 3 keys; the
    # same call through the general path (window_size as a list) on copies of the caches
    new_k, new_v = tensors(device, "float16", [(B, 3, Hkv, D)] * 2, ("append", causal))
    room = torch.tensor([Sk - 3, 9, 0], dtype=torch.int32, device=device)
    caches = [t.clone() for t in (kc, vc, kp, vp)]
    del general_calls[:]  # the comparisons above ran _forward
    got = ga.flash_attn_with_kvcache(q, kc, vc, new_k, new_v, cache_seqlens=room, causal=causal)
    got_paged, got_lse = ga.flash_attn_with_kvcache(
        q, kp, vp, new_k, new_v, cache_seqlens=room, block_table=table, causal=causal,
        return_softmax_lse=True)
    assert general_calls == [], "an append took the general path"
    want = ga.flash_attn_with_kvcache(q, caches[0], caches[1], new_k, new_v, cache_seqlens=room,
                                      causal=causal, window_size=[-1, -1])
    want_paged, want_lse = ga.flash_attn_with_kvcache(
        q, caches[2], caches[3], new_k, new_v, cache_seqlens=room, block_table=table,
        causal=causal, window_size=[-1, -1], return_softmax_lse=True)
    assert len(general_calls) == 2
    same(got, want, "appended")
    same(got_paged, want_paged, "appended, paged")
    same(got_lse, want_lse, "appended, paged lse")
    for name, mine, theirs in zip(("k_cache", "v_cache", "k pages", "v pages"),
                                  (kc, vc, kp, vp), caches):
        assert torch.equal(mine, theirs), f"{name} after the append differs"
    assert torch.equal(kc[0, Sk - 3:], new_k[0]) and torch.equal(vc[1, 9:12], new_v[1])
    assert torch.equal(room, torch.tensor([Sk - 3, 9, 0], dtype=torch.int32, device=device))
    del general_calls[:]

    bad = used.clone()
    bad[1] = Sk + 1
    with pytest.raises(ValueError, match=rf"cache_seqlens\[1\] is {Sk + 1}"):
        ga.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=bad)


@pytest.mark.parametrize("device", DEVICES)
def test_leftpad_kvcache_calls_take_the_fast_path(general_calls, device):
    """cache_leftpad as a torch tensor goes through the fast path (the library's leftpad_k), with
    the general path's bits, appended or not; a pad past cache_seqlens is named before the
    append writes anything, on both paths."""
    B, Sk, Hkv, D = 3, 40, 2, 64
    q, kc, vc = tensors(device, "float16", [(B, 2, 4, D), (B, Sk, Hkv, D), (B, Sk, Hkv, D)],
                        "leftpad")
    used = torch.tensor([Sk - 3, 9, 1], dtype=torch.int32, device=device)
    pad = torch.tensor([5, 9, 0], dtype=torch.int32, device=device)
    out, lse = ga.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=used, cache_leftpad=pad,
                                          causal=True, return_softmax_lse=True)
    assert general_calls == [], "a left-padded call entered the general path"
    want, want_lse = general(q, kc, vc, True, True, seqused_k=used, leftpad_k=pad)
    same(out, want, "cache_leftpad")
    same(lse, want_lse, "cache_leftpad lse")
    new_k, new_v = tensors(device, "float16", [(B, 3, Hkv, D)] * 2, "leftpad-append")
    caches = [t.clone() for t in (kc, vc)]
    del general_calls[:]  # the comparison above ran _forward
    got = ga.flash_attn_with_kvcache(q, kc, vc, new_k, new_v, cache_seqlens=used,
                                     cache_leftpad=pad, causal=True)
    assert general_calls == [], "a left-padded append took the general path"
    wanted = ga.flash_attn_with_kvcache(q, caches[0], caches[1], new_k, new_v,
                                        cache_seqlens=used, cache_leftpad=pad, causal=True,
                                        window_size=[-1, -1])
    assert len(general_calls) == 1
    same(got, wanted, "appended")
    assert torch.equal(kc, caches[0]) and torch.equal(vc, caches[1])
    bad = torch.tensor([5, 10, 0], dtype=torch.int32, device=device)
    before = [t.clone() for t in (kc, vc)]
    for extra in ({}, {"window_size": [-1, -1]}):  # the fast path, the general path
        with pytest.raises(ValueError, match=r"cache_leftpad\[1\] is 10, must be in "
                                             r"\[0, cache_seqlens\[1\] = 9\]"):
            ga.flash_attn_with_kvcache(q, kc, vc, new_k, new_v, cache_seqlens=used,
                                       cache_leftpad=bad, **extra)
        assert torch.equal(kc, before[0]) and torch.equal(vc, before[1]), "a refused call wrote"
    with pytest.raises(ValueError, match=r"cache_leftpad\[1\] is 10, must be in "
                                         r"\[0, cache_seqlens\[1\] = 9\]"):
        ga.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=used, cache_leftpad=bad)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("interleaved", [False, True], ids=["neox", "gptj"])
def test_rotary_kvcache_calls_take_the_fast_path(general_calls, device, causal, interleaved):
    """rotary_cos/rotary_sin as plain torch tensors go through the fast path (the append rotates
    k and q), dense and paged, with the general path's bits and caches; a position past the
    tables is named by both paths before anything is written. float32 tables of a partial
    rotary dim."""
    B, Sk, Hkv, D, page = 3, 40, 2, 64, 16
    q, kc, vc = tensors(device, "float16", [(B, 2, 4, D), (B, Sk, Hkv, D), (B, Sk, Hkv, D)],
                        ("rotary", causal, interleaved))
    new_k, new_v = tensors(device, "float16", [(B, 2, Hkv, D)] * 2, ("rotary-new", causal))
    per_seq = -(-Sk // page)
    kp, vp = tensors(device, "float16", [(B * per_seq + 1, page, Hkv, D)] * 2, "rotary-pages")
    table = torch.randperm(B * per_seq + 1)[:B * per_seq].reshape(B, per_seq).to(torch.int32)
    table = table.to(device)
    rng = rng_for("fast-path-rotary", causal, interleaved)
    angles = torch.from_numpy(rng.uniform(0, 6.3, (Sk + 4, 24)).astype(np.float32))
    cos, sin = angles.cos().to(device), angles.sin().to(device)
    room = torch.tensor([Sk - 2, 9, 0], dtype=torch.int32, device=device)
    caches = [t.clone() for t in (kc, vc, kp, vp)]
    opts = dict(rotary_cos=cos, rotary_sin=sin, rotary_interleaved=interleaved, causal=causal)
    got = ga.flash_attn_with_kvcache(q, kc, vc, new_k, new_v, cache_seqlens=room, **opts)
    got_paged = ga.flash_attn_with_kvcache(q, kp, vp, new_k, new_v, cache_seqlens=room,
                                           block_table=table, check_indices=False, **opts)
    assert general_calls == [], "a rotary call took the general path"
    want = ga.flash_attn_with_kvcache(q, caches[0], caches[1], new_k, new_v, cache_seqlens=room,
                                      window_size=[-1, -1], **opts)
    want_paged = ga.flash_attn_with_kvcache(q, caches[2], caches[3], new_k, new_v,
                                            cache_seqlens=room, block_table=table,
                                            window_size=[-1, -1], **opts)
    assert len(general_calls) == 2
    same(got, want, "rotary")
    same(got_paged, want_paged, "rotary, paged")
    for name, mine, theirs in zip(("k_cache", "v_cache", "k pages", "v pages"),
                                  (kc, vc, kp, vp), caches):
        assert torch.equal(mine, theirs), f"{name} after the rotary append differs"
    assert not torch.equal(kc[0, Sk - 2:], new_k[0]), "the appended keys were not rotated"
    assert torch.equal(vc[0, Sk - 2:], new_v[0])
    short_cos, short_sin = cos[:Sk - 1], sin[:Sk - 1]
    before = [t.clone() for t in (kc, vc)]
    for extra in ({}, {"window_size": [-1, -1]}):  # the fast path, the general path
        with pytest.raises(ValueError, match=rf"cache_seqlens\[0\] is {Sk - 2}: new key rows "
                                             rf"0..1 of sequence 0 take rotary positions "
                                             rf"{Sk - 2}..{Sk - 1}, past the {Sk - 1} positions"):
            ga.flash_attn_with_kvcache(q, kc, vc, new_k, new_v, cache_seqlens=room,
                                       rotary_cos=short_cos, rotary_sin=short_sin, causal=causal,
                                       **extra)
        assert torch.equal(kc, before[0]) and torch.equal(vc, before[1]), "a refused call wrote"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind", ["int8", "e4m3"])
def test_quantized_kvcache_calls_take_the_fast_path(general_calls, device, kind):
    """A quantized cache with both scales as torch tensors (the serving call) skips the general
    path, appends included, with its results bit for bit; scales given as floats, or one scale
    alone, take the general path."""
    B, Sk, Hkv, D = 2, 45, 2, 128
    q, new_k, new_v = tensors(device, "bfloat16", [(B, 1, 8, D), (B, 2, Hkv, D), (B, 2, Hkv, D)],
                              ("quantized", kind))
    if kind == "int8":
        kc, vc = [torch.randint(-127, 128, (B, Sk, Hkv, D), dtype=torch.int8, device=device)
                  for _ in range(2)]
    else:
        kc, vc = [(torch.randn(B, Sk, Hkv, D, device=device) * 50).to(torch.float8_e4m3fn)
                  for _ in range(2)]
    ks = torch.tensor([0.03, 0.01], dtype=torch.float32, device=device)
    vs = torch.tensor([0.02, 0.04], dtype=torch.float32, device=device)
    used = torch.tensor([Sk - 2, 7], dtype=torch.int32, device=device)
    caches = [kc.clone(), vc.clone()]
    out, lse = ga.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=used, k_scale=ks, v_scale=vs,
                                          return_softmax_lse=True)
    appended = ga.flash_attn_with_kvcache(q, kc, vc, new_k, new_v, cache_seqlens=used,
                                          k_scale=ks, v_scale=vs)
    assert general_calls == [], "a quantized call with tensor scales entered the general path"
    want, want_lse = ga.flash_attn_with_kvcache(q, caches[0], caches[1], cache_seqlens=used,
                                                k_scale=ks, v_scale=vs, window_size=[-1, -1],
                                                return_softmax_lse=True)
    want_appended = ga.flash_attn_with_kvcache(q, caches[0], caches[1], new_k, new_v,
                                               cache_seqlens=used, k_scale=ks, v_scale=vs,
                                               window_size=[-1, -1])
    assert len(general_calls) == 2
    same(out, want, "out")
    same(lse, want_lse, "lse")
    same(appended, want_appended, "appended")
    as_bytes = (lambda t: t.view(torch.uint8)) if kind == "e4m3" else (lambda t: t)
    assert torch.equal(as_bytes(kc), as_bytes(caches[0])), "k_cache after the append"
    assert torch.equal(as_bytes(vc), as_bytes(caches[1])), "v_cache after the append"
    # the dequantized cache's attention (fp64): the kernel read the 8-bit cache as it is
    deq = [c.float() * s.view(1, 1, -1, 1) for c, s in ((kc, ks), (vc, vs))]
    lens = (used + 2).tolist()
    for b in range(B):
        ref, _ = ref_dense(to64(q[b:b + 1]), to64(deq[0][b:b + 1, :lens[b]]),
                           to64(deq[1][b:b + 1, :lens[b]]), 1 / math.sqrt(D), causal_rule(False))
        assert_close(appended[b:b + 1].cpu(), ref, 1.6e-2, f"appended, sequence {b}")
    del general_calls[:]
    as_float = ga.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=used, k_scale=0.03,
                                          v_scale=0.02)
    one = [torch.full((1,), x, device=device) for x in (0.03, 0.02)]
    same(as_float, ga.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=used, k_scale=one[0],
                                              v_scale=one[1]), "scales as floats")
    with pytest.raises(ValueError, match="v_scale is missing"):
        ga.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=used, k_scale=ks, v_scale=None)
    assert len(general_calls) == 2  # the float scales and the missing one


def test_other_calls_take_the_general_path(general_calls):
    q, k, v = tensors("cpu", "float16", [(2, 21, 4, 64), (2, 30, 2, 64), (2, 30, 2, 64)],
                      "general")
    want = ga.flash_attn_func(q, k, v, causal=True)
    assert general_calls == []
    wide = make("torch", "float16", (2, 30, 2, 128), rng_for("wide"))
    k_strided = wide[..., ::2]  # last stride 2: the general path copies it
    variants = {
        "numpy": lambda: torch.from_numpy(
            ga.flash_attn_func(q.numpy(), k.numpy(), v.numpy(), causal=True)),
        "window as a list": lambda: ga.flash_attn_func(q, k, v, causal=True,
                                                       window_size=[-1, -1]),
        "causal=1": lambda: ga.flash_attn_func(q, k, v, causal=1),
        "dropout_p numpy 0": lambda: ga.flash_attn_func(q, k, v, dropout_p=np.float64(0.0),
                                                        causal=True),
        "softmax_scale an int": lambda: ga.flash_attn_func(q, k, v, softmax_scale=1,
                                                           causal=True),
        "grad off": lambda: _no_grad(lambda: ga.flash_attn_func(
            q.clone().requires_grad_(), k, v, causal=True)),
        "a tensor subclass": lambda: ga.flash_attn_func(
            torch.nn.Parameter(q, requires_grad=False), k, v, causal=True),
    }
    for name, call in variants.items():
        before = len(general_calls)
        got = call()
        assert len(general_calls) == before + 1, f"{name}: the general path was not taken"
        if name == "softmax_scale an int":
            assert torch.equal(got, ga.flash_attn_func(q, k, v, softmax_scale=1.0, causal=True))
        else:
            assert torch.equal(got, want), name
    before = len(general_calls)
    strided = ga.flash_attn_func(q, k_strided, v, causal=True)
    assert len(general_calls) == before + 1, "a strided k took the fast path"
    assert torch.equal(strided, ga.flash_attn_func(q, k_strided.contiguous(), v, causal=True))
    before = len(general_calls)
    windowed = ga.flash_attn_func(q, k, v, window_size=(4, 0))
    assert len(general_calls) == before + 1
    ref, _ = ref_dense(to64(q), to64(k), to64(v), 1 / 8,
                       lambda sq, sk: __import__("reference").visibility(sq, sk, False, (4, 0)))
    assert_close(windowed, ref, 2e-3, "window (4, 0)")

    # kvcache: appended k/v that are not plain (a strided k), an int cache_seqlens
    kc, vc = tensors("cpu", "float16", [(2, 30, 2, 64)] * 2, "kvcache-general")
    new_k, new_v = tensors("cpu", "float16", [(2, 3, 2, 64)] * 2, "kvcache-new")
    wide_k = make("torch", "float16", (2, 3, 2, 128), rng_for("wide-k"))
    used = torch.tensor([20, 5], dtype=torch.int32)
    before = len(general_calls)
    appended = ga.flash_attn_with_kvcache(q, kc, vc, k=wide_k[..., ::2], v=new_v,
                                          cache_seqlens=used, causal=True)
    as_int = ga.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=23, causal=True)
    assert len(general_calls) == before + 2
    assert torch.equal(kc[0, 20:23], wide_k[0, :, :, ::2])
    fast = ga.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=used + 3, causal=True)
    assert len(general_calls) == before + 2
    assert torch.equal(appended, fast)
    assert torch.equal(as_int, ga.flash_attn_with_kvcache(
        q, kc, vc, cache_seqlens=torch.full((2,), 23, dtype=torch.int32), causal=True))
    with pytest.raises(ValueError, match="k and v are appended together"):
        ga.flash_attn_with_kvcache(q, kc, vc, k=new_k, cache_seqlens=used)
    with pytest.raises(ValueError, match="appending k/v needs cache_seqlens"):
        ga.flash_attn_with_kvcache(q, kc, vc, k=new_k, v=new_v)


@pytest.mark.parametrize("device", DEVICES)
def test_fp8_calls_take_the_general_path(general_calls, device):
    """FP8 attention (q_descale, k_descale, v_descale) and FP8 decode (flash_attn_with_kvcache
    with q_descale) run on the general path, with the numpy call's bits on the CPU; a float8 q
    without descales gets the general path's error, which names them, not the fast path's."""
    rng = rng_for("fast-path-fp8")
    qb, kb, vb = (e4m3_bytes(rng.standard_normal(shape) * 8)
                  for shape in [(2, 21, 4, 64), (2, 30, 2, 64), (2, 30, 2, 64)])
    q, k, v = (torch.from_numpy(x).view(torch.float8_e4m3fn).to(device) for x in (qb, kb, vb))
    scales = dict(q_descale=torch.tensor([0.1, 0.2, 0.3, 0.4]),
                  k_descale=torch.tensor([0.05, 0.02]), v_descale=torch.tensor([0.03, 0.2]))
    on_device = {name: s.to(device) for name, s in scales.items()}
    out = ga.flash_attn_func(q, k, v, causal=True, **on_device)
    assert len(general_calls) == 1
    assert out.dtype == torch.bfloat16 and out.device == q.device
    if device == "cpu":  # float32 out: the CPU backend's
        wide = ga.flash_attn_func(q, k, v, causal=True, out_dtype=torch.float32, **on_device)
        want = ga.flash_attn_func(qb, kb, vb, causal=True,
                                  **{name: s.numpy() for name, s in scales.items()})
        assert np.array_equal(wide.numpy(), want)
    with pytest.raises(ValueError, match="q_descale, k_descale, v_descale are missing"):
        ga.flash_attn_func(q, k, v, causal=True)
    # FP8 decode (flash_attn_with_kvcache with an FP8 q) too, with the numpy call's bits
    del general_calls[:]
    used = torch.tensor([30, 9], dtype=torch.int32, device=device)
    kv_scales = dict(k_scale=on_device["k_descale"], v_scale=on_device["v_descale"])
    decode = ga.flash_attn_with_kvcache(q[:, :1], k, v, cache_seqlens=used, causal=True,
                                        q_descale=on_device["q_descale"], **kv_scales)
    assert len(general_calls) == 1
    assert decode.dtype == torch.bfloat16 and decode.device == q.device
    if device == "cpu":
        wide = ga.flash_attn_with_kvcache(q[:, :1], k, v, cache_seqlens=used, causal=True,
                                          q_descale=on_device["q_descale"],
                                          out_dtype=torch.float32, **kv_scales)
        want = ga.flash_attn_with_kvcache(np.ascontiguousarray(qb[:, :1]), kb, vb,
                                          cache_seqlens=used.numpy(), causal=True,
                                          q_descale=scales["q_descale"].numpy(),
                                          k_scale=scales["k_descale"].numpy(),
                                          v_scale=scales["v_descale"].numpy())
        assert np.array_equal(wide.numpy(), want)
    with pytest.raises(ValueError, match="q_descale is missing"):  # not the fast path's error
        ga.flash_attn_with_kvcache(q[:, :1], k, v, cache_seqlens=used, **kv_scales)


def _no_grad(fn):
    with torch.no_grad():
        return fn()


@pytest.mark.parametrize("device", DEVICES)
def test_fast_path_errors_are_the_general_paths(general_calls, device):
    """The library validates everything the fast path skips: each bad call raises the general
    path's exception, message included, and names the offending value."""
    q, k, v = tensors(device, "float16", [(2, 16, 4, 64), (2, 16, 2, 64), (2, 16, 2, 64)],
                      "errors")
    cases = {
        "k bfloat16": ((q, k.to(torch.bfloat16), v), {}, "dtype"),
        "3 kv heads": ((q, k[:, :, :1].expand(2, 16, 3, 64), v[:, :, :1].expand(2, 16, 3, 64)),
                       {}, "3"),
        "batch 1 keys": ((q, k[:1], v[:1]), {}, "batch|1"),
        "head dim 48": ((q[..., :48].contiguous(), k[..., :48].contiguous(),
                         v[..., :48].contiguous()), {}, "48"),
        "scale nan": ((q, k, v), {"softmax_scale": math.nan}, "softmax_scale"),
    }
    for name, (args, kwargs, pattern) in cases.items():
        before = len(general_calls)
        with pytest.raises((ValueError, NotImplementedError)) as fast:
            ga.flash_attn_func(*args, **kwargs)
        assert len(general_calls) == before, f"{name}: the general path was taken"
        scale = kwargs.get("softmax_scale")
        with pytest.raises(type(fast.value)) as slow:
            general(*args, False, False, softmax_scale=scale)
        assert str(fast.value) == str(slow.value), name
        assert __import__("re").search(pattern, str(fast.value)), (name, str(fast.value))


# ---- the native calls' arguments, fast path against the public general path ---------------------

_FORWARD = ("q", "k", "v", "out", "lse", "cu_seqlens_q", "cu_seqlens_k", "max_seqlen_q",
            "max_seqlen_k", "softmax_scale", "causal", "stream", "precision", "backend",
            "num_threads", "window_left", "window_right", "global_tokens", "global_stride",
            "block_layout", "block_q", "block_k", "seqused_k", "block_table", "check_indices",
            "k_scale", "v_scale", "kv_format", "pdl", "q_scale", "check_only", "empty_shapes")
_FORWARD_DEFAULTS = dict(lse=None, cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=0,
                         max_seqlen_k=0, softmax_scale=None, causal=False, stream=0,
                         precision="standard", backend="auto", num_threads=0, window_left=-1,
                         window_right=-1, global_tokens=0, global_stride=0, block_layout=None,
                         block_q=0, block_k=0, seqused_k=None, block_table=None,
                         check_indices=True, k_scale=None, v_scale=None, kv_format="",
                         pdl=False, q_scale=None, check_only=False, empty_shapes=None)
_APPEND = ("k_cache", "v_cache", "k_new", "v_new", "cache_seqlens", "block_table",
           "check_indices", "stream", "backend", "k_scale", "v_scale", "kv_format",
           "empty_shapes")
_APPEND_DEFAULTS = dict(block_table=None, check_indices=True, stream=0, backend="auto",
                        k_scale=None, v_scale=None, kv_format="", empty_shapes=None)


_EXPORTED = {}  # id of a DLPack capsule made during _both_paths -> its tensor's description


def _describe(tensor):
    return (str(tensor.dtype), tuple(tensor.shape), tuple(tensor.stride()), str(tensor.device))


def _normalized(names, defaults, args, kwargs):
    """Every argument of a native call by name, defaults filled in; arrays as their tensor's
    dtype, shape, strides and device (the DLPack capsules of the two paths are different objects:
    _both_paths records what each was made from), so a cache passed as float8 on one path and as
    uint8 bytes on the other differs."""
    got = dict(defaults, **dict(zip(names, args)), **kwargs)

    def arg(value):
        kind = type(value).__name__
        if kind == "PyCapsule":
            return _EXPORTED.get(id(value), kind)
        return _describe(value) if kind == "Tensor" else value
    return {name: arg(value) for name, value in got.items()}


class _Recorder:
    """Stands in for gpu_attention._C: records each native call's arguments, then makes it. The
    check_only calls (the attention's check before an append: always on the general path, on the
    CPU on the fast path too; a CUDA fast path checks q in Python) are not recorded; `order`
    lists every call's kind, checks included, in turn."""

    def __init__(self, real):
        self.real, self.calls, self.order = real, [], []

    def attention_forward(self, *args, **kwargs):
        if kwargs.get("check_only"):
            self.order.append("check")
        else:
            self.order.append("attention_forward")
            self.calls.append(("attention_forward",
                               _normalized(_FORWARD, _FORWARD_DEFAULTS, args, kwargs)))
        return self.real.attention_forward(*args, **kwargs)

    def append_kv(self, *args, **kwargs):
        self.order.append("append_kv")
        self.calls.append(("append_kv", _normalized(_APPEND, _APPEND_DEFAULTS, args, kwargs)))
        return self.real.append_kv(*args, **kwargs)


def _both_paths(monkeypatch, call, on_cuda=False):
    """call() on the fast path, then with the fast path refused (the public general path): each
    side's result (or exception) and its native calls' arguments. Every append_kv on the general
    path comes after a check of the attention (check_only), as on the fast path on the CPU."""
    sides = []
    _EXPORTED.clear()
    real_export = torch.utils.dlpack.to_dlpack

    def export(tensor):
        capsule = real_export(tensor)
        _EXPORTED[id(capsule)] = _describe(tensor)
        return capsule

    for fast in (True, False):
        recorder = _Recorder(fi._C)
        with monkeypatch.context() as m:
            m.setattr(fi, "_C", recorder)
            m.setattr(torch.utils.dlpack, "to_dlpack", export)
            if not fast:
                m.setattr(fi, "_plain_options", lambda *args: False)
            try:
                result = call()
            except Exception as e:  # compared below: same type, same message
                result = e
        if "append_kv" in recorder.order and (not fast or not on_cuda):
            assert recorder.order.index("check") < recorder.order.index("append_kv"), \
                recorder.order
        sides.append((result, recorder.calls))
    return sides


def _assert_same_outcome(sides, what):
    (fast, fast_calls), (general, general_calls) = sides
    assert fast_calls == general_calls, f"{what}: native calls differ"
    if isinstance(general, Exception):
        assert type(fast) is type(general) and str(fast) == str(general), (what, fast, general)
        return
    fast = fast if isinstance(fast, tuple) else (fast,)
    general = general if isinstance(general, tuple) else (general,)
    assert len(fast) == len(general), what
    for i, (a, b) in enumerate(zip(fast, general)):
        if b is None:
            assert a is None, what
        else:
            same(a, b, f"{what}, result {i}")


@pytest.mark.parametrize("device", DEVICES)
def test_native_calls_match_the_general_paths(monkeypatch, device):
    """Every native call's arguments (stream and check_indices included), result and exception
    are those of the public general path. On CUDA the calls run on a side stream, so a fast path
    that did not pass torch's current stream would differ."""
    B, Sk, Hkv, D, page = 2, 37, 2, 64, 16
    q, k, v = tensors(device, "bfloat16", [(B, 21, 4, D), (B, Sk, Hkv, D), (B, Sk, Hkv, D)],
                      "native")
    qd = q[:, :1].contiguous()
    used = torch.tensor([Sk - 2, 5], dtype=torch.int32, device=device)
    pages = tensors(device, "bfloat16", [(2 * B * 3, page, Hkv, D)] * 2, "native-pages")
    table = torch.arange(2 * B * 3, dtype=torch.int32, device=device)[:B * 3].reshape(B, 3)
    new_kv = tensors(device, "bfloat16", [(B, 2, Hkv, D)] * 2, "native-new")
    bad_q = q[..., :32].contiguous()
    qh = qd.to(torch.float16)
    int8_kv = [torch.randint(-127, 128, (B, Sk, Hkv, D), dtype=torch.int8, device=device)
               for _ in range(2)]
    scales = torch.tensor([0.02, 0.05], dtype=torch.float32, device=device)
    e4m3_kv = [(torch.randn(B, Sk, Hkv, D, device=device) * 40).to(torch.float8_e4m3fn)
               for _ in range(2)]
    e4m3_pages = [(p.float() * 20).to(torch.float8_e4m3fn) for p in pages]
    calls = {
        "dense": lambda: ga.flash_attn_func(q, k, v),
        "causal, lse, scale": lambda: ga.flash_attn_func(q, k, v, softmax_scale=0.2,
                                                         causal=True, return_attn_probs=True),
        "head dim 32 (an error)": lambda: ga.flash_attn_func(bad_q, k, v),
        "rank 3 q with lse": lambda: ga.flash_attn_func(q[0], k, v, return_attn_probs=True),
        "kvcache whole": lambda: ga.flash_attn_with_kvcache(qd, k, v),
        "kvcache whole, check_indices=False": lambda: ga.flash_attn_with_kvcache(
            qd, k, v, check_indices=False),
        "kvcache seqlens, lse": lambda: ga.flash_attn_with_kvcache(
            qd, k, v, cache_seqlens=used, causal=True, return_softmax_lse=True),
        "kvcache paged, unchecked": lambda: ga.flash_attn_with_kvcache(
            qd, pages[0], pages[1], cache_seqlens=used, block_table=table, check_indices=0),
        "kvcache paged, pdl": lambda: ga.flash_attn_with_kvcache(
            qd, pages[0], pages[1], cache_seqlens=used, block_table=table, pdl=True),
        "kvcache append": lambda: ga.flash_attn_with_kvcache(
            qd, k.clone(), v.clone(), new_kv[0], new_kv[1], cache_seqlens=used),
        "kvcache append to pages, unchecked": lambda: ga.flash_attn_with_kvcache(
            qd, pages[0].clone(), pages[1].clone(), new_kv[0], new_kv[1], cache_seqlens=used,
            block_table=table, check_indices=False),
        "kvcache append past the cache (an error)": lambda: ga.flash_attn_with_kvcache(
            qd, k.clone(), v.clone(), new_kv[0], new_kv[1], cache_seqlens=used + 1),
        "kvcache int8 with scales": lambda: ga.flash_attn_with_kvcache(
            qh, int8_kv[0], int8_kv[1], cache_seqlens=used, k_scale=scales, v_scale=0.03),
        "kvcache int8, tensor scales": lambda: ga.flash_attn_with_kvcache(
            qh, int8_kv[0], int8_kv[1], cache_seqlens=used, k_scale=scales, v_scale=scales.flip(0)),
        "kvcache e4m3, tensor scales, lse": lambda: ga.flash_attn_with_kvcache(
            qd, e4m3_kv[0], e4m3_kv[1], cache_seqlens=used, k_scale=scales, v_scale=scales,
            causal=True, return_softmax_lse=True),
        "kvcache e4m3 as uint8 bytes": lambda: ga.flash_attn_with_kvcache(
            qd, e4m3_kv[0].view(torch.uint8), e4m3_kv[1].view(torch.uint8), k_scale=scales,
            v_scale=scales),
        "kvcache e4m3 paged, unchecked": lambda: ga.flash_attn_with_kvcache(
            qd, e4m3_pages[0], e4m3_pages[1], cache_seqlens=used, block_table=table,
            check_indices=False, k_scale=scales, v_scale=scales),
        "kvcache int8 append": lambda: ga.flash_attn_with_kvcache(
            qh, int8_kv[0].clone(), int8_kv[1].clone(), new_kv[0].to(torch.float16),
            new_kv[1].to(torch.float16), cache_seqlens=used, k_scale=scales, v_scale=scales),
        "kvcache e4m3 append to pages": lambda: ga.flash_attn_with_kvcache(
            qd, e4m3_pages[0].clone(), e4m3_pages[1].clone(), new_kv[0], new_kv[1],
            cache_seqlens=used, block_table=table, k_scale=scales, v_scale=scales),
        "kvcache int8, 3 scales (an error)": lambda: ga.flash_attn_with_kvcache(
            qh, int8_kv[0], int8_kv[1], cache_seqlens=used, k_scale=scales.repeat(2)[:3],
            v_scale=scales),
        "kvcache int8, float64 scales (an error)": lambda: ga.flash_attn_with_kvcache(
            qh, int8_kv[0], int8_kv[1], k_scale=scales.double(), v_scale=scales),
        "softcap": lambda: ga.flash_attn_func(q, k, v, softcap=30.0),
        "softcap an int, causal, lse": lambda: ga.flash_attn_func(
            q, k, v, causal=True, softcap=7, return_attn_probs=True),
        "softcap 1e38 (an error)": lambda: ga.flash_attn_func(q, k, v, softcap=1e38),
        "softcap 1e39 (an error)": lambda: ga.flash_attn_func(q, k, v, softcap=1e39),
        "kvcache seqlens, softcap": lambda: ga.flash_attn_with_kvcache(
            qd, k, v, cache_seqlens=used, softcap=20.0, return_softmax_lse=True),
        "kvcache append to pages, softcap": lambda: ga.flash_attn_with_kvcache(
            qd, pages[0].clone(), pages[1].clone(), new_kv[0], new_kv[1], cache_seqlens=used,
            block_table=table, softcap=2.5, causal=True),
        "kvcache append, softcap 1e38 (an error)": lambda: ga.flash_attn_with_kvcache(
            qd, k.clone(), v.clone(), new_kv[0], new_kv[1], cache_seqlens=used, softcap=1e38),
        "kvcache e4m3 paged, softcap": lambda: ga.flash_attn_with_kvcache(
            qd, e4m3_pages[0], e4m3_pages[1], cache_seqlens=used, block_table=table,
            k_scale=scales, v_scale=scales, softcap=4.0),
    }
    stream = torch.cuda.Stream() if device == "cuda" else None
    for what, call in calls.items():
        if stream is None:
            sides = _both_paths(monkeypatch, call)
        else:
            with torch.cuda.stream(stream):
                sides = _both_paths(monkeypatch, call, on_cuda=True)
            stream.synchronize()
            for _, native in sides:
                assert all(args["stream"] == stream.cuda_stream for _, args in native), what
        _assert_same_outcome(sides, what)


@pytest.mark.parametrize("layout", ["nested", "sparse_csr"])
def test_nested_and_sparse_tensors_take_the_general_path(monkeypatch, layout):
    q, k = tensors("cpu", "float16", [(2, 8, 4, 64), (2, 8, 2, 64)], layout)
    if layout == "nested":
        odd = torch.nested.nested_tensor([q[0], q[1]])
    else:
        odd = q.to_sparse_csr(dense_dim=2)
    for what, call in {"q": lambda: ga.flash_attn_func(odd, k, k),
                       "q, v numpy": lambda: ga.flash_attn_func(odd, k, k.numpy()),
                       "k_cache": lambda: ga.flash_attn_with_kvcache(q, odd, k)}.items():
        _assert_same_outcome(_both_paths(monkeypatch, call), f"{layout} {what}")


@pytest.mark.parametrize("kwargs, error", [
    (dict(dropout_p=0.5), NotImplementedError),
    (dict(softcap=-1.0), ValueError),  # soft-capping runs; a negative cap is named
    (dict(alibi_slopes="slopes"), ValueError),  # ALiBi runs (test_alibi.py); a bad shape is named
    (dict(dropout_p=float("nan")), ValueError),
    (dict(window_size=(-2, -1)), ValueError),
])
def test_unsupported_options_raise_with_torch_tensors(kwargs, error):
    """The options the fast path leaves to the general path still raise for torch tensors."""
    q, k = tensors("cpu", "float16", [(1, 8, 2, 64), (1, 8, 2, 64)], "options")
    if kwargs.get("alibi_slopes") == "slopes":
        kwargs = dict(alibi_slopes=torch.ones(3))
    with pytest.raises(error):
        ga.flash_attn_func(q, k, k, **kwargs)


@pytest.mark.parametrize("kwargs, error", [
    (dict(rotary_cos="t"), ValueError),  # alone: rotary_sin goes with it (and k/v)
    (dict(rotary_sin="t"), ValueError),
    (dict(cache_batch_idx="t", block_table="t"), ValueError),  # one of the two
    (dict(softcap=-1.0), ValueError),  # soft-capping runs; a negative cap is named
    (dict(alibi_slopes="t"), ValueError),  # ALiBi runs; int32 slopes are named
    (dict(num_splits=-1), ValueError),
    (dict(num_splits=2**31), ValueError),
])
def test_unsupported_kvcache_options_raise_with_torch_tensors(kwargs, error):
    q, kc = tensors("cpu", "float16", [(2, 1, 4, 64), (2, 16, 2, 64)], "kvcache-options")
    kwargs = {key: (torch.ones(2, dtype=torch.int32) if value == "t" else value)
              for key, value in kwargs.items()}
    with pytest.raises(error):
        ga.flash_attn_with_kvcache(q, kc, kc, cache_seqlens=torch.tensor([3, 4], dtype=torch.int32),
                                   **kwargs)


@pytest.mark.parametrize("device", DEVICES)
def test_malformed_leftpad_takes_the_general_path(general_calls, device):
    """A cache_leftpad the library refuses (int64, a wrong shape) takes the general path, which
    refuses it before k/v are appended: the caches stay as they were."""
    q, kc, vc, new = tensors(device, "float16", [(2, 1, 4, 64), (2, 16, 2, 64), (2, 16, 2, 64),
                                                 (2, 1, 2, 64)], "leftpad-malformed")
    used = torch.tensor([3, 4], dtype=torch.int32, device=device)
    before = [t.clone() for t in (kc, vc)]
    for bad, words in ((torch.tensor([0, 1], device=device), "cache_leftpad has dtype int64"),
                       (torch.tensor([0, 1, 2], dtype=torch.int32, device=device),
                        r"cache_leftpad has shape \[3\], expected \[batch = 2\]")):
        n = len(general_calls)
        with pytest.raises(ValueError, match=words):
            ga.flash_attn_with_kvcache(q, kc, vc, new, new, cache_seqlens=used, cache_leftpad=bad)
        assert torch.equal(kc, before[0]) and torch.equal(vc, before[1]), "a refused call wrote"
        assert len(general_calls) == n  # refused in the general path's check, before _forward
