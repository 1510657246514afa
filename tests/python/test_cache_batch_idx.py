"""flash_attn_with_kvcache's cache_batch_idx: sequence b reads (and appends to) row
cache_batch_idx[b] of a dense cache of more rows than the batch, as the call over those rows
gathered would; rows no sequence names are never written; a bad index is named as passed, with
the caches untouched."""
import math

import numpy as np
import pytest

import gpu_attention as ga
from reference import (KVCACHE_FRAMEWORKS, assert_close, causal_rule, int32_on, make, on, ref_dense,
                       rng_for, to64, torch)

FRAMEWORKS = KVCACHE_FRAMEWORKS
arr = int32_on


@pytest.mark.parametrize("fw,dtype,device,tol", FRAMEWORKS)
@pytest.mark.parametrize("sq,sn", [(1, 1), (1, 0), (4, 4), (3, 0)], ids=lambda v: str(v))
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_cache_batch_idx_reads_and_writes_the_rows_it_names(fw, dtype, device, tol, sq, sn,
                                                            causal):
    rng = rng_for("batch-idx", fw, dtype, device, sq, sn, causal)
    B, Bc, cap, Hq, Hkv, D = 3, 5, 40, 4, 2, 64
    idx = np.array([4, 0, 2], np.int32)
    used = np.array([7, 0, 33], np.int32) if sn else np.array([7, 1, 40], np.int32)
    q = on(fw, device, make(fw, dtype, (B, sq, Hq, D), rng))
    kc = on(fw, device, make(fw, dtype, (Bc, cap, Hkv, D), rng))
    vc = on(fw, device, make(fw, dtype, (Bc, cap, Hkv, D), rng))
    kw = {}
    if sn:
        kw = dict(k=on(fw, device, make(fw, dtype, (B, sn, Hkv, D), rng)),
                  v=on(fw, device, make(fw, dtype, (B, sn, Hkv, D), rng)))
    kc0, vc0 = to64(kc), to64(vc)
    out, lse = ga.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=arr(fw, device, used),
                                          cache_batch_idx=arr(fw, device, idx), causal=causal,
                                          return_softmax_lse=True, **kw)
    kc1, vc1 = to64(kc), to64(vc)
    for r in range(Bc):
        if r not in idx:
            assert np.array_equal(kc1[r], kc0[r]) and np.array_equal(vc1[r], vc0[r]), \
                f"cache row {r}, which no sequence names, was written"
    for b in range(B):
        r = idx[b]
        if sn:
            rows = slice(used[b], used[b] + sn)
            assert np.array_equal(kc1[r, rows], to64(kw["k"])[b]), f"k of sequence {b}"
            assert np.array_equal(vc1[r, rows], to64(kw["v"])[b]), f"v of sequence {b}"
        n = used[b] + sn
        want, want_lse = ref_dense(to64(q)[b:b + 1], kc1[r:r + 1, :n], vc1[r:r + 1, :n],
                                   1 / math.sqrt(D), causal_rule(causal))
        assert_close(out[b:b + 1], want, tol, f"out of sequence {b}")
        assert_close(lse[b:b + 1], want_lse, tol, f"lse of sequence {b}")


@pytest.mark.parametrize("fw,dtype,device,tol", FRAMEWORKS)
def test_cache_batch_idx_with_rotary_and_the_whole_cache(fw, dtype, device, tol):
    """No cache_seqlens: every row of each named cache row attended; and with rotary the rotated
    k lands in the named row (the same as the call over the gathered rows)."""
    rng = rng_for("batch-idx-whole", fw, dtype, device)
    B, Bc, cap, H, D = 2, 3, 24, 2, 128
    idx = arr(fw, device, [2, 1])
    q = on(fw, device, make(fw, dtype, (B, 1, H, D), rng))
    kc = on(fw, device, make(fw, dtype, (Bc, cap, H, D), rng))
    vc = on(fw, device, make(fw, dtype, (Bc, cap, H, D), rng))
    out = ga.flash_attn_with_kvcache(q, kc, vc, cache_batch_idx=idx)
    gathered = [2, 1]
    want, _ = ref_dense(to64(q), to64(kc)[gathered], to64(vc)[gathered], 1 / math.sqrt(D),
                        causal_rule(False))
    assert_close(out, want, tol, "out")
    # With rotary and an append: the same as the gathered call, and the row written back.
    k = on(fw, device, make(fw, dtype, (B, 1, H, D), rng))
    v = on(fw, device, make(fw, dtype, (B, 1, H, D), rng))
    c = np.cos(np.arange(30)[:, None] * 0.1 * np.arange(1, 9)[None, :]).astype(np.float32)
    s = np.sin(np.arange(30)[:, None] * 0.1 * np.arange(1, 9)[None, :]).astype(np.float32)
    cos, sin = (x if fw == "numpy" else on(fw, device, torch.from_numpy(x)) for x in (c, s))
    lens = arr(fw, device, [5, 23])
    sel = [2, 1] if fw == "numpy" else torch.tensor([2, 1], device=kc.device)
    kg, vg = kc[sel], vc[sel]  # copies (advanced indexing), appended to by the gathered call
    want = ga.flash_attn_with_kvcache(q, kg, vg, k=k, v=v, rotary_cos=cos, rotary_sin=sin,
                                      cache_seqlens=lens, causal=True)
    got = ga.flash_attn_with_kvcache(q, kc, vc, k=k, v=v, rotary_cos=cos, rotary_sin=sin,
                                     cache_seqlens=lens, causal=True, cache_batch_idx=idx)
    assert np.array_equal(to64(got), to64(want)), "differs from the call over the gathered rows"
    assert np.array_equal(to64(kc)[[2, 1]], to64(kg)), "the rows written differ"
    assert np.array_equal(to64(vc)[[2, 1]], to64(vg)), "the rows written differ"


def test_cache_batch_idx_errors_name_it_and_leave_the_caches():
    rng = rng_for("batch-idx-errors")
    q = make("numpy", "float16", (2, 1, 2, 64), rng)
    k = make("numpy", "float16", (2, 1, 2, 64), rng)
    kc = make("numpy", "float16", (3, 16, 2, 64), rng)
    vc = make("numpy", "float16", (3, 16, 2, 64), rng)
    kc0, vc0 = kc.copy(), vc.copy()
    lens = np.array([3, 4], np.int32)
    call = dict(k=k, v=k, cache_seqlens=lens)
    with pytest.raises(ValueError, match=r"cache_batch_idx\[1\] is 3, must be a row of k_cache "
                                         r"in \[0, 3\)"):
        ga.flash_attn_with_kvcache(q, kc, vc, cache_batch_idx=np.array([0, 3], np.int32), **call)
    with pytest.raises(ValueError, match=r"cache_batch_idx\[0\] is -1"):
        ga.flash_attn_with_kvcache(q, kc, vc, cache_batch_idx=np.array([-1, 0], np.int32), **call)
    with pytest.raises(ValueError, match="cache_batch_idx has dtype int64, which is not supported"):
        ga.flash_attn_with_kvcache(q, kc, vc, cache_batch_idx=np.array([0, 1]), **call)
    with pytest.raises(ValueError, match=r"cache_batch_idx has shape \(3,\), expected \(batch,\) "
                                         r"= \(2,\)"):
        ga.flash_attn_with_kvcache(q, kc, vc, cache_batch_idx=np.array([0, 1, 2], np.int32),
                                   **call)
    with pytest.raises(ValueError, match="pass one of the two"):
        ga.flash_attn_with_kvcache(q, kc, vc, cache_batch_idx=np.array([0, 1], np.int32),
                                   block_table=np.array([[0], [1]], np.int32), **call)
    assert np.array_equal(kc, kc0) and np.array_equal(vc, vc0), "a refused call wrote a cache"
