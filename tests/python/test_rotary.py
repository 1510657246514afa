"""Rotary position embedding: gpu_attention.apply_rotary_emb and flash_attn_with_kvcache's
rotary_cos / rotary_sin, against a float64 numpy rule (GPT-J and GPT-NeoX pairs, offsets as an int
or an array, rotary_dim < headdim), in place and not; and the errors, with nothing written."""
import math

import numpy as np
import pytest

import gpu_attention as ga
from reference import (assert_close, make, needs_cuda, needs_torch, on, ref_dense, rng_for, to64,
                       torch)

# (framework, dtype, device, tolerance relative to the largest value)
FRAMEWORKS = [
    ("numpy", "float16", "cpu", 2e-3),
    ("numpy", "float32", "cpu", 2e-6),
    pytest.param("torch", "bfloat16", "cpu", 1.6e-2, marks=needs_torch),
    pytest.param("torch", "float16", "cuda", 2e-3, marks=needs_cuda),
    pytest.param("torch", "bfloat16", "cuda", 1.6e-2, marks=needs_cuda),
]


def ref_rotary(x, cos, sin, positions, interleaved):
    """x float64 (B, S, H, D) rotated: positions (B, S) ints; cos/sin float64 (S_ro, R / 2)."""
    out = x.copy()
    half = cos.shape[1]
    c = cos[positions][:, :, None, :]  # (B, S, 1, R / 2)
    s = sin[positions][:, :, None, :]
    if interleaved:
        x1, x2 = x[..., 0:2 * half:2], x[..., 1:2 * half:2]
        out[..., 0:2 * half:2] = x1 * c - x2 * s
        out[..., 1:2 * half:2] = x1 * s + x2 * c
    else:
        x1, x2 = x[..., :half], x[..., half:2 * half]
        out[..., :half] = x1 * c - x2 * s
        out[..., half:2 * half] = x1 * s + x2 * c
    return out


def table(fw, dtype, device, n, half, rng, float32=False):
    """cos/sin of real angles (a base-10000 schedule), of `dtype` or float32."""
    inv = 10000.0 ** (-np.arange(half) / half)
    ang = np.arange(n)[:, None] * inv[None, :] + rng.uniform(0, 1, (1, half))
    out = []
    for f in (np.cos, np.sin):
        t = f(ang).astype(np.float32)
        if fw == "numpy":
            out.append(t if float32 else t.astype(dtype))
        else:
            t = torch.from_numpy(t)
            out.append(on(fw, device, t if float32 else t.to(getattr(torch, dtype))))
    return out


@pytest.mark.parametrize("fw,dtype,device,tol", FRAMEWORKS)
@pytest.mark.parametrize("interleaved", [False, True], ids=["neox", "gptj"])
@pytest.mark.parametrize("rotary_dim", [16, 64, 128])
@pytest.mark.parametrize("offsets", ["zero", "int", "array"])
def test_apply_rotary_emb_matches_the_rule(fw, dtype, device, tol, interleaved, rotary_dim,
                                           offsets):
    rng = rng_for("rotary", fw, dtype, device, interleaved, rotary_dim, offsets)
    B, S, H, D = 3, 37, 4, 128
    x = on(fw, device, make(fw, dtype, (B, S, H, D), rng))
    cos, sin = table(fw, dtype, device, 100, rotary_dim // 2, rng, float32=offsets == "int")
    if offsets == "array":
        offs = np.array([0, 20, 63], np.int32)
        arg = offs if fw == "numpy" else on(fw, device, torch.from_numpy(offs))
    else:
        offs = np.full(B, 0 if offsets == "zero" else 41, np.int32)
        arg = int(offs[0])
    positions = offs[:, None] + np.arange(S)[None, :]
    x0 = to64(x)
    got = ga.apply_rotary_emb(x, cos, sin, interleaved=interleaved, seqlen_offsets=arg)
    assert type(got) is type(x) and got.dtype == x.dtype and tuple(got.shape) == (B, S, H, D)
    want = ref_rotary(x0, to64(cos), to64(sin), positions, interleaved)
    assert_close(got, want, tol, "rotated x")
    assert np.array_equal(to64(got)[..., rotary_dim:], x0[..., rotary_dim:]), "features past R"
    assert np.array_equal(to64(x), x0), "x was written"
    same = ga.apply_rotary_emb(x, cos, sin, interleaved=interleaved, seqlen_offsets=arg,
                               inplace=True)
    assert same is x
    assert np.array_equal(to64(x), to64(got)), "in place differs from out of place"


@pytest.mark.parametrize("fw,dtype,device,tol", FRAMEWORKS)
def test_apply_rotary_emb_strided_x(fw, dtype, device, tol):
    """x as a view with gaps (heads of a bigger tensor): rotated as it is, no copy needed."""
    rng = rng_for("rotary-strided", fw, dtype, device)
    big = on(fw, device, make(fw, dtype, (2, 9, 6, 64), rng))
    x = big[:, :, 1:5]
    cos, sin = table(fw, dtype, device, 9, 32, rng)
    got = ga.apply_rotary_emb(x, cos, sin)
    want = ref_rotary(to64(x), to64(cos), to64(sin), np.tile(np.arange(9), (2, 1)), False)
    assert_close(got, want, tol, "rotated x")


def test_apply_rotary_emb_errors_name_the_value():
    rng = rng_for("rotary-errors")
    x = make("numpy", "float16", (2, 8, 2, 64), rng)
    cos, sin = table("numpy", "float16", "cpu", 10, 16, rng)
    x0 = x.copy()
    with pytest.raises(ValueError, match=r"seqlen_offsets is 3: rows 0..7 of sequence 0 take "
                                         r"positions 3..10, past the 10 positions of cos/sin"):
        ga.apply_rotary_emb(x, cos, sin, seqlen_offsets=3, inplace=True)
    with pytest.raises(ValueError, match=r"seqlen_offsets\[1\] is 4"):
        ga.apply_rotary_emb(x, cos, sin, seqlen_offsets=np.array([0, 4], np.int32),
                            inplace=True)
    with pytest.raises(ValueError, match="cos shape \\[10, 40\\] rotates 80 features, more than "
                                         "x's head dim 64"):
        wide = np.ones((10, 40), np.float16)
        ga.apply_rotary_emb(x, wide, wide, inplace=True)
    with pytest.raises(ValueError, match="sin shape \\[9, 16\\] differs from cos shape"):
        ga.apply_rotary_emb(x, cos, sin[:9], inplace=True)
    with pytest.raises(ValueError, match=r"seqlen_offsets=-1 must be in \[0, 2147483647\]"):
        ga.apply_rotary_emb(x, cos, sin, seqlen_offsets=-1)
    with pytest.raises(TypeError, match="seqlen_offsets must be an int or an int32 array"):
        ga.apply_rotary_emb(x, cos, sin, seqlen_offsets=True)
    assert np.array_equal(x, x0), "x was written by a refused call"


# ---- flash_attn_with_kvcache ---------------------------------------------------------------------


@pytest.mark.parametrize("fw,dtype,device,tol", FRAMEWORKS)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("interleaved", [True, False], ids=["gptj", "neox"])
@pytest.mark.parametrize("paged", [False, True], ids=["dense", "paged"])
def test_kvcache_rotary_matches_rotating_first(fw, dtype, device, tol, causal, interleaved, paged):
    """q and the new k rotated at their positions, then appended and attended: the same as the
    reference over the rotated rows. Query rows share cache_seqlens' position unless causal (which
    tells the two rules apart with 3 query rows). The cache holds the rotated k; the caller's q, k
    and v are unchanged."""
    rng = rng_for("kvcache-rotary", fw, dtype, device, causal, interleaved, paged)
    B, Hq, Hkv, D, cap, sq, rot = 2, 4, 2, 64, 48, 3, 32
    used = np.array([5, 30], np.int32)
    q = on(fw, device, make(fw, dtype, (B, sq, Hq, D), rng))
    k = on(fw, device, make(fw, dtype, (B, sq, Hkv, D), rng))
    v = on(fw, device, make(fw, dtype, (B, sq, Hkv, D), rng))
    kc = on(fw, device, make(fw, dtype, (B, cap, Hkv, D), rng))
    vc = on(fw, device, make(fw, dtype, (B, cap, Hkv, D), rng))
    cos, sin = table(fw, dtype, device, 64, rot // 2, rng)
    kc0, vc0, q0, k0, v0 = (to64(t) for t in (kc, vc, q, k, v))
    lens = used if fw == "numpy" else on(fw, device, torch.from_numpy(used))
    block_table = None
    cache_k, cache_v = kc, vc
    if paged:  # pages of 16 keys, sequence b's in pages [3b .. 3b + 2] of a pool in that order
        page = 16
        cache_k = kc.reshape(B * cap // page, page, Hkv, D)
        cache_v = vc.reshape(B * cap // page, page, Hkv, D)
        bt = np.arange(B * cap // page, dtype=np.int32).reshape(B, cap // page)
        block_table = bt if fw == "numpy" else on(fw, device, torch.from_numpy(bt))
    out = ga.flash_attn_with_kvcache(q, cache_k, cache_v, k=k, v=v, rotary_cos=cos,
                                     rotary_sin=sin, cache_seqlens=lens, causal=causal,
                                     rotary_interleaved=interleaved, block_table=block_table)
    c64, s64 = to64(cos), to64(sin)
    kpos = used[:, None] + np.arange(sq)[None, :]
    qpos = kpos if causal else np.repeat(used[:, None], sq, axis=1)
    k_rot = ref_rotary(k0, c64, s64, kpos, interleaved)
    q_rot = ref_rotary(q0, c64, s64, qpos, interleaved)
    # The cache: the rotated k (rounded to the cache's dtype) at used[b]..; v as given.
    kc_got, vc_got = to64(kc).reshape(B, cap, Hkv, D), to64(vc).reshape(B, cap, Hkv, D)
    for b in range(B):
        rows = slice(used[b], used[b] + sq)
        assert_close(kc_got[b, rows], k_rot[b], tol, f"cache k of sequence {b}")
        assert np.array_equal(vc_got[b, rows], v0[b]), f"cache v of sequence {b}"
        keep = np.ones(cap, bool)
        keep[rows] = False
        assert np.array_equal(kc_got[b, keep], kc0[b, keep]), "other cache rows written"
    for t, t0, name in ((q, q0, "q"), (k, k0, "k"), (v, v0, "v")):
        assert np.array_equal(to64(t), t0), f"the caller's {name} was written"
    # The attention over the cache as it ends up (its rotated k), with the rotated q.
    for b in range(B):
        n = used[b] + sq
        want, _ = ref_dense(q_rot[b:b + 1], kc_got[b:b + 1, :n], vc_got[b:b + 1, :n],
                            1 / math.sqrt(D), _bottom_right(causal))
        assert_close(out[b:b + 1], want, tol, f"out of sequence {b}")


def _bottom_right(causal):
    from reference import causal_rule
    return causal_rule(causal)


def test_kvcache_rotary_errors_leave_the_caches():
    rng = rng_for("kvcache-rotary-errors")
    q = make("numpy", "float16", (2, 1, 2, 64), rng)
    k = make("numpy", "float16", (2, 1, 2, 64), rng)
    v = make("numpy", "float16", (2, 1, 2, 64), rng)
    kc = make("numpy", "float16", (2, 16, 2, 64), rng)
    vc = make("numpy", "float16", (2, 16, 2, 64), rng)
    cos, sin = table("numpy", "float16", "cpu", 12, 16, rng)
    kc0, vc0 = kc.copy(), vc.copy()
    lens = np.array([3, 12], np.int32)
    with pytest.raises(ValueError, match=r"cache_seqlens\[1\] is 12: new key row 0 of sequence 1 "
                                         r"takes rotary position 12, past the 12 positions of "
                                         r"rotary_cos/rotary_sin"):
        ga.flash_attn_with_kvcache(q, kc, vc, k=k, v=v, rotary_cos=cos, rotary_sin=sin,
                                   cache_seqlens=lens)
    # The keys fit, three causal queries a sequence do not: the append checks q's rows too.
    q3 = make("numpy", "float16", (2, 3, 2, 64), rng)
    with pytest.raises(ValueError, match=r"cache_seqlens\[1\] is 10: query rows 0..2 of sequence "
                                         r"1 take rotary positions 10..12, past the 12"):
        ga.flash_attn_with_kvcache(q3, kc, vc, k=k, v=v, rotary_cos=cos, rotary_sin=sin,
                                   cache_seqlens=np.array([3, 10], np.int32), causal=True)
    with pytest.raises(ValueError, match="pass k and v with them"):
        ga.flash_attn_with_kvcache(q, kc, vc, rotary_cos=cos, rotary_sin=sin, cache_seqlens=lens)
    with pytest.raises(ValueError, match="rotary_cos and rotary_sin go together"):
        ga.flash_attn_with_kvcache(q, kc, vc, k=k, v=v, rotary_cos=cos, cache_seqlens=lens)
    with pytest.raises(ValueError, match="rotary_sin dtype float16 differs from rotary_cos dtype "
                                         "float32"):
        ga.flash_attn_with_kvcache(q, kc, vc, k=k, v=v, rotary_cos=cos.astype(np.float32),
                                   rotary_sin=sin, cache_seqlens=np.array([0, 0], np.int32))
    with pytest.raises(TypeError, match="rotary_interleaved must be True or False"):
        ga.flash_attn_with_kvcache(q, kc, vc, k=k, v=v, rotary_cos=cos, rotary_sin=sin,
                                   cache_seqlens=lens, rotary_interleaved=1)
    assert np.array_equal(kc, kc0) and np.array_equal(vc, vc0), "a refused call wrote a cache"


@pytest.mark.parametrize("window", [(-1, 3), (63, -1), (-1, 10), (5, 5), (-1, -1)],
                         ids=lambda w: f"window{w}")
def test_kvcache_rotary_windowed_queries_take_their_own_positions(window):
    """flash-attn's rule: a non-causal call's query i sits at cache_seqlens + i when the call has
    a window side under the cache's length (even one that reaches past every key, which the mask
    itself drops), else every query at cache_seqlens. The same as rotating by hand first."""
    rng = rng_for("kvcache-rotary-window", window)
    B, sq, H, D, cap, used = 1, 4, 2, 64, 64, 10
    q = make("numpy", "float32", (B, sq, H, D), rng)
    k = make("numpy", "float32", (B, sq, H, D), rng)
    v = make("numpy", "float32", (B, sq, H, D), rng)
    kc = make("numpy", "float32", (B, cap, H, D), rng)
    vc = make("numpy", "float32", (B, cap, H, D), rng)
    cos, sin = table("numpy", "float32", "cpu", 40, 16, rng)
    lens = np.array([used], np.int32)
    kc2, vc2 = kc.copy(), vc.copy()
    got = ga.flash_attn_with_kvcache(q, kc, vc, k=k, v=v, rotary_cos=cos, rotary_sin=sin,
                                     cache_seqlens=lens, window_size=window)
    per_row = window != (-1, -1)
    if per_row:
        q_rot = ga.apply_rotary_emb(q, cos, sin, interleaved=True, seqlen_offsets=used)
    else:  # every query row at position `used`: rows as a batch of one-row sequences
        rows = q.transpose(1, 0, 2, 3).copy()
        q_rot = ga.apply_rotary_emb(rows, cos, sin, interleaved=True,
                                    seqlen_offsets=np.full(sq, used, np.int32))
        q_rot = q_rot.transpose(1, 0, 2, 3).copy()
    k_rot = ga.apply_rotary_emb(k, cos, sin, interleaved=True, seqlen_offsets=used)
    want = ga.flash_attn_with_kvcache(q_rot, kc2, vc2, k=k_rot, v=v, cache_seqlens=lens,
                                      window_size=window)
    assert np.array_equal(got, want), "the queries were not rotated at flash-attn's positions"
    assert np.array_equal(kc, kc2) and np.array_equal(vc, vc2)


@needs_torch
def test_apply_rotary_emb_takes_int64_and_numpy_integer_offsets():
    rng = rng_for("rotary-int64")
    x = make("numpy", "float32", (2, 5, 2, 64), rng)
    cos, sin = table("numpy", "float32", "cpu", 20, 32, rng)
    want = ga.apply_rotary_emb(x, cos, sin, seqlen_offsets=np.array([3, 7], np.int32))
    got = ga.apply_rotary_emb(x, cos, sin, seqlen_offsets=np.array([3, 7], np.int64))
    assert np.array_equal(got, want)
    tx, tc, ts = (torch.from_numpy(a) for a in (x, cos, sin))
    got_t = ga.apply_rotary_emb(tx, tc, ts, seqlen_offsets=torch.tensor([3, 7]))  # int64
    assert np.array_equal(got_t.numpy(), want)
    one = ga.apply_rotary_emb(x, cos, sin, seqlen_offsets=np.int64(3))
    assert np.array_equal(one, ga.apply_rotary_emb(x, cos, sin, seqlen_offsets=3))
    with pytest.raises(ValueError, match=r"seqlen_offsets holds -1..7, outside \[0, 2147483647\]"):
        ga.apply_rotary_emb(x, cos, sin, seqlen_offsets=np.array([-1, 7], np.int64))
    with pytest.raises(TypeError, match="seqlen_offsets must be an int or an int32 array"):
        ga.apply_rotary_emb(x, cos, sin, seqlen_offsets=3.0)
    # Nothing to rotate: an array of no elements comes back as it is.
    empty = np.zeros((2, 0, 2, 64), np.float32)
    assert ga.apply_rotary_emb(empty, cos, sin).shape == (2, 0, 2, 64)
    assert ga.apply_rotary_emb(torch.zeros(0, 5, 2, 64), tc, ts, inplace=True).shape == (0, 5, 2,
                                                                                         64)


@pytest.mark.parametrize("fw,dtype,device,tol", FRAMEWORKS)
@pytest.mark.parametrize("inplace", [False, True], ids=["new", "inplace"])
@pytest.mark.parametrize("offsets", ["int", "array"])
def test_apply_rotary_emb_varlen_matches_each_sequence(fw, dtype, device, tol, inplace, offsets):
    """A packed batch (cu_seqlens, a sequence of no rows among them) rotates like each sequence
    alone: the same bits."""
    rng = rng_for("rotary-varlen", fw, dtype, device, inplace, offsets)
    lens = [5, 0, 17, 1]
    cu = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    x = on(fw, device, make(fw, dtype, (int(cu[-1]), 3, 64), rng))
    cos, sin = table(fw, dtype, device, 40, 16, rng)
    offs = np.array([0, 7, 20, 39], np.int32)
    arg = 4 if offsets == "int" else (offs if fw == "numpy" else on(fw, device,
                                                                    torch.from_numpy(offs)))
    x0 = x.copy() if fw == "numpy" else x.clone()
    cu_arg = cu if fw == "numpy" else on(fw, device, torch.from_numpy(cu))
    got = ga.apply_rotary_emb(x, cos, sin, seqlen_offsets=arg, cu_seqlens=cu_arg, max_seqlen=17,
                              inplace=inplace)
    assert (got is x) == inplace
    for b in range(len(lens)):
        a, e = int(cu[b]), int(cu[b + 1])
        if e == a:
            continue
        o = 4 if offsets == "int" else int(offs[b])
        want = ga.apply_rotary_emb(x0[a:e][None], cos, sin, seqlen_offsets=o)
        assert np.array_equal(to64(got[a:e][None]), to64(want)), f"sequence {b}"


def test_apply_rotary_emb_varlen_errors_write_nothing():
    rng = rng_for("rotary-varlen-errors")
    x = make("numpy", "float32", (10, 2, 64), rng)
    cos, sin = table("numpy", "float32", "cpu", 8, 16, rng)
    x0 = x.copy()
    cu = np.array([0, 4, 10], np.int32)
    with pytest.raises(ValueError, match=r"seqlen_offsets\[1\] is 3: rows 0..5 of sequence 1 take "
                                         r"positions 3..8, past the 8 positions of cos/sin"):
        ga.apply_rotary_emb(x, cos, sin, cu_seqlens=cu, seqlen_offsets=np.array([0, 3], np.int32),
                            inplace=True)
    with pytest.raises(ValueError, match=r"apply_rotary_emb: cu_seqlens\[2\] is 9, must be x's "
                                         r"10 rows"):
        ga.apply_rotary_emb(x, cos, sin, cu_seqlens=np.array([0, 4, 9], np.int32), inplace=True)
    with pytest.raises(ValueError, match=r"cu_seqlens\[2\] is 3, below cu_seqlens\[1\] = 5"):
        ga.apply_rotary_emb(x, cos, sin, cu_seqlens=np.array([0, 5, 3, 10], np.int64))
    with pytest.raises(ValueError, match=r"cu_seqlens holds -1..10, outside"):
        ga.apply_rotary_emb(x, cos, sin, cu_seqlens=np.array([-1, 10], np.int64))
    with pytest.raises(ValueError, match=r"sequence 1 has 6 rows \(cu_seqlens\[1..2\] = 4..10\), "
                                         "more than max_seqlen 5"):
        ga.apply_rotary_emb(x, cos, sin, cu_seqlens=cu, max_seqlen=5, inplace=True)
    with pytest.raises(ValueError, match=r"x has shape \(2, 5, 2, 64\); with cu_seqlens"):
        ga.apply_rotary_emb(x.reshape(2, 5, 2, 64), cos, sin, cu_seqlens=cu)
    with pytest.raises(ValueError, match="max_seqlen goes with cu_seqlens"):
        ga.apply_rotary_emb(x[None], cos, sin, max_seqlen=5)
    with pytest.raises(ValueError, match="sin shape \\[7, 16\\] differs from cos shape"):
        ga.apply_rotary_emb(x, cos, sin[:7], cu_seqlens=cu, inplace=True)
    assert np.array_equal(x, x0), "a refused call wrote x"
    # x without elements never reaches the library: its bounds are checked here.
    empty = np.zeros((0, 2, 64), np.float32)
    assert ga.apply_rotary_emb(empty, cos, sin, cu_seqlens=np.array([0, 0], np.int32)).shape == \
        (0, 2, 64)
    with pytest.raises(ValueError, match=r"cu_seqlens \[0, 1\] must be \(batch \+ 1,\) bounds "
                                         r"rising from 0 to x's 0 rows"):
        ga.apply_rotary_emb(empty, cos, sin, cu_seqlens=np.array([0, 1], np.int32))


@pytest.mark.parametrize("fw,dtype,device,tol", FRAMEWORKS)
def test_apply_rotary_emb_varlen_many_sequences_in_one_call(fw, dtype, device, tol):
    """200 packed sequences of 0-9 rows (int64 bounds; on torch CUDA, bounds and offsets left on
    the host and copied over) rotate as each sequence alone, GPT-J pairs, a partial rotary dim;
    strided int32 bounds too."""
    rng = rng_for("rotary-varlen-many", fw, dtype, device)
    lens = rng.integers(0, 10, size=200)
    lens[0] = 1
    cu = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    x = on(fw, device, make(fw, dtype, (int(cu[-1]), 2, 128), rng))
    cos, sin = table(fw, dtype, device, 16, 32, rng)
    offs = rng.integers(0, 7, size=200).astype(np.int32)
    offs_arg = offs if fw == "numpy" else torch.from_numpy(offs)  # torch: on the host
    cu_arg = cu if fw == "numpy" else torch.from_numpy(cu)
    got = ga.apply_rotary_emb(x, cos, sin, interleaved=True, seqlen_offsets=offs_arg,
                              cu_seqlens=cu_arg, max_seqlen=9)
    for b in range(len(lens)):
        a, e = int(cu[b]), int(cu[b + 1])
        if e > a:
            want = ga.apply_rotary_emb(x[a:e][None], cos, sin, interleaved=True,
                                       seqlen_offsets=int(offs[b]))
            assert np.array_equal(to64(got[a:e][None]), to64(want)), f"sequence {b}"
    strided = np.repeat(cu.astype(np.int32), 2)[::2]  # every bound twice, read every other
    strided_arg = strided if fw == "numpy" else torch.from_numpy(np.repeat(cu.astype(np.int32),
                                                                           2))[::2]
    again = ga.apply_rotary_emb(x, cos, sin, interleaved=True, seqlen_offsets=offs_arg,
                                cu_seqlens=strided_arg)
    assert np.array_equal(to64(again), to64(got)), "strided bounds"


def test_kvcache_rotary_edge_inputs():
    """Tables of no rows or pairs are named as the library names them; a q that is a view of
    cached rows (which the append overwrites) is rotated before the append, as a copy of it."""
    rng = rng_for("kvcache-rotary-edges")
    kc = make("numpy", "float16", (2, 16, 2, 64), rng)
    vc = make("numpy", "float16", (2, 16, 2, 64), rng)
    k = make("numpy", "float16", (2, 1, 2, 64), rng)
    v = make("numpy", "float16", (2, 1, 2, 64), rng)
    q = make("numpy", "float16", (2, 1, 2, 64), rng)
    lens = np.array([3, 3], np.int32)
    kc0 = kc.copy()
    for shape in ((0, 16), (12, 0)):
        empty = np.zeros(shape, np.float16)
        with pytest.raises(ValueError, match=r"rotary_cos has shape \[%d, %d\]: every size must "
                                             r"be positive" % shape):
            ga.flash_attn_with_kvcache(q, kc, vc, k=k, v=v, rotary_cos=empty, rotary_sin=empty,
                                       cache_seqlens=lens)
        assert np.array_equal(kc, kc0), "a refused call wrote k_cache"
    cos, sin = table("numpy", "float16", "cpu", 12, 16, rng)
    kc2, vc2 = kc.copy(), vc.copy()
    in_cache = kc[:, 3:4]  # row 3 of each sequence: where the new key lands
    copy = in_cache.copy()
    got = ga.flash_attn_with_kvcache(in_cache, kc, vc, k=k, v=v, rotary_cos=cos, rotary_sin=sin,
                                     cache_seqlens=lens, causal=True)
    want = ga.flash_attn_with_kvcache(copy, kc2, vc2, k=k, v=v, rotary_cos=cos, rotary_sin=sin,
                                      cache_seqlens=lens, causal=True)
    assert np.array_equal(got, want) and np.array_equal(kc, kc2)
