"""FP8 attention through flash_attn_func and flash_attn_varlen_func (FlashAttention-3's q_descale,
k_descale, v_descale and out_dtype) against the float64 reference on the dequantized values
(x * descale), on the CPU backend and, with torch and a CUDA device, on the GPU.

q, k and v are E4M3: torch.float8_e4m3fn tensors, or numpy uint8 arrays of E4M3 bytes. Inputs are
random values about N(0, 1) times a spread that differs per head, quantized per head with the
scale absmax / 448 (so every head's descale differs and each one must be read).
"""

import math

import numpy as np
import pytest

import gpu_attention as ga
from reference import (assert_close, causal_rule, cu_seqlens, e4m3_bytes, e4m3_decode, int32,
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


# ---- CUDA ----------------------------------------------------------------------------------------


@needs_torch
@pytest.mark.skipif(not CUDA, reason="needs torch, a CUDA build and a CUDA device")
@pytest.mark.parametrize("shape", [
    (2, 300, 300, 8, 2, 128),  # head dim 128, dense: the sm_90a FP8 kernel where there is one
    (2, 37, 300, 8, 8, 128),  # Sq < Sk
    (1, 300, 70, 4, 1, 64),  # head dim 64, Sq > Sk: q dequantized, then the 16-bit kernel
], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_torch_cuda_fp8_matches_reference(shape, causal):
    """On the GPU the FP8 kernel rounds P to E4M3, so out is held to a relative L2 error (the C++
    suite's 0.06 for a call) rather than to bf16's element tolerance."""
    b, sq, sk, hq, hkv, d = shape
    q, k, v = operands("torch", ("cuda", shape, causal), (b, sq, hq, d), (b, sk, hkv, d),
                       device="cuda")
    stream = torch.cuda.Stream()
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
    with pytest.raises(NotImplementedError, match="float32"):
        ga.flash_attn_func(q.x, k.x, v.x, out_dtype=torch.float32, **descales(q, k, v))


@needs_torch
@pytest.mark.skipif(not CUDA, reason="needs torch, a CUDA build and a CUDA device")
def test_torch_cuda_fp8_varlen_matches_reference():
    lens_q, lens_k = [1, 37, 12, 70], [9, 70, 1, 37]
    cu_q, cu_k = cu_seqlens(lens_q), cu_seqlens(lens_k)
    q, k, v = operands("torch", "cuda-varlen", (cu_q[-1], 8, 128), (cu_k[-1], 2, 128),
                       device="cuda")
    out = ga.flash_attn_varlen_func(q.x, k.x, v.x, int32("torch", cu_q).cuda(),
                                    int32("torch", cu_k).cuda(), max(lens_q), max(lens_k),
                                    causal=True, out_dtype=torch.float16, **descales(q, k, v))
    assert out.is_cuda and out.dtype == torch.float16
    want, _ = ref_varlen(q.dequantized, k.dequantized, v.dequantized, cu_q, cu_k,
                         1 / math.sqrt(128), causal_rule(True))
    assert rel_l2(out.cpu(), want) < 0.06
    assert_close(out.cpu(), want, 4e-3, "out")  # varlen runs on a dequantized q: 16-bit accuracy
