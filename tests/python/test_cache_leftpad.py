"""flash_attn_with_kvcache's cache_leftpad: sequence b attends to cache rows cache_leftpad[b] ..
cache_seqlens[b] (and the keys appended after them), causal bottom-right aligned to those keys,
as flash-attn defines it; appends still land at cache_seqlens[b], rotary positions stay cache
rows; with cache_batch_idx the rows are the named cache rows'. Checked against the float64
reference over exactly those keys, with the rest of the caches untouched; every bad value named,
with the caches untouched."""
import math

import numpy as np
import pytest

import gpu_attention as ga
from reference import (KVCACHE_FRAMEWORKS, assert_close, causal_rule, int32_on, make, needs_cuda,
                       needs_torch, on, ref_dense, rng_for, to64, torch)

FRAMEWORKS = KVCACHE_FRAMEWORKS
arr = int32_on


def check_call(out, lse, q, kc0, vc0, kc1, vc1, rows, pad, used, sn, new, causal, tol):
    """The caches equal their first state but for the appended rows, which hold `new` (k, v);
    sequence b's out and lse equal the reference over cache rows pad[b] .. used[b] + sn of its
    cache row rows[b]."""
    expect_k, expect_v = kc0.copy(), vc0.copy()
    for b, r in enumerate(rows):
        if sn:
            expect_k[r, used[b]:used[b] + sn] = to64(new[0])[b]
            expect_v[r, used[b]:used[b] + sn] = to64(new[1])[b]
    assert np.array_equal(kc1, expect_k), "k_cache differs outside (or in) the appended rows"
    assert np.array_equal(vc1, expect_v), "v_cache differs outside (or in) the appended rows"
    d = q.shape[-1]
    for b, r in enumerate(rows):
        keys = slice(pad[b], used[b] + sn)
        want, want_lse = ref_dense(to64(q)[b:b + 1], kc1[r:r + 1, keys], vc1[r:r + 1, keys],
                                   1 / math.sqrt(d), causal_rule(causal))
        assert_close(out[b:b + 1], want, tol, f"out of sequence {b}")
        assert_close(lse[b:b + 1], want_lse, tol, f"lse of sequence {b}")


@pytest.mark.parametrize("fw,dtype,device,tol", FRAMEWORKS)
@pytest.mark.parametrize("sq,sn", [(1, 1), (1, 0), (5, 5), (3, 0), (70, 0)],
                         ids=lambda v: str(v))
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("batch_idx", [False, True], ids=["rows", "batch_idx"])
def test_leftpad_attends_to_the_keys_from_the_pad_on(fw, dtype, device, tol, sq, sn, causal,
                                                      batch_idx):
    """GQA 4:2; sequence lengths with a pad of 0, one inside, and one equal to cache_seqlens (no
    old keys: with sn = 0 none at all, out 0 and lse -inf). sq = 70 runs the gathered (prefill)
    path on CUDA, the others the decode kernel on one-key pages."""
    rng = rng_for("leftpad", fw, dtype, device, sq, sn, causal, batch_idx)
    B, Hq, Hkv, D = 3, 4, 2, 64
    cap = 90 if sq == 70 else 40
    Bc = 5 if batch_idx else B
    rows = [4, 0, 2] if batch_idx else [0, 1, 2]
    used = np.array([7, 0, cap - 7 - sn], np.int32) if sq < 70 else np.array([80, 75, 3], np.int32)
    pad = np.array([3, 0, 20], np.int32) if sq < 70 else np.array([0, 70, 3], np.int32)
    if sq < 70 and sn == 0:
        used[1], pad[1] = 9, 9  # no keys at all
    q = on(fw, device, make(fw, dtype, (B, sq, Hq, D), rng))
    kc = on(fw, device, make(fw, dtype, (Bc, cap, Hkv, D), rng))
    vc = on(fw, device, make(fw, dtype, (Bc, cap, Hkv, D), rng))
    new = (on(fw, device, make(fw, dtype, (B, sn, Hkv, D), rng)),
           on(fw, device, make(fw, dtype, (B, sn, Hkv, D), rng))) if sn else None
    kw = dict(k=new[0], v=new[1]) if sn else {}
    if batch_idx:
        kw["cache_batch_idx"] = arr(fw, device, rows)
    kc0, vc0 = to64(kc), to64(vc)
    out, lse = ga.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=arr(fw, device, used),
                                          cache_leftpad=arr(fw, device, pad), causal=causal,
                                          return_softmax_lse=True, **kw)
    check_call(out, lse, q, kc0, vc0, to64(kc), to64(vc), rows, pad, used, sn, new, causal, tol)


@pytest.mark.parametrize("fw,dtype,device,tol", FRAMEWORKS)
def test_leftpad_without_cache_seqlens_reads_to_the_row_end(fw, dtype, device, tol):
    rng = rng_for("leftpad-whole", fw, dtype, device)
    B, H, D, cap = 2, 2, 128, 33
    pad = np.array([5, 32], np.int32)
    q = on(fw, device, make(fw, dtype, (B, 2, H, D), rng))
    kc = on(fw, device, make(fw, dtype, (B, cap, H, D), rng))
    vc = on(fw, device, make(fw, dtype, (B, cap, H, D), rng))
    out, lse = ga.flash_attn_with_kvcache(q, kc, vc, cache_leftpad=arr(fw, device, pad),
                                          causal=True, return_softmax_lse=True)
    check_call(out, lse, q, to64(kc), to64(vc), to64(kc), to64(vc), [0, 1], pad, [cap, cap], 0,
               None, True, tol)


@pytest.mark.parametrize("fw,dtype,device,tol", FRAMEWORKS)
def test_leftpad_on_sliced_caches(fw, dtype, device, tol):
    """Caches that are views of wider buffers (batch stride a whole number of key rows, not
    seqlen_cache of them): the call reads and writes through the views."""
    rng = rng_for("leftpad-sliced", fw, dtype, device)
    B, H, D, cap = 2, 2, 64, 24
    kbuf = on(fw, device, make(fw, dtype, (B, cap + 5, H, D), rng))
    vbuf = on(fw, device, make(fw, dtype, (B, cap + 5, H, D), rng))
    kc, vc = kbuf[:, 2:cap + 2], vbuf[:, 2:cap + 2]
    q = on(fw, device, make(fw, dtype, (B, 1, H, D), rng))
    new = (on(fw, device, make(fw, dtype, (B, 1, H, D), rng)),
           on(fw, device, make(fw, dtype, (B, 1, H, D), rng)))
    used, pad = np.array([10, 23], np.int32), np.array([4, 1], np.int32)
    kb0, vb0 = to64(kbuf), to64(vbuf)
    out, lse = ga.flash_attn_with_kvcache(q, kc, vc, k=new[0], v=new[1],
                                          cache_seqlens=arr(fw, device, used),
                                          cache_leftpad=arr(fw, device, pad),
                                          return_softmax_lse=True)
    check_call(out, lse, q, kb0[:, 2:cap + 2], vb0[:, 2:cap + 2], to64(kc), to64(vc), [0, 1],
               pad, used, 1, new, False, tol)
    for buf, buf0 in ((kbuf, kb0), (vbuf, vb0)):
        outside = np.ones(cap + 5, bool)
        outside[2:cap + 2] = False
        assert np.array_equal(to64(buf)[:, outside], buf0[:, outside]), "rows past the view"


@pytest.mark.parametrize("fw,dtype,device,tol", FRAMEWORKS)
def test_leftpad_rotary_positions_are_cache_rows(fw, dtype, device, tol):
    """With rotary, q and the new k rotate at cache_seqlens[b] + i (not shifted by the pad), as
    flash-attn does: the same as rotating them first (apply_rotary_emb at cache_seqlens) and
    calling without rotary."""
    rng = rng_for("leftpad-rotary", fw, dtype, device)
    B, H, D, cap, sq = 2, 2, 64, 32, 3
    used, pad = np.array([6, 20], np.int32), np.array([2, 11], np.int32)
    q = on(fw, device, make(fw, dtype, (B, sq, H, D), rng))
    k = on(fw, device, make(fw, dtype, (B, sq, H, D), rng))
    v = on(fw, device, make(fw, dtype, (B, sq, H, D), rng))
    kc = on(fw, device, make(fw, dtype, (B, cap, H, D), rng))
    vc = on(fw, device, make(fw, dtype, (B, cap, H, D), rng))
    ang = np.arange(cap)[:, None] * 0.05 * np.arange(1, 17)[None, :]
    cos, sin = (x if fw == "numpy" else on(fw, device, torch.from_numpy(x))
                for x in (np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)))
    kc2, vc2 = (x.copy() if fw == "numpy" else x.clone() for x in (kc, vc))
    got = ga.flash_attn_with_kvcache(q, kc, vc, k=k, v=v, rotary_cos=cos, rotary_sin=sin,
                                     cache_seqlens=arr(fw, device, used),
                                     cache_leftpad=arr(fw, device, pad), causal=True)
    offsets = arr(fw, device, used)
    q_rot = ga.apply_rotary_emb(q, cos, sin, interleaved=True, seqlen_offsets=offsets)
    k_rot = ga.apply_rotary_emb(k, cos, sin, interleaved=True, seqlen_offsets=offsets)
    want = ga.flash_attn_with_kvcache(q_rot, kc2, vc2, k=k_rot, v=v,
                                      cache_seqlens=arr(fw, device, used),
                                      cache_leftpad=arr(fw, device, pad), causal=True)
    assert np.array_equal(to64(got), to64(want)), "differs from rotating at cache rows first"
    assert np.array_equal(to64(kc), to64(kc2)) and np.array_equal(to64(vc), to64(vc2))


@pytest.mark.parametrize("fw,dtype,device,tol", FRAMEWORKS)
@pytest.mark.parametrize("sq", [1, 70])
def test_leftpad_with_a_paged_cache(fw, dtype, device, tol, sq):
    """Beyond flash-attn (which refuses the two together): with block_table the pad counts
    logical keys, key cache_leftpad[b] + j in page block_table[b][(cache_leftpad[b] + j) //
    page_size]; decode rows (sq 1) read the pages in place, the prefill (sq 70) gathers them."""
    rng = rng_for("leftpad-paged", fw, dtype, device, sq)
    B, Hq, Hkv, D, page, per_seq = 2, 4, 2, 64, 16, 6
    cap = page * per_seq
    pool = np.random.default_rng(1).permutation(B * per_seq).astype(np.int32)
    bt = pool.reshape(B, per_seq)
    q = on(fw, device, make(fw, dtype, (B, sq, Hq, D), rng))
    kp = on(fw, device, make(fw, dtype, (B * per_seq, page, Hkv, D), rng))
    vp = on(fw, device, make(fw, dtype, (B * per_seq, page, Hkv, D), rng))
    used, pad = np.array([95, 80], np.int32), np.array([17, 3], np.int32)
    out, lse = ga.flash_attn_with_kvcache(q, kp, vp, cache_seqlens=arr(fw, device, used),
                                          cache_leftpad=arr(fw, device, pad),
                                          block_table=arr(fw, device, bt), causal=True,
                                          return_softmax_lse=True)
    # The logical caches, page by page.
    kd = to64(kp)[bt].reshape(B, cap, Hkv, D)
    vd = to64(vp)[bt].reshape(B, cap, Hkv, D)
    check_call(out, lse, q, kd, vd, kd, vd, [0, 1], pad, used, 0, None, True, tol)


@needs_cuda
def test_leftpad_unchecked_matches_checked():
    """check_indices=False (no host copies) gives the same result for valid values."""
    rng = rng_for("leftpad-unchecked")
    B, Hq, Hkv, D, cap = 4, 8, 2, 128, 300
    q = make("torch", "float16", (B, 1, Hq, D), rng).cuda()
    kc = make("torch", "float16", (B, cap, Hkv, D), rng).cuda()
    vc = make("torch", "float16", (B, cap, Hkv, D), rng).cuda()
    used = arr("torch", "cuda", [300, 1, 150, 299])
    pad = arr("torch", "cuda", [17, 0, 149, 0])
    a = ga.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=used, cache_leftpad=pad)
    b = ga.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=used, cache_leftpad=pad,
                                   check_indices=False)
    assert torch.equal(a, b)


def test_leftpad_errors_name_the_value_and_leave_the_caches():
    rng = rng_for("leftpad-errors")
    q = make("numpy", "float16", (2, 1, 2, 64), rng)
    k = make("numpy", "float16", (2, 2, 2, 64), rng)
    kc = make("numpy", "float16", (3, 16, 2, 64), rng)
    vc = make("numpy", "float16", (3, 16, 2, 64), rng)
    kc0, vc0 = kc.copy(), vc.copy()
    lens = np.array([3, 4], np.int32)
    call = dict(k=k, v=k, cache_seqlens=lens, cache_batch_idx=np.array([2, 0], np.int32))

    def refused(error, match, **kw):
        with pytest.raises(error, match=match):
            ga.flash_attn_with_kvcache(q, kc, vc, **{**call, **kw})

    i32 = lambda *v: np.array(v, np.int32)  # noqa: E731
    refused(ValueError, r"cache_leftpad\[1\] is 5, must be in \[0, cache_seqlens\[1\] = 4\]",
            cache_leftpad=i32(0, 5))
    refused(ValueError, r"cache_leftpad\[0\] is -1", cache_leftpad=i32(-1, 0))
    refused(ValueError, "cache_leftpad has dtype int64, which is not supported",
            cache_leftpad=np.array([0, 1]))
    refused(ValueError, r"cache_leftpad has shape \[3\], expected \[batch = 2\]",
            cache_leftpad=i32(0, 1, 2))
    refused(TypeError, "cache_leftpad must be a torch.Tensor or a numpy.ndarray",
            cache_leftpad=[0, 1])
    refused(ValueError, r"cache_batch_idx\[1\] is 3, must be a row of k_cache in \[0, 3\)",
            cache_leftpad=i32(0, 1), cache_batch_idx=i32(0, 3))
    refused(ValueError, r"cache_seqlens\[1\] is 15: with 2 new keys it must be in \[0, 14\]",
            cache_leftpad=i32(0, 1), cache_seqlens=i32(3, 15))
    # The checks of the call without the pad come first, naming what the caller passed.
    refused(ValueError, r"cache_seqlens\[0\] is 17", cache_leftpad=i32(0, 1),
            cache_seqlens=i32(17, 4))
    assert np.array_equal(kc, kc0) and np.array_equal(vc, vc0), "a refused call wrote a cache"
    # The same call with good values then writes the rows it appends, in the rows it names.
    out = ga.flash_attn_with_kvcache(q, kc, vc, cache_leftpad=i32(1, 2), **call)
    assert np.array_equal(kc[1], kc0[1]), "cache row 1, which no sequence names, was written"
    assert np.array_equal(kc[2, 3:5], k[0]) and np.array_equal(kc[0, 4:6], k[1])
    assert np.isfinite(out).all()


@pytest.mark.parametrize("fw,dtype,device,tol", [
    ("numpy", "float16", "cpu", 2e-3),
    pytest.param("torch", "float16", "cuda", 2e-3, marks=needs_cuda),
    pytest.param("torch", "bfloat16", "cuda", 1.6e-2, marks=needs_cuda),
])
@pytest.mark.parametrize("sq", [1, 70])
def test_leftpad_over_an_int8_cache(fw, dtype, device, tol, sq):
    """An 8-bit cache (k_scale / v_scale a KV head): decode calls read it in place from the pad
    on (the 8-bit decode kernel on CUDA), the Sq 70 call on the keys dequantized first."""
    rng = rng_for("leftpad-int8", fw, dtype, device, sq)
    B, Hq, Hkv, D, cap = 2, 4, 2, 128, 90
    q = on(fw, device, make(fw, dtype, (B, sq, Hq, D), rng))
    k8 = rng.integers(-127, 128, (B, cap, Hkv, D)).astype(np.int8)
    v8 = rng.integers(-127, 128, (B, cap, Hkv, D)).astype(np.int8)
    ks = np.array([0.01, 0.02], np.float32)
    vs = np.array([0.015, 0.005], np.float32)
    used, pad = np.array([90, 75], np.int32), np.array([11, 3], np.int32)
    conv = (lambda x: x) if fw == "numpy" else (lambda x: on(fw, device, torch.from_numpy(x)))
    out, lse = ga.flash_attn_with_kvcache(q, conv(k8), conv(v8), cache_seqlens=conv(used),
                                          cache_leftpad=conv(pad), k_scale=conv(ks),
                                          v_scale=conv(vs), causal=True, return_softmax_lse=True)
    kd = k8.astype(np.float64) * ks.astype(np.float64)[None, None, :, None]
    vd = v8.astype(np.float64) * vs.astype(np.float64)[None, None, :, None]
    check_call(out, lse, q, kd, vd, kd, vd, [0, 1], pad, used, 0, None, True, tol)


@needs_torch
def test_leftpad_of_another_framework_and_bad_lengths_are_named():
    """A torch cache_leftpad beside numpy q is a TypeError naming it; a negative cache_seqlens
    beside a pad is named as cache_seqlens (by the append, before it writes)."""
    rng = rng_for("leftpad-mixed")
    q = make("numpy", "float16", (2, 1, 2, 64), rng)
    kc = make("numpy", "float16", (2, 16, 2, 64), rng)
    k = make("numpy", "float16", (2, 1, 2, 64), rng)
    kc0 = kc.copy()
    with pytest.raises(TypeError, match="cache_leftpad is a torch array but q is a numpy array"):
        ga.flash_attn_with_kvcache(q, kc, kc, cache_seqlens=np.array([3, 4], np.int32),
                                   cache_leftpad=torch.tensor([0, 1], dtype=torch.int32))
    with pytest.raises(ValueError, match=r"cache_seqlens\[0\] is -1"):
        ga.flash_attn_with_kvcache(q, kc, kc, k=k, v=k, cache_seqlens=np.array([-1, 4], np.int32),
                                   cache_leftpad=np.array([0, 1], np.int32))
    assert np.array_equal(kc, kc0)
