"""Block-sparse layouts through sparse_attn_func / sparse_attn_varlen_func (block_mask, block_size),
on the CPU backend and (torch tensors, where a GPU is present) the CUDA backend, against a float64
numpy reference that applies the visibility rule element by element: visible iff the element's
block is on AND causal, the window and the global tokens allow it (gpuattn::MaskSpec in
include/gpuattn/attention.h).

Run with the built package on the path:  PYTHONPATH=<build>/python python3 -m pytest tests/python
"""

import math

import numpy as np
import pytest

import gpu_attention as ga
from reference import (CASES, assert_close, cu_seqlens, int32, make, needs_torch, qkv, ref_dense,
                       ref_varlen, rng_for, to64, torch, visibility)

# ---- reference -----------------------------------------------------------------------------------


def block_visibility(layout, sq, sk, block_q, block_k):
    """[H, sq, sk] bool from a layout [H, >= ceil(sq / block_q), >= ceil(sk / block_k)]: element
    (h, i, j) is on iff byte (h, i // block_q, j // block_k) is nonzero."""
    layout = np.asarray(layout).astype(bool)
    rows = np.arange(sq) // block_q
    cols = np.arange(sk) // block_k
    return layout[:, rows][:, :, cols]


def rule(layout, block_q, block_k, causal=False, window=(-1, -1), g=0, stride=0):
    """vis_fn(sq, sk) -> [H, sq, sk]: block on AND causal/window/global."""
    return lambda sq, sk: (block_visibility(layout, sq, sk, block_q, block_k)
                           & visibility(sq, sk, causal, window, g, stride)[None])


def test_reference_block_rule_by_hand():
    """Sq=5, Sk=3, blocks 2x2 (partial last blocks): layout [[1, 0], [0, 1], [1, 1]]."""
    layout = np.array([[[1, 0], [0, 1], [1, 1]]], np.uint8)
    vis = block_visibility(layout, 5, 3, 2, 2)[0]
    assert vis.astype(int).tolist() == [[1, 1, 0], [1, 1, 0], [0, 0, 1], [0, 0, 1], [1, 1, 1]]
    # AND with causal (p = i - 2): every position global, so causal AND blocks decide
    vis = rule(layout, 2, 2, causal=True, window=(0, 0), g=3)(5, 3)[0]
    assert vis.astype(int).tolist() == [[0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0], [1, 1, 1]]
    # window 0 + global key/position 0: global tokens do not reach into off blocks (row 3: the
    # window key 1 and the global key 0 lie in the off block (1, 0))
    vis = rule(layout, 2, 2, window=(0, 0), g=1)(5, 3)[0]
    assert vis.astype(int).tolist() == [[1, 0, 0], [1, 0, 0], [0, 0, 1], [0, 0, 0], [1, 0, 1]]


# ---- helpers -------------------------------------------------------------------------------------


def random_layout(rng, heads, sq, sk, block_q, block_k, sparsity):
    """uint8 [heads, ceil(sq/bq), ceil(sk/bk)] with about `sparsity` of the blocks off."""
    shape = (heads, -(-sq // block_q), -(-sk // block_k))
    return (rng.random(shape) >= sparsity).astype(np.uint8)


def as_fw(fw, layout):
    return layout if fw == "numpy" else torch.from_numpy(layout)


def pair(bs):
    return bs if isinstance(bs, tuple) else (bs, bs)


# (B, Sq, Sk, Hq, Hkv, D): no length is a multiple of 16
SHAPES = [
    (2, 77, 77, 4, 4, 64),  # Sq == Sk
    (1, 150, 290, 8, 2, 128),  # Sq < Sk, GQA 4:1
    (2, 300, 131, 4, 1, 64),  # Sq > Sk, MQA
    (2, 1, 201, 4, 2, 64),  # decode: one query row
    (1, 100, 140, 4, 2, 256),  # head dim 256
]
BLOCKS = [16, 64, 128, (16, 64), (128, 32)]

# ---- the layout alone ----------------------------------------------------------------------------


@pytest.mark.parametrize("fw,dtype,tol,lse_tol", CASES)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("block_size", BLOCKS, ids=lambda b: "b%dx%d" % pair(b))
@pytest.mark.parametrize("sparsity", [0.5, 0.9])
@pytest.mark.parametrize("shared", [False, True], ids=["per_head", "shared"])
def test_block_mask_matches_reference(fw, dtype, tol, lse_tol, shape, block_size, sparsity, shared):
    b, sq, sk, hq, hkv, d = shape
    bq, bk = pair(block_size)
    rng = rng_for("block", fw, dtype, shape, block_size, sparsity, shared)
    q, k, v = qkv(fw, dtype, b, sq, sk, hq, hkv, d, rng)
    layout = random_layout(rng, 1 if shared else hq, sq, sk, bq, bk, sparsity)
    out, lse, probs = ga.sparse_attn_func(q, k, v, block_mask=as_fw(fw, layout),
                                          block_size=block_size, return_attn_probs=True)
    assert probs is None
    assert type(out) is type(q) and out.dtype == q.dtype
    want_out, want_lse = ref_dense(to64(q), to64(k), to64(v), 1 / math.sqrt(d),
                                   rule(layout, bq, bk))
    assert_close(out, want_out, tol, "out")
    assert_close(lse, want_lse, lse_tol, "lse")
    plain = ga.sparse_attn_func(q, k, v, block_mask=as_fw(fw, layout), block_size=block_size)
    assert np.array_equal(to64(plain), to64(out))


# ---- the layout combined with causal, windows and global tokens ----------------------------------

# (window, causal, global_tokens, global_stride)
COMBOS = [
    ((-1, -1), True, 0, 0),  # causal
    ((8, 4), False, 0, 0),  # window
    ((16, 0), True, 0, 0),  # causal sliding window
    ((16, 0), True, 4, 0),  # + leading global tokens (they do not reach into off blocks)
    ((3, 3), False, 0, 16),  # strided globals
    ((2, 1), False, 3, 10),
    ((0, 0), True, 0, 0),  # window 0
    ((2, 2), True, 500, 0),  # G > S: causal AND blocks
    ((300, 300), False, 2, 0),  # window longer than the sequence: blocks only
]
COMBO_IDS = [f"w{l}_{r}{'_causal' if c else ''}_g{g}_s{s}" for (l, r), c, g, s in COMBOS]


@pytest.mark.parametrize("fw,dtype,tol,lse_tol", CASES)
@pytest.mark.parametrize("shape", SHAPES[:3], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("block_size", [16, 64], ids=lambda b: f"b{b}")
@pytest.mark.parametrize("window,causal,g,stride", COMBOS, ids=COMBO_IDS)
def test_block_mask_with_other_masks(fw, dtype, tol, lse_tol, shape, block_size, window, causal,
                                     g, stride):
    b, sq, sk, hq, hkv, d = shape
    rng = rng_for("block-combo", fw, dtype, shape, block_size, window, causal, g, stride)
    q, k, v = qkv(fw, dtype, b, sq, sk, hq, hkv, d, rng)
    layout = random_layout(rng, hq, sq, sk, block_size, block_size, 0.5)
    out, lse, _ = ga.sparse_attn_func(q, k, v, causal=causal, window_size=window, global_tokens=g,
                                      global_stride=stride, block_mask=as_fw(fw, layout),
                                      block_size=block_size, return_attn_probs=True)
    want_out, want_lse = ref_dense(to64(q), to64(k), to64(v), 1 / math.sqrt(d),
                                   rule(layout, block_size, block_size, causal, window, g, stride))
    assert_close(out, want_out, tol, "out")
    assert_close(lse, want_lse, lse_tol, "lse")


# ---- varlen --------------------------------------------------------------------------------------


@pytest.mark.parametrize("fw,dtype,tol,lse_tol", CASES)
@pytest.mark.parametrize("block_size", [16, 64, (128, 16)], ids=lambda b: "b%dx%d" % pair(b))
@pytest.mark.parametrize("shared", [False, True], ids=["per_head", "shared"])
@pytest.mark.parametrize("sparsity", [0.5, 0.9])
@pytest.mark.parametrize("window,causal,g,stride", [((-1, -1), False, 0, 0),
                                                    ((-1, -1), True, 0, 0),
                                                    ((6, 0), True, 2, 0), ((3, 2), False, 1, 7)],
                         ids=["blocks", "causal", "w6_0_causal_g2", "w3_2_g1_s7"])
def test_block_mask_varlen_matches_reference(fw, dtype, tol, lse_tol, block_size, shared, sparsity,
                                             window, causal, g, stride):
    lens_q = [1, 77, 33, 160, 5, 1]
    lens_k = [9, 77, 12, 200, 5, 1]  # Sq > Sk in sequence 2; length-1 sequences
    cu_q, cu_k = cu_seqlens(lens_q), cu_seqlens(lens_k)
    hq, hkv, d = 8, 2, 64
    bq, bk = pair(block_size)
    rng = rng_for("block-varlen", fw, dtype, block_size, shared, sparsity, window, causal)
    q = make(fw, dtype, (cu_q[-1], hq, d), rng)
    k = make(fw, dtype, (cu_k[-1], hkv, d), rng)
    v = make(fw, dtype, (cu_k[-1], hkv, d), rng)
    layout = random_layout(rng, 1 if shared else hq, max(lens_q), max(lens_k), bq, bk, sparsity)
    out, lse, _ = ga.sparse_attn_varlen_func(
        q, k, v, int32(fw, cu_q), int32(fw, cu_k), max(lens_q), max(lens_k), causal=causal,
        window_size=window, global_tokens=g, global_stride=stride, block_mask=as_fw(fw, layout),
        block_size=block_size, return_attn_probs=True)
    assert tuple(lse.shape) == (hq, cu_q[-1])
    want_out, want_lse = ref_varlen(to64(q), to64(k), to64(v), cu_q, cu_k, 1 / math.sqrt(d),
                                    rule(layout, bq, bk, causal, window, g, stride))
    assert_close(out, want_out, tol, "out")
    assert_close(lse, want_lse, lse_tol, "lse")


def test_block_mask_varlen_length_one_sequences():
    """Length-1 sequences use only block (0, 0): its bit alone decides whether the row sees its
    key."""
    cu = np.array([0, 1, 2, 3], np.int32)
    rng = rng_for("block-len1")
    q = make("numpy", "float32", (3, 2, 64), rng)
    k = make("numpy", "float32", (3, 2, 64), rng)
    v = make("numpy", "float32", (3, 2, 64), rng)
    layout = np.array([[[1]], [[0]]], np.uint8)  # head 0 on, head 1 off
    out, lse, _ = ga.sparse_attn_varlen_func(q, k, v, cu, cu, 1, 1, block_mask=layout,
                                             block_size=16, return_attn_probs=True)
    assert_close(out[:, 0], to64(v[:, 0]), 2e-6, "head 0 out")  # one visible key: out = v
    assert np.all(out[:, 1] == 0) and np.all(np.isneginf(lse[1]))
    assert np.all(np.isfinite(lse[0]))


# ---- rows without keys, layout forms -------------------------------------------------------------


def test_rows_with_every_block_off():
    """A block row that is all off: out exactly 0, lse -inf, for that block's rows only; an
    all-off layout gives an all-zero output."""
    rng = rng_for("block-empty-rows")
    q, k, v = qkv("numpy", "float32", 2, 100, 90, 4, 2, 64, rng)
    layout = np.ones((4, 7, 6), np.uint8)  # blocks of 16: 7 x 6
    layout[1, 2] = 0  # head 1, rows 32..47
    layout[:, 6] = 0  # every head, rows 96..99 (the partial last block)
    out, lse, _ = ga.sparse_attn_func(q, k, v, block_mask=layout, block_size=16,
                                      return_attn_probs=True)
    assert np.all(out[:, 32:48, 1] == 0) and np.all(np.isneginf(lse[:, 1, 32:48]))
    assert np.all(out[:, 96:] == 0) and np.all(np.isneginf(lse[:, :, 96:]))
    finite = np.ones(lse.shape, bool)
    finite[:, 1, 32:48] = False
    finite[:, :, 96:] = False
    assert np.array_equal(np.isfinite(lse), finite)
    want_out, want_lse = ref_dense(to64(q), to64(k), to64(v), 1 / 8, rule(layout, 16, 16))
    assert_close(out, want_out, 2e-5, "out")
    assert_close(lse, want_lse, 2e-5, "lse")
    out, lse, _ = ga.sparse_attn_func(q, k, v, block_mask=np.zeros((1, 1, 1), np.uint8),
                                      block_size=128, return_attn_probs=True)
    assert np.all(out == 0) and np.all(np.isneginf(lse))


def test_bool_and_uint8_masks_agree():
    rng = rng_for("block-bool")
    q, k, v = qkv("numpy", "float16", 2, 130, 200, 4, 2, 64, rng)
    on = rng.random((4, 3, 4)) >= 0.5
    on[:, :, 0] = True
    mask_bool = on.copy()
    want = ga.sparse_attn_func(q, k, v, block_mask=on.astype(np.uint8), block_size=64)
    got = ga.sparse_attn_func(q, k, v, block_mask=mask_bool, block_size=64)
    assert np.array_equal(got, want)
    assert mask_bool.dtype == bool and np.array_equal(mask_bool, on)  # the caller's mask as it was
    # a reversed view (negative strides) reads as its copy
    flipped = np.ascontiguousarray(on.astype(np.uint8)[:, ::-1, ::-1])
    view = flipped[:, ::-1, ::-1]  # equal to `on`, with negative strides
    assert view.strides[1] < 0 and np.array_equal(view, on)
    assert np.array_equal(ga.sparse_attn_func(q, k, v, block_mask=view, block_size=64), want)
    # any nonzero byte is "on"
    bytes_ = np.where(on, rng.integers(1, 256, on.shape), 0).astype(np.uint8)
    assert np.array_equal(ga.sparse_attn_func(q, k, v, block_mask=bytes_, block_size=64), want)
    cu = np.array([0, 130, 260], np.int32)
    kcu = np.array([0, 200, 400], np.int32)
    flat = [x.reshape(-1, *x.shape[2:]) for x in (q, k, v)]
    got = ga.sparse_attn_varlen_func(*flat, cu, kcu, 130, 200, block_mask=mask_bool,
                                     block_size=64)
    assert np.array_equal(got, want.reshape(260, 4, 64))


@needs_torch
def test_torch_bool_and_uint8_masks_agree():
    rng = rng_for("block-bool-torch")
    q, k, v = qkv("torch", "bfloat16", 2, 130, 200, 4, 2, 64, rng)
    on = torch.from_numpy(rng.random((4, 3, 4)) >= 0.5)
    mask_bool = on.clone()
    want = ga.sparse_attn_func(q, k, v, block_mask=on.to(torch.uint8), block_size=64)
    got = ga.sparse_attn_func(q, k, v, block_mask=mask_bool, block_size=64)
    assert torch.equal(got, want)
    assert mask_bool.dtype == torch.bool and torch.equal(mask_bool, on)
    # a numpy mask with torch CPU tensors works too
    assert torch.equal(ga.sparse_attn_func(q, k, v, block_mask=on.numpy(), block_size=64), want)


def test_layout_views_and_defaults():
    """Shared layout == the same layout repeated per head; broadcast and non-contiguous views
    work; an all-on layout is dense attention; block_size as an int or a pair."""
    rng = rng_for("block-views")
    q, k, v = qkv("numpy", "float32", 2, 200, 150, 4, 2, 64, rng)
    shared = random_layout(rng, 1, 200, 150, 64, 64, 0.5)
    want = ga.sparse_attn_func(q, k, v, block_mask=shared, block_size=64)
    assert np.array_equal(
        ga.sparse_attn_func(q, k, v, block_mask=np.repeat(shared, 4, axis=0), block_size=64), want)
    assert np.array_equal(
        ga.sparse_attn_func(q, k, v, block_mask=np.broadcast_to(shared, (4, 4, 3)),
                            block_size=(64, 64)), want)
    assert np.array_equal(
        ga.sparse_attn_func(q, k, v, block_mask=shared.astype(bool), block_size=[64, 64]), want)
    transposed = np.ascontiguousarray(shared.transpose(0, 2, 1)).transpose(0, 2, 1)
    assert not transposed.flags.c_contiguous
    assert np.array_equal(ga.sparse_attn_func(q, k, v, block_mask=transposed, block_size=64), want)
    strided = np.repeat(shared, 2, axis=2)[:, :, ::2]  # a stride of 2 in the last dimension
    assert np.array_equal(ga.sparse_attn_func(q, k, v, block_mask=strided, block_size=64), want)
    # every block on: the same as no block mask
    dense = ga.sparse_attn_func(q, k, v)
    assert_close(ga.sparse_attn_func(q, k, v, block_mask=np.ones((1, 2, 2), np.uint8)), to64(dense),
                 2e-6, "all-on 128")
    assert_close(ga.sparse_attn_func(q, k, v, causal=True, block_mask=np.ones((4, 13, 10), bool),
                                     block_size=16),
                 to64(ga.sparse_attn_func(q, k, v, causal=True)), 2e-6, "all-on causal")
    # block_size is ignored without a block mask
    assert np.array_equal(ga.sparse_attn_func(q, k, v, block_size=24), dense)


# ---- errors --------------------------------------------------------------------------------------


@pytest.fixture
def small():
    rng = rng_for("block-errors")
    return qkv("numpy", "float16", 2, 100, 70, 4, 2, 64, rng)  # blocks of 16: 7 x 5


def test_wrong_layout_shape_raises(small):
    q, k, v = small
    for shape in [(3, 7, 5), (2, 7, 5), (4, 6, 5), (4, 8, 5), (4, 7, 4), (4, 7, 6)]:
        with pytest.raises(ValueError, match=r"mask.block_sparse.layout shape .*\[4 or 1, 7, 5\]"):
            ga.sparse_attn_func(q, k, v, block_mask=np.ones(shape, np.uint8), block_size=16)
    # a layout for other block sizes
    with pytest.raises(ValueError, match=r"\[4 or 1, 2, 2\].*block_q 64, block_k 64"):
        ga.sparse_attn_func(q, k, v, block_mask=np.ones((4, 7, 5), np.uint8), block_size=64)
    for shape in [(7, 5), (1, 4, 7, 5), (35,)]:
        with pytest.raises(ValueError, match="mask.block_sparse.layout has rank"):
            ga.sparse_attn_func(q, k, v, block_mask=np.ones(shape, np.uint8), block_size=16)
    with pytest.raises(ValueError, match="mask.block_sparse.layout"):
        ga.sparse_attn_func(q, k, v, block_mask=np.ones((1, 2, 5, 7, 1), np.uint8), block_size=16)
    with pytest.raises(ValueError, match="mask.block_sparse.layout"):
        ga.sparse_attn_func(q, k, v, block_mask=np.ones((4, 0, 5), np.uint8), block_size=16)
    # varlen: the layout follows max_seqlen, not the packed totals
    flat = [x.reshape(-1, *x.shape[2:]) for x in (q, k, v)]
    cu_q = np.array([0, 60, 200], np.int32)
    cu_k = np.array([0, 40, 140], np.int32)
    ga.sparse_attn_varlen_func(*flat, cu_q, cu_k, 140, 100, block_mask=np.ones((1, 9, 7), bool),
                               block_size=16)
    with pytest.raises(ValueError, match=r"max_seqlen_q.*\[4 or 1, 9, 7\]"):
        ga.sparse_attn_varlen_func(*flat, cu_q, cu_k, 140, 100,
                                   block_mask=np.ones((1, 13, 9), bool), block_size=16)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.int8, np.int64,
                                   np.uint16, np.float64, np.complex64])
def test_wrong_layout_dtype_raises(small, dtype):
    q, k, v = small
    with pytest.raises(ValueError, match=r"mask.block_sparse.layout has dtype .*uint8"):
        ga.sparse_attn_func(q, k, v, block_mask=np.ones((4, 7, 5), dtype), block_size=16)


def test_uint8_elsewhere_still_refused(small):
    """The binding maps DLPack uint8 to the library's u8 for layouts; as q, k/v or cu_seqlens a
    uint8 array is refused as before (q: not supported; others: invalid)."""
    q, k, v = small
    u8 = np.ones(q.shape, np.uint8)
    with pytest.raises(NotImplementedError, match="uint8"):
        ga.sparse_attn_func(u8, k, v)
    with pytest.raises(ValueError, match="dtype"):
        ga.sparse_attn_func(q, np.ones(k.shape, np.uint8), v)
    flat = q.reshape(200, 4, 64)
    kflat = k.reshape(140, 2, 64)
    with pytest.raises(ValueError, match="cu_seqlens_q has dtype uint8, expected int32"):
        ga.sparse_attn_varlen_func(flat, kflat, kflat, np.array([0, 100, 200], np.uint8),
                                   np.array([0, 70, 140], np.int32), 100, 70)


def test_bad_block_size_and_type_raise(small):
    q, k, v = small
    layout = np.ones((1, 7, 5), np.uint8)
    for bad in [(16,), (16, 16, 16), "16", None, 16.0, (16, 1.5), (True, 16), True, (16, None)]:
        with pytest.raises(ValueError, match="block_size"):
            ga.sparse_attn_func(q, k, v, block_mask=layout, block_size=bad)
    for bad in [0, -16, (16, 0), (-16, 16), 2**31]:
        with pytest.raises(ValueError, match="block_size"):
            ga.sparse_attn_func(q, k, v, block_mask=layout, block_size=bad)
    for bad in [24, (16, 8), (1, 16)]:
        with pytest.raises(NotImplementedError, match="not a multiple of 16"):
            ga.sparse_attn_func(q, k, v, block_mask=np.ones((1, 100, 70), np.uint8),
                                block_size=bad)
    for bad in [[[[1]]], 1, "mask"]:
        with pytest.raises(TypeError, match="block_mask"):
            ga.sparse_attn_func(q, k, v, block_mask=bad)
    # Without a block_mask, block_size is ignored, as documented (it was parsed and refused).
    plain = ga.sparse_attn_func(q, k, v)
    for ignored in [0, None, "16", (16, 8)]:
        assert np.array_equal(ga.sparse_attn_func(q, k, v, block_size=ignored), plain)
    with pytest.raises(TypeError):
        ga.sparse_attn_func(q, k, v, None, np.ones((1, 1, 1), np.uint8))  # keyword-only


def test_module_docs_block_mask():
    for f in (ga.sparse_attn_func, ga.sparse_attn_varlen_func):
        assert "block_mask" in f.__doc__
    assert "block_mask[h, i // block_q, j // block_k]" in ga.sparse_attn_func.__doc__


# ---- CUDA ----------------------------------------------------------------------------------------

needs_cuda = pytest.mark.skipif(
    torch is None or not torch.cuda.is_available() or not ga.cuda_available(),
    reason="needs torch, a CUDA build of gpu_attention and a CUDA device")

# (dtype, tolerance on out, tolerance on lse) for the CUDA kernels: P and out are rounded to the
# input type (fp16 keeps 10 mantissa bits, bf16 7), lse stays fp32.
CUDA_DTYPES = [("float16", 4e-3, 1e-3), ("bfloat16", 1.6e-2, 1e-2)]
CUDA_DTYPE_IDS = ["f16", "bf16"]


def cuda_qkv(dtype, b, sq, sk, hq, hkv, d, rng):
    """Host torch q, k, v (the reference reads these) and their CUDA copies."""
    host = qkv("torch", dtype, b, sq, sk, hq, hkv, d, rng)
    return host, tuple(x.cuda() for x in host)


def check_cuda_result(out, lse, q, want_out, want_lse, tol, lse_tol):
    torch.cuda.synchronize()
    assert out.is_cuda and lse.is_cuda and out.dtype == q.dtype and lse.dtype == torch.float32
    assert_close(out.cpu(), want_out, tol, "out")
    assert_close(lse.cpu(), want_lse, lse_tol, "lse")


@needs_torch
@needs_cuda
@pytest.mark.parametrize("dtype,tol,lse_tol", CUDA_DTYPES, ids=CUDA_DTYPE_IDS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("block_size", BLOCKS, ids=lambda b: "b%dx%d" % pair(b))
@pytest.mark.parametrize("sparsity", [0.5, 0.9])
@pytest.mark.parametrize("shared", [False, True], ids=["per_head", "shared"])
def test_torch_cuda_block_mask_matches_reference(dtype, tol, lse_tol, shape, block_size, sparsity,
                                                 shared):
    b, sq, sk, hq, hkv, d = shape
    bq, bk = pair(block_size)
    rng = rng_for("block-cuda", dtype, shape, block_size, sparsity, shared)
    (q, k, v), (dq, dk, dv) = cuda_qkv(dtype, b, sq, sk, hq, hkv, d, rng)
    layout = random_layout(rng, 1 if shared else hq, sq, sk, bq, bk, sparsity)
    out, lse, probs = ga.sparse_attn_func(dq, dk, dv, block_mask=torch.from_numpy(layout).cuda(),
                                          block_size=block_size, return_attn_probs=True)
    assert probs is None
    want_out, want_lse = ref_dense(to64(q), to64(k), to64(v), 1 / math.sqrt(d),
                                   rule(layout, bq, bk))
    check_cuda_result(out, lse, q, want_out, want_lse, tol, lse_tol)


@needs_torch
@needs_cuda
@pytest.mark.parametrize("dtype,tol,lse_tol", CUDA_DTYPES, ids=CUDA_DTYPE_IDS)
@pytest.mark.parametrize("shape", SHAPES[:3], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("block_size", [16, 64, (32, 128)], ids=lambda b: "b%dx%d" % pair(b))
@pytest.mark.parametrize("window,causal,g,stride", COMBOS, ids=COMBO_IDS)
def test_torch_cuda_block_mask_with_other_masks(dtype, tol, lse_tol, shape, block_size, window,
                                                causal, g, stride):
    b, sq, sk, hq, hkv, d = shape
    bq, bk = pair(block_size)
    rng = rng_for("block-combo-cuda", dtype, shape, block_size, window, causal, g, stride)
    (q, k, v), (dq, dk, dv) = cuda_qkv(dtype, b, sq, sk, hq, hkv, d, rng)
    layout = random_layout(rng, hq, sq, sk, bq, bk, 0.5)
    out, lse, _ = ga.sparse_attn_func(dq, dk, dv, causal=causal, window_size=window,
                                      global_tokens=g, global_stride=stride,
                                      block_mask=torch.from_numpy(layout).cuda(),
                                      block_size=block_size, return_attn_probs=True)
    want_out, want_lse = ref_dense(to64(q), to64(k), to64(v), 1 / math.sqrt(d),
                                   rule(layout, bq, bk, causal, window, g, stride))
    check_cuda_result(out, lse, q, want_out, want_lse, tol, lse_tol)


@needs_torch
@needs_cuda
@pytest.mark.parametrize("dtype,tol,lse_tol", CUDA_DTYPES, ids=CUDA_DTYPE_IDS)
@pytest.mark.parametrize("block_size", [16, 64, (128, 16)], ids=lambda b: "b%dx%d" % pair(b))
@pytest.mark.parametrize("shared", [False, True], ids=["per_head", "shared"])
@pytest.mark.parametrize("sparsity", [0.5, 0.9])
@pytest.mark.parametrize("window,causal,g,stride", [((-1, -1), False, 0, 0),
                                                    ((-1, -1), True, 0, 0),
                                                    ((6, 0), True, 2, 0), ((3, 2), False, 1, 7)],
                         ids=["blocks", "causal", "w6_0_causal_g2", "w3_2_g1_s7"])
def test_torch_cuda_block_mask_varlen(dtype, tol, lse_tol, block_size, shared, sparsity, window,
                                      causal, g, stride):
    lens_q = [1, 77, 33, 160, 5, 1]
    lens_k = [9, 77, 12, 200, 5, 1]  # Sq > Sk in sequence 2; length-1 sequences
    cu_q, cu_k = cu_seqlens(lens_q), cu_seqlens(lens_k)
    hq, hkv, d = 8, 2, 128
    bq, bk = pair(block_size)
    rng = rng_for("block-varlen-cuda", dtype, block_size, shared, sparsity, window, causal)
    q = make("torch", dtype, (cu_q[-1], hq, d), rng)
    k = make("torch", dtype, (cu_k[-1], hkv, d), rng)
    v = make("torch", dtype, (cu_k[-1], hkv, d), rng)
    layout = random_layout(rng, 1 if shared else hq, max(lens_q), max(lens_k), bq, bk, sparsity)
    out, lse, _ = ga.sparse_attn_varlen_func(
        q.cuda(), k.cuda(), v.cuda(), int32("torch", cu_q).cuda(), int32("torch", cu_k).cuda(),
        max(lens_q), max(lens_k), causal=causal, window_size=window, global_tokens=g,
        global_stride=stride, block_mask=torch.from_numpy(layout).cuda(), block_size=block_size,
        return_attn_probs=True)
    assert tuple(lse.shape) == (hq, cu_q[-1])
    want_out, want_lse = ref_varlen(to64(q), to64(k), to64(v), cu_q, cu_k, 1 / math.sqrt(d),
                                    rule(layout, bq, bk, causal, window, g, stride))
    check_cuda_result(out, lse, q, want_out, want_lse, tol, lse_tol)


@needs_torch
@needs_cuda
def test_torch_cuda_rows_with_every_block_off():
    """As test_rows_with_every_block_off, on the GPU: out exactly 0 and lse -inf in the rows whose
    blocks are all off, finite everywhere else; an all-off layout zeroes the whole output."""
    rng = rng_for("block-empty-rows-cuda")
    (q, k, v), (dq, dk, dv) = cuda_qkv("float16", 2, 100, 90, 4, 2, 64, rng)
    layout = np.ones((4, 7, 6), np.uint8)  # blocks of 16: 7 x 6
    layout[1, 2] = 0  # head 1, rows 32..47
    layout[:, 6] = 0  # every head, rows 96..99 (the partial last block)
    out, lse, _ = ga.sparse_attn_func(dq, dk, dv, block_mask=torch.from_numpy(layout).cuda(),
                                      block_size=16, return_attn_probs=True)
    out, lse = out.cpu(), lse.cpu()
    assert torch.all(out[:, 32:48, 1] == 0) and torch.all(torch.isneginf(lse[:, 1, 32:48]))
    assert torch.all(out[:, 96:] == 0) and torch.all(torch.isneginf(lse[:, :, 96:]))
    finite = np.ones(tuple(lse.shape), bool)
    finite[:, 1, 32:48] = False
    finite[:, :, 96:] = False
    assert np.array_equal(torch.isfinite(lse).numpy(), finite)
    want_out, want_lse = ref_dense(to64(q), to64(k), to64(v), 1 / 8, rule(layout, 16, 16))
    assert_close(out, want_out, 4e-3, "out")
    assert_close(lse, want_lse, 1e-3, "lse")
    out, lse, _ = ga.sparse_attn_func(dq, dk, dv, causal=True,
                                      block_mask=torch.zeros((1, 1, 1), dtype=torch.bool,
                                                             device="cuda"),
                                      block_size=128, return_attn_probs=True)
    assert torch.all(out == 0) and torch.all(torch.isneginf(lse))


@needs_torch
@needs_cuda
def test_torch_cuda_layout_forms_agree():
    """On the GPU: a bool mask, a uint8 mask with any nonzero bytes, a shared layout and its
    per-head repetition, a broadcast and a transposed view give bitwise the same output (the same
    kernel on the same inputs); the caller's mask is left as it was; an all-on layout is dense."""
    rng = rng_for("block-forms-cuda")
    _, (q, k, v) = cuda_qkv("bfloat16", 2, 200, 150, 4, 2, 64, rng)
    shared = random_layout(rng, 1, 200, 150, 64, 64, 0.5)
    dev = torch.from_numpy(shared).cuda()
    want = ga.sparse_attn_func(q, k, v, block_mask=dev, block_size=64)
    mask_bool = dev.bool()
    keep = mask_bool.clone()
    assert torch.equal(ga.sparse_attn_func(q, k, v, block_mask=mask_bool, block_size=64), want)
    assert mask_bool.dtype == torch.bool and torch.equal(mask_bool, keep)
    noisy = torch.from_numpy(np.where(shared != 0, rng.integers(1, 256, shared.shape), 0)
                             .astype(np.uint8)).cuda()
    assert torch.equal(ga.sparse_attn_func(q, k, v, block_mask=noisy, block_size=64), want)
    assert torch.equal(ga.sparse_attn_func(q, k, v, block_mask=dev.repeat(4, 1, 1), block_size=64),
                       want)
    assert torch.equal(ga.sparse_attn_func(q, k, v, block_mask=dev.expand(4, -1, -1),
                                           block_size=(64, 64)), want)
    transposed = dev.transpose(1, 2).contiguous().transpose(1, 2)
    assert not transposed.is_contiguous()
    assert torch.equal(ga.sparse_attn_func(q, k, v, block_mask=transposed, block_size=64), want)
    for causal in (False, True):
        ones = torch.ones((4, 13, 10), dtype=torch.bool, device="cuda")
        got = ga.sparse_attn_func(q, k, v, causal=causal, block_mask=ones, block_size=16)
        assert_close(got.cpu(), to64(ga.sparse_attn_func(q, k, v, causal=causal).cpu()), 1.6e-2,
                     f"all-on causal={causal}")


@needs_torch
@needs_cuda
def test_torch_cuda_numpy_mask_is_copied_to_the_device():
    """A numpy mask with CUDA tensors is copied to q's device on the current stream: the same
    result as the device mask (also on a side stream, and from read-only broadcast views and bool
    arrays), the caller's array unchanged. A numpy mask of a wrong dtype is reported by dtype."""
    rng = rng_for("block-numpy-cuda")
    _, (q, k, v) = cuda_qkv("float16", 2, 130, 200, 4, 2, 64, rng)
    on = rng.random((1, 3, 4)) >= 0.5
    on[:, :, 0] = True
    want = ga.sparse_attn_func(q, k, v, block_mask=torch.from_numpy(on).cuda(), block_size=64)
    keep = on.copy()
    assert torch.equal(ga.sparse_attn_func(q, k, v, block_mask=on, block_size=64), want)
    assert np.array_equal(on, keep) and on.dtype == bool
    broadcast = np.broadcast_to(on.astype(np.uint8), (4, 3, 4))
    assert not broadcast.flags.writeable
    assert torch.equal(ga.sparse_attn_func(q, k, v, block_mask=broadcast, block_size=64), want)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        got = ga.sparse_attn_func(q, k, v, block_mask=on.astype(np.uint8), block_size=64)
    side.synchronize()
    assert torch.equal(got, want)
    cu_q = torch.tensor([0, 130, 260], dtype=torch.int32, device="cuda")
    cu_k = torch.tensor([0, 200, 400], dtype=torch.int32, device="cuda")
    flat = [x.reshape(-1, *x.shape[2:]) for x in (q, k, v)]
    got = ga.sparse_attn_varlen_func(*flat, cu_q, cu_k, 130, 200, block_mask=on, block_size=64)
    assert_close(got.cpu(), to64(want.reshape(260, 4, 64).cpu()), 4e-3, "varlen")
    with pytest.raises(ValueError, match=r"mask.block_sparse.layout has dtype .*uint8"):
        ga.sparse_attn_func(q, k, v, block_mask=on.astype(np.float32), block_size=64)
    with pytest.raises(ValueError, match=r"mask.block_sparse.layout shape .*\[4 or 1, 3, 4\]"):
        ga.sparse_attn_func(q, k, v, block_mask=np.ones((1, 3, 5), np.uint8), block_size=64)


@needs_torch
@needs_cuda
def test_torch_cuda_block_mask_on_another_device_raises():
    rng = rng_for("block-cuda-device")
    (q, k, v), (dq, dk, dv) = cuda_qkv("bfloat16", 1, 100, 70, 4, 2, 64, rng)
    layout = torch.ones((4, 7, 5), dtype=torch.bool, device="cuda")
    # a host torch layout with device tensors is a host/device mix, whatever the backend
    with pytest.raises(ValueError, match="host/device mix"):
        ga.sparse_attn_func(dq, dk, dv, block_mask=layout.cpu(), block_size=16)
    # and so is a device layout with host tensors
    with pytest.raises(ValueError, match="mask.block_sparse.layout.*host/device mix"):
        ga.sparse_attn_func(q, k, v, block_mask=layout, block_size=16)


@needs_torch
@needs_cuda
def test_torch_cuda_block_mask_matches_cpu():
    """The CUDA and CPU backends on the same inputs and layout (long enough for several key tiles
    per row block, 128-key blocks over 64-key tiles)."""
    rng = rng_for("block-cuda-vs-cpu")
    (q, k, v), (dq, dk, dv) = cuda_qkv("bfloat16", 2, 700, 1000, 8, 2, 128, rng)
    layout = random_layout(rng, 8, 700, 1000, 64, 128, 0.7)
    kw = dict(causal=True, window_size=(300, 0), global_tokens=4, block_size=(64, 128),
              return_attn_probs=True)
    cpu_out, cpu_lse, _ = ga.sparse_attn_func(q, k, v, block_mask=layout, **kw)
    out, lse, _ = ga.sparse_attn_func(dq, dk, dv, block_mask=torch.from_numpy(layout).cuda(), **kw)
    torch.cuda.synchronize()
    assert_close(out.cpu(), to64(cpu_out), 1.6e-2, "cuda vs cpu out")
    assert_close(lse.cpu(), to64(cpu_lse), 1e-2, "cuda vs cpu lse")
