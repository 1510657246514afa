"""flash-attn 2.x compatible functions over gpuattn::attention_forward.

Same names, signatures, layouts and return values as `flash_attn.flash_attn_interface` (forward
only). Tensors are (batch, seqlen, nheads, headdim); varlen tensors are (total, nheads, headdim)
with int32 cu_seqlens. Anything we do not support yet raises NotImplementedError naming the
argument; nothing is silently ignored. Invalid inputs raise ValueError / TypeError from the
validation in the C++ library, which leaves the outputs unwritten.

window_size=(left, right) is flash-attn's local attention: query i of a sequence with Sq queries
and Sk keys sits at key position p = i + Sk - Sq (bottom-right aligned, as causal) and sees key j iff
p - left <= j <= p + right, where -1 leaves that side unbounded; causal=True sets right = 0.
Values below -1 raise ValueError. gpu_attention.sparse_attn_func adds global tokens to the window.

FP8 attention takes FlashAttention-3's keywords: flash_attn_func and flash_attn_varlen_func with q,
k and v of float8_e4m3fn (numpy: uint8 E4M3 bytes) and q_descale, k_descale, v_descale (element x
of head h stands for x * descale[h]) compute in out_dtype (torch.bfloat16 by default, as
FlashAttention-3). flash_attn_with_kvcache reads an int8 / float8_e4m3fn KV cache beside a 16-bit q
(k_scale, v_scale), and an E4M3 cache beside an FP8 q with q_descale (FP8 decode; there
FlashAttention-3's k_descale / v_descale are other names for k_scale / v_scale).

Differences from flash-attn that a caller can observe:
  - forward only: a torch tensor that requires grad (with grad mode on) is refused;
  - a query row that sees no key (causal with Sq > Sk, a window that misses every key) gets out = 0
    and lse = -inf (flash-attn writes +inf);
  - window sides below -1 raise ValueError (flash-attn treats every negative value as -1);
  - a dense seqlen_k of 0, and a varlen max_seqlen_k of 0, raise the library's ValueError
    (flash-attn writes out 0 and lse +inf); varlen sequences of no rows, and sides of no rows
    at all, are taken, under a positive max_seqlen;
  - float32 inputs are accepted on the CPU backend (flash-attn: fp16/bf16 only);
  - FP8 descales are per head, float32 (nheads,) for q and (nheads_k,) for k and v, or (1,), or
    Python / numpy real numbers (FlashAttention-3: (batch, nheads_k) each); out_dtype is ours;
  - with alibi_slopes the lse is of the scores with flash-attn's documented bias,
    -slope * |i + seqlen_k - seqlen_q - j|, in every call, causal too: flash-attn's causal kernels
    add slope * j instead (the same out, an lse larger by slope * (i + seqlen_k - seqlen_q)).
    Slopes must be finite and within the library's bound (flash_attn_func's docstring).
"""

import math
import numbers
import operator
import re
import struct
import sys

from . import _C

_INT32_MAX = 2**31 - 1
_INT32_MIN = -(2**31)


# ---- arrays: framework detection, allocation, stream ---------------------------------------------


def _framework(x, name):
    """'torch' or 'numpy'. Neither package is imported here: a tensor of a framework that was never
    imported cannot exist."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return "torch"
    np = sys.modules.get("numpy")
    if np is not None and isinstance(x, np.ndarray):
        return "numpy"
    raise TypeError(f"{name} must be a torch.Tensor or a numpy.ndarray, got {type(x).__name__}")


def _check_same_framework(fw, x, name):
    other = _framework(x, name)
    if other != fw:
        raise TypeError(f"{name} is a {other} array but q is a {fw} array")


def _prepare(fw, x, name):
    """Makes `x` exportable through DLPack, as flash-attn does: a last dimension that is not
    contiguous is copied (flash-attn's maybe_contiguous); every other layout passes zero-copy and
    the library checks its strides."""
    if fw == "torch":
        if x.requires_grad:
            if sys.modules["torch"].is_grad_enabled():
                raise NotImplementedError(
                    f"{name} requires grad: gpu_attention has no backward pass yet; call it under "
                    "torch.no_grad() / torch.inference_mode() or pass detached tensors"
                )
            x = x.detach()
        if x.dim() > 0 and x.stride(-1) != 1 and x.shape[-1] > 1:
            x = x.contiguous()
        return x
    if not x.dtype.isnative:  # DLPack carries no byte order: nanobind would refuse it unnamed
        raise ValueError(f"{name} dtype {x.dtype.str} is not in the machine's byte order: "
                         f"convert it first ({name}.astype('{x.dtype.name}'))")
    if x.ndim > 0 and x.strides[-1] != x.itemsize and x.shape[-1] > 1:
        x = sys.modules["numpy"].ascontiguousarray(x)
    return x


def _empty(fw, like, shape, float32=False, dtype=None):
    """An uninitialized array on like's device, of float32, else `dtype`, else like's dtype."""
    if dtype is None:
        dtype = like.dtype
    if fw == "torch":
        torch = sys.modules["torch"]
        return torch.empty(shape, dtype=torch.float32 if float32 else dtype, device=like.device)
    np = sys.modules["numpy"]
    return np.empty(shape, dtype=np.float32 if float32 else dtype)


def _full_int32(fw, like, n, value):
    """An int32 array of n copies of `value` on like's device."""
    if fw == "torch":
        torch = sys.modules["torch"]
        return torch.full((n,), value, dtype=torch.int32, device=like.device)
    np = sys.modules["numpy"]
    return np.full((n,), value, dtype=np.int32)


def _is_array(x):
    """x is a torch tensor or a numpy array (of the frameworks imported)."""
    torch, np = sys.modules.get("torch"), sys.modules.get("numpy")
    return ((torch is not None and isinstance(x, torch.Tensor))
            or (np is not None and isinstance(x, np.ndarray)))


def _has_no_elements(x):
    """x is a torch tensor or numpy array of no elements (a dimension of size 0)."""
    numel = getattr(x, "numel", None)  # torch; numpy's count is .size
    return (numel() if callable(numel) else x.size) == 0


def _storage_row(x):
    """A row of storage for x, an array of no elements: x's dtype and device, x's shape with
    each 0 made 1, uninitialized."""
    shape = tuple(max(n, 1) for n in x.shape)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return torch.empty(shape, dtype=x.dtype, device=x.device)
    return sys.modules["numpy"].empty(shape, dtype=x.dtype)


def _with_storage(arrays):
    """The native call's array arguments (a dict: parameter name -> array or anything else) with
    each array of no elements replaced by a row of storage (_storage_row), and the dict of their
    own shapes, the native call's empty_shapes (None when there is none). The library takes an
    array of no elements (a varlen side of no rows) only through a pointer to a row of storage,
    and torch exports a null pointer for one; a row allocated here is never read or written."""
    empty = None
    for name, x in arrays.items():
        if _is_array(x) and _has_no_elements(x):
            empty = empty or {}
            empty[name] = tuple(int(n) for n in x.shape)
            arrays[name] = _storage_row(x)
    return arrays, empty


# The native attention_forward's parameters before max_seqlen_q, in order.
_ARRAY_PARAMS = ("q", "k", "v", "out", "lse", "cu_seqlens_q", "cu_seqlens_k")


def _call(fw, q, *args, **kwargs):
    """Runs the native call; CUDA tensors run on torch's current stream of q's device (the library
    switches to that device itself). Arrays of no elements cross as a row of storage
    (_with_storage), so that the library judges their shapes.

    Torch tensors cross as DLPack capsules from torch.utils.dlpack.to_dlpack (C, zero-copy):
    letting nanobind call each tensor's Python-level __dlpack__ cost ~4 us a tensor on an H200 host
    (torch 2.11), and torch.cuda.current_stream() another 3 us; at fp16 B1 H16 S1024 D64 the call's
    host side (36 us) outlasted its 18 us kernel (bench/host_overhead.py)."""
    n = len(_ARRAY_PARAMS)
    arrays, empty = _with_storage(dict(zip(_ARRAY_PARAMS, args[:n]), **kwargs))
    args = [arrays.pop(name) for name in _ARRAY_PARAMS] + list(args[n:])
    kwargs = arrays
    if empty:
        kwargs["empty_shapes"] = empty
    stream = 0
    if fw == "torch":
        torch = sys.modules["torch"]
        if q.is_cuda:
            stream = _current_raw_stream(torch, q)
        to_dlpack = torch.utils.dlpack.to_dlpack
        args = [to_dlpack(a) if isinstance(a, torch.Tensor) else a for a in args]
        kwargs = {key: to_dlpack(a) if isinstance(a, torch.Tensor) else a
                  for key, a in kwargs.items()}
    _C.attention_forward(*args, stream=stream, **kwargs)


def _append_kv(fw, k_cache, v_cache, k, v, cache_seqlens, block_table, check_indices,
               k_scale=None, v_scale=None, rotary=None):
    """k/v appended to the caches in place (the caches are passed as they are: a copy would
    lose the write; a float8 cache as a uint8 view of the same memory). rotary: (cos, sin,
    interleaved, q, q_out, q_same_position) to rotate k on the way and q into q_out in the same
    call, every position checked with cache_seqlens (gpuattn::append_kv's rotary fields)."""
    for value, name in ((v_cache, "v_cache"), (k, "k"), (v, "v"), (cache_seqlens, "cache_seqlens"),
                        (block_table, "block_table")):
        if value is not None:
            _check_same_framework(fw, value, name)
    if fw == "numpy":
        for cache, name in ((k_cache, "k_cache"), (v_cache, "v_cache")):
            if not cache.flags.writeable:
                raise ValueError(f"{name} is read-only: appending k/v writes it in place")
    k = _prepare(fw, k, "k")
    v = _prepare(fw, v, "v")
    stream = 0
    kv_format = ""
    if k_scale is not None or v_scale is not None:
        k_cache, kv_format = _kv_cache(fw, k_cache)
        v_cache, _ = _kv_cache(fw, v_cache)
        k_scale, v_scale = _kv_scales(fw, k_scale, v_scale, k_cache)
    names = ("k_cache", "v_cache", "k_new", "v_new", "cache_seqlens")
    extra = dict(block_table=block_table, k_scale=k_scale, v_scale=v_scale)
    options = {}
    if rotary is not None:
        cos, sin, interleaved, q, q_out, same = rotary
        for value, name in ((cos, "rotary_cos"), (sin, "rotary_sin")):
            _check_same_framework(fw, value, name)
        extra.update(rotary_cos=_prepare(fw, cos, "rotary_cos"),
                     rotary_sin=_prepare(fw, sin, "rotary_sin"), q=q, q_out=q_out)
        options = dict(rotary_interleaved=interleaved, q_same_position=same)
    arrays, empty = _with_storage(dict(zip(names, (k_cache, v_cache, k, v, cache_seqlens)),
                                       **extra))
    if fw == "torch":
        torch = sys.modules["torch"]
        if k_cache.is_cuda:
            stream = _current_raw_stream(torch, k_cache)
        to_dlpack = torch.utils.dlpack.to_dlpack
        arrays = {name: None if a is None else to_dlpack(a) for name, a in arrays.items()}
    args = [arrays.pop(name) for name in names]
    if empty:
        arrays["empty_shapes"] = empty
    _C.append_kv(*args, check_indices=bool(check_indices), stream=stream, kv_format=kv_format,
                 **arrays, **options)


def _rotary(fw, x, out, cos, sin, offsets, interleaved, same_position, check_indices,
            cu_seqlens=None, max_seqlen=-1):
    """out = x rotated by cos/sin (gpuattn::apply_rotary); out may be x (in place). `offsets`: an
    int (every sequence) or an int32 array (batch,) on x's device. Varlen: cu_seqlens, int32
    (batch + 1,) on x's device, with x and out (total, nheads, headdim); max_seqlen -1 or a
    bound on every length."""
    for value, name in ((cos, "cos"), (sin, "sin")):
        _check_same_framework(fw, value, name)
    if type(interleaved) is not bool:
        raise TypeError(f"interleaved must be True or False, not {interleaved!r}")
    cos = _prepare(fw, cos, "cos")
    sin = _prepare(fw, sin, "sin")
    offset, array = 0, None
    if isinstance(offsets, bool):
        raise TypeError("seqlen_offsets must be an int or an int32 array (batch,), not a bool")
    if isinstance(offsets, numbers.Integral):  # int, numpy integer scalars
        offset = _int_arg(int(operator.index(offsets)), "seqlen_offsets", 0, _INT32_MAX)
    elif _is_array(offsets):
        _check_same_framework(fw, offsets, "seqlen_offsets")
        array = _int32_indices(fw, offsets, "seqlen_offsets")
    else:
        raise TypeError("seqlen_offsets must be an int or an int32 array (batch,), not "
                        f"{type(offsets).__name__}")
    stream = 0
    args = [x, out, cos, sin, array, cu_seqlens]
    if fw == "torch":
        torch = sys.modules["torch"]
        if x.is_cuda:
            stream = _current_raw_stream(torch, x)
        to_dlpack = torch.utils.dlpack.to_dlpack
        args = [None if a is None else to_dlpack(a) for a in args]
    _C.apply_rotary(*args[:4], seqlen_offsets=args[4], seqlen_offset=offset,
                    cu_seqlens=args[5], max_seqlen=max_seqlen, interleaved=interleaved,
                    same_position=same_position, check_indices=bool(check_indices),
                    stream=stream)


def _int32_indices(fw, values, name):
    """Index arrays as contiguous int32: an int64 array (flash-attn takes one) converted once its
    values are known to fit; other dtypes reach the library's check as they are."""
    if fw == "torch":
        torch = sys.modules["torch"]
        if values.dtype == torch.int64:
            if values.numel() and (int(values.min()) < 0 or int(values.max()) > _INT32_MAX):
                raise ValueError(f"{name} holds {int(values.min())}..{int(values.max())}, "
                                 f"outside [0, {_INT32_MAX}]")
            values = values.to(torch.int32)
        return values.contiguous()
    np = sys.modules["numpy"]
    if values.dtype == np.int64:
        if values.size and (int(values.min()) < 0 or int(values.max()) > _INT32_MAX):
            raise ValueError(f"{name} holds {int(values.min())}..{int(values.max())}, outside "
                             f"[0, {_INT32_MAX}]")
        values = values.astype(np.int32)
    return np.ascontiguousarray(values)


def apply_rotary_emb(x, cos, sin, interleaved=False, inplace=False, seqlen_offsets=0,
                     cu_seqlens=None, max_seqlen=None):
    """Rotary position embedding, as flash-attn's flash_attn.layers.rotary.apply_rotary_emb.

    x (batch, seqlen, nheads, headdim) float16 / bfloat16 (numpy: float16 or float32); cos, sin
    (seqlen_rotary, rotary_dim / 2) of x's dtype or float32, on x's device, rotary_dim <= headdim.
    Row i of sequence b takes position seqlen_offsets + i (seqlen_offsets an int, or an int32
    array (batch,) on x's device: seqlen_offsets[b] + i), which must be < seqlen_rotary. Its first
    rotary_dim features are rotated in pairs, (2j, 2j + 1) when interleaved (GPT-J), else
    (j, j + rotary_dim / 2) (GPT-NeoX): (a, b) -> (a cos - b sin, a sin + b cos), in float32,
    rounded once; the other features are x's. Returns a new array, or x itself rotated in place
    with inplace=True. Varlen: with cu_seqlens (int32 or int64 (batch + 1,); torch tensors of it
    and of seqlen_offsets on another device are copied to x's) x is (total_seqlen, nheads,
    headdim) and row i of sequence b
    (rows cu_seqlens[b] .. cu_seqlens[b + 1] - 1) takes position seqlen_offsets (or
    seqlen_offsets[b]) + i, the whole batch in one launch; max_seqlen, flash-attn's hint, must
    bound every length when given. Bad inputs raise ValueError naming them, with x untouched."""
    if type(inplace) is not bool:
        raise TypeError(f"apply_rotary_emb: inplace must be True or False, not {inplace!r}")
    fw = _framework(x, "x")
    cu, bound = None, -1
    if cu_seqlens is not None:
        if len(tuple(x.shape)) != 3:
            raise ValueError(f"apply_rotary_emb: x has shape {tuple(x.shape)}; with cu_seqlens "
                             "it is (total_seqlen, nheads, headdim)")
        _check_same_framework(fw, cu_seqlens, "cu_seqlens")
        try:
            cu = _int32_indices(fw, cu_seqlens, "cu_seqlens")
        except ValueError as e:
            raise _emb_error(e) from None
        if fw == "torch":  # the bounds (and offsets) of a packed batch may come from the host
            cu = cu.to(x.device)
            if isinstance(seqlen_offsets, sys.modules["torch"].Tensor):
                seqlen_offsets = seqlen_offsets.to(x.device)
        if max_seqlen is not None:
            bound = _int_arg(max_seqlen, "max_seqlen", 0, _INT32_MAX)
    elif max_seqlen is not None:
        raise ValueError("apply_rotary_emb: max_seqlen goes with cu_seqlens (varlen x)")
    if _has_no_elements(x):  # nothing to rotate (the library takes no empty view)
        if cu is not None:
            _check_bounds_of_no_rows(fw, cu, int(x.shape[0]))
        return x if inplace else _empty(fw, x, tuple(x.shape))
    if fw == "numpy" and inplace and not x.flags.writeable:
        raise ValueError("apply_rotary_emb: x is read-only: inplace=True writes it")
    if inplace:
        if fw == "torch" and x.requires_grad and sys.modules["torch"].is_grad_enabled():
            raise NotImplementedError("apply_rotary_emb: x requires grad: gpu_attention has no "
                                      "backward pass yet")
        out = x
        src = x.detach() if fw == "torch" else x
        if (src.stride(-1) if fw == "torch" else src.strides[-1] // src.itemsize) != 1 \
                and src.shape[-1] > 1:
            raise ValueError("apply_rotary_emb: inplace=True needs x's last dimension "
                             "contiguous")
        dst = src
    else:
        src = _prepare(fw, x, "x")
        out = dst = _empty(fw, src, tuple(src.shape))
    try:
        _rotary(fw, src, dst, cos, sin, seqlen_offsets, interleaved, False, True, cu, bound)
    except (ValueError, NotImplementedError) as e:
        raise _emb_error(e) from None
    return out


def _check_bounds_of_no_rows(fw, cu, total):
    """cu_seqlens of a varlen x without elements (which the library never sees): (batch + 1,)
    bounds rising from 0 to x's rows."""
    host = cu.detach().cpu().numpy() if fw == "torch" else cu
    bounds = [int(c) for c in host.reshape(-1)]
    if host.ndim != 1 or len(bounds) < 2 or bounds[0] != 0 or bounds[-1] != total \
            or any(b < a for a, b in zip(bounds, bounds[1:])):
        raise ValueError(f"apply_rotary_emb: cu_seqlens {bounds} must be (batch + 1,) bounds "
                         f"rising from 0 to x's {total} rows")


def _emb_error(error):
    """The library's rotary error in apply_rotary_emb's names (seqlen_offsets, its prefix)."""
    msg = str(error).replace("gpuattn::apply_rotary", "apply_rotary_emb")
    if not msg.startswith("apply_rotary_emb"):
        msg = "apply_rotary_emb: " + msg
    return type(error)(re.sub(r"\bseqlen_offset\b", "seqlen_offsets", msg))


# ---- the fast path: the common call, with no general checks ------------------------------------
#
# flash_attn_func and flash_attn_with_kvcache spend ~10 us of Python on a call before the native
# one (framework checks, option checks, the mask's reductions, dicts of keyword arguments), as much
# as the library's own host side and more than a short kernel. A call of torch tensors with
# flash-attn's defaults passes every one of those checks unchanged, so it goes straight to the
# library: the tests compare both paths bit for bit, and every error still comes from the
# library's own validation, with the same message. A quantized cache takes it too when both
# scales are torch tensors (the serving call: ~40 us of host time a call on the general path
# against ~17 for a 16-bit cache, bench/results/2026-11-29-h200-s30), and so does a rotary
# decode step whose rotary_cos / rotary_sin are plain torch tensors, and an ALiBi call whose slopes
# are a plain float32 torch tensor the library takes (_plain_slopes; ~45-108 us of host time a
# call on the general path, bench/results/2026-12-03-h200-s71). Anything else (numpy arrays,
# tensor subclasses, tensors that require grad, a non-contiguous last dimension, a window, options
# of other types, scales given as floats) takes the general path.

_NO_WINDOW = (-1, -1)
_NUMBER = (int, float)


def _plain_options(dropout_p, softmax_scale, causal, window_size, softcap):
    """True when the options are ones the general path passes on unchanged: dropout_p an int or
    float 0, softcap an int or float >= 0 (the library judges its value, as on the general path:
    _fast_forward passes it as a float), causal a bool, softmax_scale None or a float, and no
    window ((-1, -1) as a tuple of ints). (ALiBi slopes: _plain_slopes.)"""
    return (type(dropout_p) in _NUMBER and dropout_p == 0
            and type(softcap) in _NUMBER and softcap >= 0
            and (causal is True or causal is False)
            and (softmax_scale is None or type(softmax_scale) is float)
            and (window_size is _NO_WINDOW
                 or (type(window_size) is tuple and len(window_size) == 2
                     and type(window_size[0]) is int and type(window_size[1]) is int
                     and window_size[0] == -1 and window_size[1] == -1)))


def _plain_slopes(torch, alibi_slopes, q):
    """True when alibi_slopes is None, or one the library takes for q as it is (as _alibi_arg
    passes it): exactly a torch.Tensor, strided, float32, needing no grad, on q's device, of shape
    (nheads,) or (batch, nheads) with a unit last stride and a batch stride of 0 or at least
    nheads. So a fast call with an append never has its attention refuse the slopes' view after
    the append; their values are the library's to check (or, appended on CUDA with check_indices,
    _check_alibi_before_append's first)."""
    if alibi_slopes is None:
        return True
    x = alibi_slopes
    if (type(x) is not torch.Tensor or x.layout is not torch.strided or x.is_nested
            or x.dtype != torch.float32 or x.requires_grad or x.device != q.device
            or x.data_ptr() % 4 != 0):
        return False
    h = q.shape[2]
    if x.ndim == 1:
        return x.shape[0] == h and (h == 1 or x.stride(0) == 1)
    return (x.ndim == 2 and x.shape[0] == q.shape[0] and x.shape[1] == h
            and (h == 1 or x.stride(1) == 1)
            and (x.shape[0] == 1 or x.stride(0) == 0 or x.stride(0) >= h))


def _plain_tensors(torch, *xs):
    """True when every x is exactly a torch.Tensor, strided (not sparse, not nested), of rank 4,
    needing no grad, with a unit stride in its last dimension (what _prepare passes unchanged).
    The layout is asked before the stride, which sparse and nested tensors do not have: they take
    the general path and its errors."""
    tensor_type, strided = torch.Tensor, torch.strided
    for x in xs:
        if (type(x) is not tensor_type or x.layout is not strided or x.is_nested or x.ndim != 4
                or x.requires_grad or x.stride(-1) != 1):
            return False
    return True


def _plain_tables(torch, cos, sin):
    """True when rotary_cos and rotary_sin are exactly torch.Tensor, strided, of rank 2, needing
    no grad, with a unit last stride: the fast path hands them to the append as they are."""
    for x in (cos, sin):
        if (type(x) is not torch.Tensor or x.layout is not torch.strided or x.is_nested
                or x.ndim != 2 or x.requires_grad or x.stride(-1) != 1):
            return False
    return True


def _attends_cache(q, k_cache, k, block_table, softmax_scale, softcap=0):
    """Whether the fast path may append k/v ahead of its attention call: q meets the attention's
    checks that the append's own (made before it writes) leave open: its batch (the block
    table's with one), a query, a head count k_cache's divides, a supported head dim equal to the
    cache's, k's dtype, the cache's device, 16-byte strides and alignment, a softmax_scale (None
    or) from 1.2e-38 to 2.3e38, and a softcap of 0 or one well inside the library's bounds (at
    most 2.3e38, scale / softcap from 1.2e-38 to 3.3e38; fwd_params.cpp refuses a scale or cap
    past 2.36e38, one that rounds to 0, and a ratio outside float32's normal range). Any other call takes the general path, which checks the attention
    (gpuattn::check_attention_args) before it appends, so a call the attention refuses leaves the
    caches as they were. Plain rank-4 tensors (_plain_tensors) only."""
    batch = k_cache.shape[0]
    if block_table is not None:
        if block_table.ndim != 2:
            return False
        batch = block_table.shape[0]
    b, s, h, d = q.shape
    hkv = k_cache.shape[2]
    if not (b == batch and s >= 1 and h >= 1 and d in (64, 128, 256) and d == k_cache.shape[3]
            and hkv >= 1 and h % hkv == 0 and q.dtype == k.dtype
            and q.device == k_cache.device):
        return False
    if softmax_scale is not None and not 1.2e-38 <= softmax_scale <= 2.3e38:
        return False  # the library's bounds (a normal float32, at most 2.36e38), with a margin
    if softcap:
        ratio = (1.0 / math.sqrt(d) if softmax_scale is None else softmax_scale) / softcap
        if not (softcap <= 2.3e38 and 1.2e-38 <= ratio <= 3.3e38):
            return False
    size = q.element_size()  # a dimension of size 1 is never stepped over: any stride
    return q.data_ptr() % 16 == 0 and all(
        stride * size % 16 == 0 for stride, n in zip(q.stride()[:3], q.shape[:3]) if n != 1)


def _named_caches(error):
    """An error of flash_attn_with_kvcache's attention call (whose k and v are the caches) with
    k_cache / v_cache named as the caller passed them (k and v there are the new keys)."""
    text = re.sub(r"\b([kv])(?= (?:shape|dtype|heads|head dim|stride|must|is|has|and|pointer|"
                  r"sequence length|page count|page size|batch|dim)\b)", r"\1_cache", str(error))
    return type(error)(text)


def _named_new_rows(error):
    """An append's error with the new rows named as flash_attn_with_kvcache's caller passed them
    (k and v; the library calls them k_new and v_new). Attention errors never name those."""
    text = str(error)
    if "k_new" not in text and "v_new" not in text:
        return error
    return type(error)(re.sub(r"\b([kv])_new\b", r"\1", text))


def _named_cache_seqlens(error):
    """A library error of a flash_attn_with_kvcache call with cache_seqlens and cache_leftpad
    named as the caller passed them (the library calls them seqused_k and leftpad_k)."""
    text = str(error)
    if "seqused_k" not in text and "leftpad_k" not in text:
        return error
    text = re.sub(r"\bseqused_k\b", "cache_seqlens", text)
    return type(error)(re.sub(r"\bleftpad_k\b", "cache_leftpad", text))


def _plain_leftpad(torch, cache_leftpad, q):
    """cache_leftpad is one the library takes for q (a torch int32 (batch,) tensor, stride 1, on
    q's device), so that the fast path's append never precedes the attention's refusal of it: any
    other takes the general path, which checks the call before it appends."""
    return (type(q) is torch.Tensor and type(cache_leftpad) is torch.Tensor
            and cache_leftpad.dtype == torch.int32
            and cache_leftpad.dim() == 1 and q.dim() == 4 and cache_leftpad.shape[0] == q.shape[0]
            and cache_leftpad.stride(0) == 1 and cache_leftpad.device == q.device)


def _check_leftpad_before_append(fw, cache_leftpad, cache_seqlens):
    """cache_leftpad against cache_seqlens before k/v are appended (the attention checks it
    after the append, against the longer lengths; on CUDA only then): every value in
    [0, cache_seqlens[b]], so that a call it refuses writes nothing. Host copies of both (a
    stream synchronization on CUDA); arrays of another shape or dtype are left to the library."""
    if fw == "torch":
        pad, used = (x.detach().cpu().numpy() for x in (cache_leftpad, cache_seqlens))
    else:
        pad, used = cache_leftpad, cache_seqlens
    if (pad.shape != used.shape or pad.ndim != 1 or str(pad.dtype) != "int32"
            or str(used.dtype) != "int32" or (used < 0).any()):
        return  # the library names these (a negative cache_seqlens: the append, before it writes)
    for b in range(pad.shape[0]):
        if not 0 <= int(pad[b]) <= int(used[b]):
            raise ValueError(f"flash_attn_with_kvcache: cache_leftpad[{b}] is {int(pad[b])}, must "
                             f"be in [0, cache_seqlens[{b}] = {int(used[b])}]")


def _float32(x):
    """x rounded to float32 (as the library rounds a double), as a float."""
    try:
        return struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


_LOG2E = 1.4426950408889634
_ALIBI_LIMIT = 3.4028234663852886e38 / 2.0**31  # FLT_MAX / 2^31


def _check_alibi_before_append(alibi_slopes, q, scale, softcap):
    """CUDA alibi_slopes' values before k/v are appended (gpuattn::check_attention_args reads no
    device values; the attention checks them on a host copy only after the append): each finite,
    with |slope| x max(log2(e), 1 / softmax_scale, or 1 / softcap when capped) at most FLT_MAX /
    2^31, the library's check in its float32 roundings, so that a call it would refuse writes
    nothing. One host copy (a stream synchronization, which check_indices=False skips). Called
    after the attention's check_only call: the view (shape, dtype, device) is the library's."""
    if softcap > 0:
        scale_log2 = _float32(_float32(softcap) * _LOG2E)
    else:
        s = _float32(1.0 / math.sqrt(q.shape[-1]) if scale is None else scale)
        scale_log2 = _float32(s * _LOG2E)
    unit = max(_LOG2E, _float32(_LOG2E / scale_log2))
    values = alibi_slopes.detach().cpu().double()
    # One row a sequence, named [b][h] as the library names them; a single row ((1, nheads), or
    # a batch stride of 0) is read once and named [h], as the library reads and names it.
    per_seq = (values.dim() == 2 and alibi_slopes.shape[0] > 1
               and alibi_slopes.stride(0) != 0)
    if values.dim() == 2 and not per_seq:
        values = values[0]
    rows = values.tolist() if per_seq else [values.tolist()]
    for b, row in enumerate(rows):
        for h, x in enumerate(row):
            if math.isfinite(x) and abs(x) * unit <= _ALIBI_LIMIT:
                continue
            where = f"alibi_slopes[{b}][{h}]" if per_seq else f"alibi_slopes[{h}]"
            why = (f": |slope| x max(log2(e), 1 / {'softcap' if softcap > 0 else 'softmax_scale'})"
                   " must be at most 1.58e29 (FLT_MAX / 2^31: its bias at every key distance a "
                   "float32)" if math.isfinite(x) else ", must be finite")
            raise ValueError(f"flash_attn_with_kvcache: {where} is {x:.9g}{why}")


def _fast_forward(torch, q, k, v, softmax_scale, causal, want_lse, seqused_k=None,
                  block_table=None, check_indices=True, k_scale=None, v_scale=None,
                  kv_format="", pdl=False, check_only=False, into=None, softcap=0,
                  leftpad_k=None, alibi_slopes=None):
    """The library's call for plain torch tensors (as _forward makes it): out (and lse)
    allocated contiguous on q's device (or `into`, an earlier check_only call's), the arrays as
    DLPack capsules, torch's current stream.
    A quantized cache comes as _kv_cache leaves it (float8 as uint8 bytes, kv_format 'e4m3'),
    its scales torch tensors.
    out comes from torch.empty_like (the general path calls torch.empty with q's shape, dtype and
    device: the same tensor, 1-2 us slower), which only a torch dispatch mode could tell apart."""
    if into is not None:
        out, lse = into
    else:
        out = torch.empty_like(q, memory_format=torch.contiguous_format)
        lse = None
        if want_lse:
            b, s, h, _ = q.shape
            lse = torch.empty((b, h, s), dtype=torch.float32, device=q.device)
    stream = _current_raw_stream(torch, q) if q.is_cuda else 0
    cap = torch.utils.dlpack.to_dlpack
    if (seqused_k is None and block_table is None and check_indices and k_scale is None
            and not pdl and not check_only and not softcap and leftpad_k is None
            and alibi_slopes is None):
        _C.attention_forward(cap(q), cap(k), cap(v), cap(out), None if lse is None else cap(lse),
                             None, None, 0, 0, softmax_scale, causal, stream)
    else:
        _C.attention_forward(cap(q), cap(k), cap(v), cap(out), None if lse is None else cap(lse),
                             None, None, 0, 0, softmax_scale, causal, stream,
                             seqused_k=None if seqused_k is None else cap(seqused_k),
                             block_table=None if block_table is None else cap(block_table),
                             check_indices=check_indices,
                             k_scale=None if k_scale is None else cap(k_scale),
                             v_scale=None if v_scale is None else cap(v_scale),
                             kv_format=kv_format, pdl=pdl, check_only=check_only,
                             # as the general path passes them (_with_softcap: only when not 0)
                             **({"softcap": float(softcap)} if softcap else {}),
                             **({} if leftpad_k is None else {"leftpad_k": cap(leftpad_k)}),
                             **({} if alibi_slopes is None
                                else {"alibi_slopes": cap(alibi_slopes)}))
    return out, lse


def _current_raw_stream(torch, q):
    """The cudaStream_t (an int) of torch's current stream on q's device."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # what triton calls; private
    if raw is not None:
        return raw(q.get_device())
    return torch.cuda.current_stream(q.device).cuda_stream


# ---- options -----------------------------------------------------------------------------------


def _check_dropout(dropout_p):
    if isinstance(dropout_p, bool) or not isinstance(dropout_p, numbers.Real):
        raise TypeError(f"dropout_p must be a float, got {type(dropout_p).__name__}")
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"dropout_p={dropout_p} must be in [0, 1]")
    if dropout_p != 0.0:
        raise NotImplementedError(
            f"dropout_p={dropout_p}: dropout is not supported (gpu_attention is forward-only); "
            "pass dropout_p=0.0 (as flash-attn users do at inference)"
        )


def _check_softcap(softcap):
    """softcap as a float (0: none); its value is the library's to judge (finite, >= 0)."""
    if isinstance(softcap, bool) or not isinstance(softcap, numbers.Real):
        raise TypeError(f"softcap must be a float, got {type(softcap).__name__}")
    return float(softcap)


def _with_softcap(mask, softcap):
    """The native call's mask keywords with softcap added where it is not 0."""
    return dict(mask, softcap=softcap) if softcap != 0.0 else mask


def _alibi_arg(fw, alibi_slopes):
    """alibi_slopes as the native call takes it (None: no ALiBi): a torch tensor or numpy array of
    q's framework (TypeError naming it otherwise), passed as it is (zero-copy). Unlike q, k and v a
    last dimension that is not contiguous is not copied (flash-attn refuses it too): the library
    names it, as it names a dtype other than float32, a shape other than (nheads,) or
    (batch, nheads), another device than q's and a slope that is not finite or too large. A torch
    tensor that requires grad is read detached (flash-attn computes no gradient for the slopes)."""
    if alibi_slopes is None:
        return None
    _check_same_framework(fw, alibi_slopes, "alibi_slopes")
    if len(alibi_slopes.shape) == 0:  # torch exports a 0-d tensor as [1]: named here, for both
        raise ValueError("alibi_slopes has 0 dimensions (a scalar), expected float32 (nheads,) "
                         "or (batch, nheads)")
    if fw == "torch":
        x = alibi_slopes.detach()
        if x.dim() > 0 and x.shape[-1] == 1 and x.stride(-1) != 1:
            x = x.contiguous()  # one element a row: its stride is never stepped over
        return x
    x = alibi_slopes
    if not x.dtype.isnative:  # DLPack carries no byte order: nanobind would refuse it unnamed
        raise ValueError(f"alibi_slopes dtype {x.dtype.str} is not in the machine's byte order: "
                         f"convert it first (alibi_slopes.astype('{x.dtype.name}'))")
    if x.itemsize and any(st % x.itemsize for st in x.strides):
        raise ValueError(f"alibi_slopes has byte strides {x.strides}, not whole elements of "
                         f"{x.itemsize} bytes (DLPack cannot describe them): pass a copy "
                         "(numpy.ascontiguousarray(alibi_slopes))")
    if x.ndim > 0 and x.shape[-1] == 1 and x.strides[-1] != x.itemsize:
        x = sys.modules["numpy"].ascontiguousarray(x)
    return x


def _float32_arg(value, name):
    """A Python / numpy real as a float. A finite value that rounds to inf in float32 (magnitude
    3.4028235677973366e38 or more: float32's largest plus half a step) or a nonzero one that rounds
    to 0 (magnitude 7.006492321624085e-46 or less: half the smallest float32 denormal) is a
    ValueError naming the value as passed; every other value is returned as a float (the library
    rounds it to float32), nan and inf too (the library names them)."""
    try:
        f = float(value)
    except OverflowError:
        raise ValueError(f"{name}={value!r} is out of float32's range") from None
    if math.isfinite(f):
        try:
            rounded = struct.unpack("f", struct.pack("f", f))[0]
        except OverflowError:  # struct refuses a finite value that float32 rounds to inf
            rounded = math.inf
        if math.isinf(rounded) or (rounded == 0.0 and f != 0.0):
            raise ValueError(f"{name}={value!r} is out of float32's range (it would become "
                             f"{'inf' if math.isinf(rounded) else '0'})")
    return f


def _softmax_scale(softmax_scale):
    if softmax_scale is None:
        return None
    if isinstance(softmax_scale, bool) or not isinstance(softmax_scale, numbers.Real):
        raise TypeError(f"softmax_scale must be a float or None, got {type(softmax_scale).__name__}")
    return _float32_arg(softmax_scale, "softmax_scale")  # finiteness: the library's check


def _as_int(value, name):
    """value as a Python int (operator.index: ints and numpy / torch integer scalars); a bool or
    anything else is a TypeError that names the argument."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {type(value).__name__}") from None


def _int_arg(value, name, lo=1, hi=_INT32_MAX):
    value = _as_int(value, name)
    if not lo <= value <= hi:
        raise ValueError(f"{name}={value} must be in [{lo}, {hi}]")
    return value


def _window_pair(window_size):
    """flash-attn's window_size as (left, right) ints, each >= -1 (-1: unbounded on that side)."""
    try:
        left, right = window_size
        if isinstance(left, bool) or isinstance(right, bool):
            raise TypeError
        left, right = operator.index(left), operator.index(right)
    except (TypeError, ValueError):
        raise ValueError(
            f"window_size must be a pair of ints (left, right), got {window_size!r}"
        ) from None
    for side, value in (("left", left), ("right", right)):
        if value < -1:
            raise ValueError(
                f"window_size={(left, right)}: the {side} window {value} is invalid (must be >= 0, "
                "or -1 for unbounded)"
            )
    return left, right


def _check_causal(causal):
    np = sys.modules.get("numpy")
    if not isinstance(causal, (bool, int)) and not (np is not None and isinstance(causal, np.bool_)):
        raise TypeError(f"causal must be a bool, got {type(causal).__module__}."
                        f"{type(causal).__qualname__}")
    return bool(causal)


def _global_arg(value, name):
    """global_tokens / global_stride: an int >= 0. Values past any int32 position mean the same as
    int32's maximum (every position < 2^31), so they are clamped rather than refused."""
    value = _as_int(value, name)
    if value < 0:
        raise ValueError(f"{name}={value} is negative (0 turns it off)")
    return min(value, _INT32_MAX)


def _resolve_mask(window_size, causal, seqlen_q, seqlen_k, global_tokens=0, global_stride=0):
    """(causal, window_size, globals) -> the library's (causal, MaskSpec fields) as a dict.

    Query i of a sequence of sq queries and sk keys sits at key position p = i + sk - sq and sees
    key j iff (!causal or j <= p) and (p - left <= j <= p + right, a side of -1 unbounded, or j or
    p is a global position). flash-attn's causal=True sets right = 0; under the causal limit every
    right >= -1 means the same, so it becomes -1 (no right limit). A side that reaches past every
    key of every row is no limit (left >= sk - 1, right >= sq - 1; for varlen the max lengths bound
    every sequence), and without any window limit global tokens change nothing: such calls run as
    plain dense / causal attention (the library's fastest kernels), with identical results.
    `seqlen_q`/`seqlen_k` None (a bad rank, reported by the library) skips these reductions.
    """
    causal = _check_causal(causal)
    left, right = _window_pair(window_size)
    if causal:
        right = -1
    if seqlen_q is not None and seqlen_k is not None:
        if left >= seqlen_k - 1:
            left = -1
        if right >= seqlen_q - 1:
            right = -1
    left, right = min(left, _INT32_MAX), min(right, _INT32_MAX)
    if left < 0 and right < 0:
        global_tokens = global_stride = 0  # every key is inside the (absent) window
    elif not causal and left < 0 and right == 0 and global_tokens == 0 and global_stride == 0:
        causal, right = True, -1  # the window (-1, 0) is causal attention
    return dict(causal=causal, window_left=left, window_right=right, global_tokens=global_tokens,
                global_stride=global_stride)


# ---- the shared forward --------------------------------------------------------------------


def _kv_cache(fw, cache):
    """A quantized cache as the native module takes it: torch float8_e4m3fn tensors cross as their
    uint8 bytes with kv_format 'e4m3' (DLPack exports of float8 vary between torch versions), and
    uint8 arrays are read as E4M3 bytes; int8 and everything else as they are."""
    if fw == "torch":
        torch = sys.modules["torch"]
        f8 = getattr(torch, "float8_e4m3fn", None)
        if f8 is not None and isinstance(cache, torch.Tensor) and cache.dtype == f8:
            return cache.view(torch.uint8), "e4m3"
    if str(getattr(cache, "dtype", "")).split(".")[-1] == "uint8":  # E4M3 bytes (numpy has no f8)
        return cache, "e4m3"
    return cache, ""


def _is_real(value):
    """value is a Python or numpy real number (int, float, numpy.floating, numpy.integer), not a
    bool: a scale given as a number rather than an array."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _kv_scale(fw, scale, like, name):
    """A scale (q_scale, k_scale, v_scale): an array (float32 [nheads_k] or [1], as the library
    checks it) is returned as it is; a real number (_is_real) is made a float32 [1] array on like's
    device."""
    if scale is None or not _is_real(scale):
        if scale is not None:
            _check_same_framework(fw, scale, name)
        return scale
    scale = _float32_arg(scale, name)
    if fw == "torch":
        torch = sys.modules["torch"]
        return torch.full((1,), scale, dtype=torch.float32, device=like.device)
    np = sys.modules["numpy"]
    return np.full((1,), scale, dtype=np.float32)


def _spread_scale(fw, value, other, like, one):
    """The float `value` as a float32 array of other's shape and element stride on like's device,
    every element `value`: the library reads k_scale and v_scale with one stride, so a number
    beside an array takes the array's layout. An `other` that is not a 1-dimensional array of
    n > 1 elements at a stride >= 0 (in whole elements) gives `one` (value's [1] array): the
    library then names what is wrong with other."""
    if fw == "torch":
        if other.dim() != 1 or other.shape[0] <= 1:
            return one
        n, stride = other.shape[0], other.stride(0)
        torch = sys.modules["torch"]
        full = torch.full(((n - 1) * stride + 1,), value, dtype=torch.float32, device=like.device)
        return full.as_strided((n,), (stride,))
    np = sys.modules["numpy"]
    if other.ndim != 1 or other.shape[0] <= 1 or other.itemsize == 0:
        return one
    n, (stride, rest) = other.shape[0], divmod(other.strides[0], other.itemsize)
    if stride < 0 or rest != 0:
        return one
    full = np.full(((n - 1) * stride + 1,), value, dtype=np.float32)
    return np.lib.stride_tricks.as_strided(full, (n,), (stride * full.itemsize,))


def _kv_scales(fw, k_scale, v_scale, like, k_name="k_scale", v_name="v_scale"):
    """k_scale and v_scale as _kv_scale makes each; a real number beside an array becomes an array
    of the array's shape and stride (_spread_scale), so that the two are laid out alike as the
    library requires."""
    k, v = _kv_scale(fw, k_scale, like, k_name), _kv_scale(fw, v_scale, like, v_name)
    if _is_real(k_scale) and v is not None and not _is_real(v_scale):
        k = _spread_scale(fw, float(k_scale), v, like, k)
    elif _is_real(v_scale) and k is not None and not _is_real(k_scale):
        v = _spread_scale(fw, float(v_scale), k, like, v)
    return k, v


def _is_fp8(fw, x):
    """x holds FP8 E4M3: a torch float8_e4m3fn tensor, or a numpy uint8 array (E4M3 bytes: numpy
    has no float8). A torch uint8 tensor is not: it stays a q the library refuses."""
    if fw == "torch":
        return x.dtype == getattr(sys.modules["torch"], "float8_e4m3fn", None)
    return x.dtype == sys.modules["numpy"].uint8


def _fp8_out_dtype(fw, out_dtype):
    """out's dtype in FP8 attention, the one the call computes in: FlashAttention-3's bfloat16 by
    default for torch, float32 for numpy (which has no bfloat16; the CPU backend computes in it)."""
    if fw == "torch":
        torch = sys.modules["torch"]
        allowed = (torch.float16, torch.bfloat16, torch.float32)
        if out_dtype is None:
            return torch.bfloat16
        if not isinstance(out_dtype, torch.dtype) or out_dtype not in allowed:
            raise ValueError(f"out_dtype={out_dtype!r} must be torch.float16, torch.bfloat16 or "
                             "torch.float32 (the CPU backend only)")
        return out_dtype
    np = sys.modules["numpy"]
    if out_dtype is None:
        return np.dtype(np.float32)
    try:
        dtype = np.dtype(out_dtype)
    except TypeError:
        dtype = None
    if dtype not in (np.float16, np.float32):
        raise ValueError(f"out_dtype={out_dtype!r} must be numpy.float16 or numpy.float32 (numpy "
                         "has no bfloat16)")
    return dtype


def _fp8_options(q, k, v, q_descale, k_descale, v_descale, out_dtype):
    """FP8 attention's keyword arguments for _forward (q_scale, k_scale, v_scale, out_dtype), or {}
    for a call whose q is not FP8 (_is_fp8), which takes neither descales nor out_dtype."""
    fw = _framework(q, "q")
    descales = {"q_descale": q_descale, "k_descale": k_descale, "v_descale": v_descale}
    if not _is_fp8(fw, q):
        given = [name for name, value in dict(descales, out_dtype=out_dtype).items()
                 if value is not None]
        if given:
            raise ValueError(f"{', '.join(given)} given but q dtype is {q.dtype}: descales and "
                             "out_dtype are for FP8 attention (q, k and v of float8_e4m3fn, or "
                             "numpy uint8 E4M3 bytes)")
        return {}
    missing = [name for name, value in descales.items() if value is None]
    if missing:
        raise ValueError(f"q dtype is {q.dtype} (FP8 attention) but {', '.join(missing)} "
                         f"{'is' if len(missing) == 1 else 'are'} missing: q_descale float32 "
                         "(nheads,) or (1,), k_descale and v_descale float32 (nheads_k,) or (1,), "
                         "or Python floats")
    for x, name in ((k, "k"), (v, "v")):
        _check_same_framework(fw, x, name)
        if not _is_fp8(fw, x):
            raise ValueError(f"{name} dtype is {x.dtype} but q is FP8 ({q.dtype}): FP8 attention "
                             "takes q, k and v all FP8 E4M3")
    k_scale, v_scale = _kv_scales(fw, k_descale, v_descale, q, "k_descale", "v_descale")
    return dict(q_scale=_kv_scale(fw, q_descale, q, "q_descale"), k_scale=k_scale,
                v_scale=v_scale, out_dtype=_fp8_out_dtype(fw, out_dtype))


def _kvcache_scale(fw, scale, descale, letter):
    """flash_attn_with_kvcache's k_scale (v_scale for letter 'v'), given as vLLM names it or as
    FlashAttention-3 does, k_descale: (the scale, whether it came as the descale). Both given is a
    ValueError; the framework check names the descale as passed."""
    if descale is None:
        return scale, False
    if scale is not None:
        raise ValueError(f"flash_attn_with_kvcache: {letter}_scale and {letter}_descale are one "
                         "argument (vLLM's and FlashAttention-3's names for it): pass one")
    if not _is_real(descale):
        _check_same_framework(fw, descale, f"{letter}_descale")
    return descale, True


def _kvcache_fp8_options(fw, q, k_cache, v_cache, q_descale, k_scale, v_scale, out_dtype):
    """FP8 decode's keyword arguments for _forward (q_scale, out_dtype), or {} for a q that is not
    FP8 (_is_fp8), which takes neither q_descale nor out_dtype. An FP8 q reads an E4M3 cache with
    its k_scale and v_scale (checked further by the library)."""
    if not _is_fp8(fw, q):
        given = [name for name, value in (("q_descale", q_descale), ("out_dtype", out_dtype))
                 if value is not None]
        if given:
            raise ValueError(f"flash_attn_with_kvcache: {', '.join(given)} given but q dtype is "
                             f"{q.dtype}: q_descale and out_dtype are for FP8 attention (q of "
                             "float8_e4m3fn, or numpy uint8 E4M3 bytes, beside an E4M3 cache)")
        return {}
    if q_descale is None:
        raise ValueError(f"flash_attn_with_kvcache: q dtype is {q.dtype} (FP8 attention) but "
                         "q_descale is missing: float32 (nheads,) or (1,), or a Python float")
    for x, name in ((k_cache, "k_cache"), (v_cache, "v_cache")):
        _check_same_framework(fw, x, name)
        if not _is_fp8(fw, x):
            raise ValueError(f"flash_attn_with_kvcache: {name} dtype is {x.dtype} but q is FP8 "
                             f"({q.dtype}): FP8 attention reads an E4M3 cache (float8_e4m3fn, or "
                             "numpy uint8 E4M3 bytes) with k_scale and v_scale")
    missing = [f"{x}_scale (or {x}_descale)" for x, value in (("k", k_scale), ("v", v_scale))
               if value is None]
    if missing:
        raise ValueError(f"flash_attn_with_kvcache: q dtype is {q.dtype} (FP8 attention) but "
                         f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} "
                         "missing: the E4M3 cache's scales, float32 (nheads_k,) or (1,), or "
                         "Python floats")
    return dict(q_scale=_kv_scale(fw, q_descale, q, "q_descale"),
                out_dtype=_fp8_out_dtype(fw, out_dtype))


def _descale_names(error, letters="qkv"):
    """The library's error of an FP8 call, with its scales named as the caller passed them (the
    library's q_scale / k_scale / v_scale are flash_attn_func's q/k/v_descale): `letters` says
    which of q, k and v the caller gave as descales."""
    return type(error)(re.sub(rf"\b([{letters}])_scale\b", r"\1_descale", str(error)))


def _forward(q, k, v, *, cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=0, max_seqlen_k=0,
             softmax_scale, mask, want_lse, seqused_k=None, block_table=None,
             check_indices=True, k_scale=None, v_scale=None, pdl=False, q_scale=None,
             out_dtype=None, descaled=None, check_only=False, into=None, leftpad_k=None,
             alibi_slopes=None):
    """Allocates out (and lse), runs the library with `mask` (from _resolve_mask), returns
    (out, lse or None); `into`, the (out, lse) of an earlier check_only call of the same
    arguments, is written instead of new buffers. FP8 attention (q_scale; _fp8_options makes its
    arguments) allocates out of `out_dtype`. The library's errors name the scales `descaled`
    lists (letters of q, k, v; None: all three in an FP8 call, none otherwise) X_descale, as the
    caller passed them. alibi_slopes: as _alibi_arg takes it (None: no ALiBi).
    check_only: the library validates the call (gpuattn::check_attention_args) and computes
    nothing; out and lse come back unwritten."""
    fw = _framework(q, "q")
    _check_same_framework(fw, k, "k")
    _check_same_framework(fw, v, "v")
    if cu_seqlens_q is not None or cu_seqlens_k is not None:
        _check_same_framework(fw, cu_seqlens_q, "cu_seqlens_q")
        _check_same_framework(fw, cu_seqlens_k, "cu_seqlens_k")
    q = _prepare(fw, q, "q")
    k = _prepare(fw, k, "k")
    v = _prepare(fw, v, "v")
    varlen = cu_seqlens_q is not None
    if into is not None:
        out, lse = into
    else:
        out = _empty(fw, q, tuple(q.shape), dtype=out_dtype)
        lse = None
        if want_lse:
            if varlen and q.ndim == 3:
                lse = _empty(fw, q, (q.shape[1], q.shape[0]), float32=True)
            elif not varlen and q.ndim == 4:
                lse = _empty(fw, q, (q.shape[0], q.shape[2], q.shape[1]), float32=True)
            # any other rank: the library reports it
    if seqused_k is not None:
        _check_same_framework(fw, seqused_k, "cache_seqlens")
        mask = dict(mask, seqused_k=seqused_k)
    if leftpad_k is not None:
        _check_same_framework(fw, leftpad_k, "cache_leftpad")
        mask = dict(mask, leftpad_k=leftpad_k)
    if block_table is not None:
        _check_same_framework(fw, block_table, "block_table")
        mask = dict(mask, block_table=block_table)
    if alibi_slopes is not None:
        mask = dict(mask, alibi_slopes=_alibi_arg(fw, alibi_slopes))
    if not check_indices:
        mask = dict(mask, check_indices=False)
    if pdl:
        mask = dict(mask, pdl=True)
    if check_only:
        mask = dict(mask, check_only=True)
    if k_scale is not None or v_scale is not None:
        k, kv_format = _kv_cache(fw, k)
        v, _ = _kv_cache(fw, v)
        names = [f"{x}_descale" if descaled and x in descaled else f"{x}_scale" for x in "kv"]
        k_scale, v_scale = _kv_scales(fw, k_scale, v_scale, q, *names)
        mask = dict(mask, k_scale=k_scale, v_scale=v_scale, kv_format=kv_format)
    if q_scale is not None:  # FP8 attention: q crosses as the cache does, in the same kv_format
        q, _ = _kv_cache(fw, q)
        mask = dict(mask, q_scale=q_scale)
    try:
        _call(fw, q, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
              softmax_scale, **mask)
    except (ValueError, NotImplementedError) as e:
        if descaled is None:
            descaled = "qkv" if q_scale is not None else ""
        if not descaled:
            raise
        raise _descale_names(e, descaled) from None
    return out, lse


def _dense_lengths(q, k):
    sq = q.shape[1] if q.ndim == 4 else None
    sk = k.shape[1] if getattr(k, "ndim", 0) == 4 else None
    return sq, sk


# ---- public API (flash-attn 2.x) ----------------------------------------------------------------


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False,
                    window_size=_NO_WINDOW, softcap=0.0, alibi_slopes=None, deterministic=False,
                    return_attn_probs=False, *, q_descale=None, k_descale=None, v_descale=None,
                    out_dtype=None, check_indices=True):
    """Dense attention. q (batch, seqlen_q, nheads, headdim), k/v (batch, seqlen_k, nheads_k,
    headdim), nheads % nheads_k == 0 (GQA/MQA). softmax_scale defaults to 1/sqrt(headdim); causal is
    bottom-right aligned when seqlen_q != seqlen_k. window_size=(left, right) (-1: unbounded side):
    query i sees key j iff i + seqlen_k - seqlen_q - left <= j <= i + seqlen_k - seqlen_q + right;
    with causal=True right is 0. A row that sees no key gets out 0 and lse -inf. softcap > 0 (as
    flash-attn; Gemma 2) soft-caps the scores: softcap * tanh(q.k * softmax_scale / softcap)
    before the softmax (lse of those scores), on the kernels an uncapped call takes; not with FP8
    q (NotImplementedError). The same holds in the varlen, packed and kvcache functions.

    alibi_slopes (ALiBi, as flash-attn: BLOOM, MPT): float32 (nheads,) (a slope a query head) or
    (batch, nheads) (a slope a sequence and head), a torch tensor or numpy array of q's framework
    on q's device, with a contiguous last dimension (a batch stride of 0 or at least nheads; it
    is never copied; a tensor that requires grad is read detached: flash-attn computes no
    gradient for it either).
    Query i of head h of sequence b adds -alibi_slopes[b, h] * |i + seqlen_k - seqlen_q - j| to
    its score for key j, after softmax_scale and softcap, before the softmax (the distance to its
    bottom-right aligned key position, as the causal mask and the window count it); the returned
    lse is of those biased scores. That is flash-attn's documented formula: flash-attn's causal
    kernels add alibi_slopes[b, h] * j instead, which gives the same out and an lse shifted by
    alibi_slopes[b, h] * (i + seqlen_k - seqlen_q) a row. Each slope must be finite, with |slope|
    x max(log2(e), 1 / softmax_scale, or 1 / softcap when capped) at most FLT_MAX / 2^31 (about
    1.58e29: the bias stays a float32 at every distance); the library checks the values
    (ValueError naming alibi_slopes[...]), on CUDA on a host copy (a stream synchronization),
    which check_indices=False skips, trusting them. A dtype other than float32, a shape other than
    those two, another framework or device than q's, or a last dimension that is not contiguous
    raise ValueError / TypeError naming alibi_slopes. Any mask, layout, dtype and precision; on
    CUDA the split-KV decode kernels add the bias for decode shapes (16-bit and 8-bit caches, read
    in place) and, on Hopper, the wgmma kernels for dense and causal calls (sm90_ws_128x128 at head
    dims 64 and 128: the tuned kernels leave it out); with a window, global tokens or compensated
    precision the portable sm_80 kernel runs the call, and the FP8 kernel does not add it (FP8 q is
    dequantized). The same holds in the varlen (batch: the number of sequences), packed and
    kvcache functions.

    FP8 attention (keyword only, as FlashAttention-3 names it): q, k and v of torch.float8_e4m3fn
    (numpy: uint8 arrays of E4M3 bytes) with q_descale float32 (nheads,) or (1,) and k_descale /
    v_descale float32 (nheads_k,) or (1,), arrays on q's device or Python / numpy real numbers (one
    for every head), all three required: element x of query head h stands for x * q_descale[h] (of
    kv head h for k and v). k_descale and v_descale, when both are arrays, must have the same shape
    and the same stride (the library reads both with one stride); a number beside an array is made a
    float32 array of that array's shape and stride. out is allocated of out_dtype, the dtype the
    call computes in: torch.bfloat16 (the default, as FlashAttention-3), torch.float16, or float32
    on the CPU backend; for numpy float32 (the default; numpy has no bfloat16) or float16. Descales
    or out_dtype with a q that is not FP8 raise ValueError, as does FP8 q beside k or v that are
    not. On CUDA the descale values are checked on a host copy (a stream synchronization, then
    ValueError for one that is not positive and finite); check_indices=False (keyword only, ours, as
    in flash_attn_with_kvcache) trusts them instead, as FlashAttention-3 does: the call stays
    asynchronous and can be captured into a CUDA graph. The CPU backend always checks.

    Returns out (batch, seqlen_q, nheads, headdim), or with return_attn_probs=True
    (out, softmax_lse float32 (batch, nheads, seqlen_q), None). `deterministic` is accepted: the
    forward pass is always deterministic.
    """
    torch = sys.modules.get("torch")
    if (torch is not None
            and q_descale is None and k_descale is None and v_descale is None
            and out_dtype is None
            and _plain_options(dropout_p, softmax_scale, causal, window_size, softcap)
            and _plain_tensors(torch, q, k, v)
            and _plain_slopes(torch, alibi_slopes, q)
            and q.dtype is not getattr(torch, "float8_e4m3fn", None)):  # FP8 q: _fp8_options
        try:
            out, lse = _fast_forward(torch, q, k, v, softmax_scale, causal, return_attn_probs,
                                     check_indices=bool(check_indices), softcap=softcap,
                                     alibi_slopes=alibi_slopes)
        except ValueError:
            # A tensor of no elements crosses without storage, which the module refuses before
            # the library judges its shape: the general path passes it with storage.
            if q.numel() and k.numel() and v.numel():
                raise
        else:
            return (out, lse, None) if return_attn_probs else out
    _check_dropout(dropout_p)
    softcap = _check_softcap(softcap)
    scale = _softmax_scale(softmax_scale)
    _framework(q, "q")
    fp8 = _fp8_options(q, k, v, q_descale, k_descale, v_descale, out_dtype)
    mask = _with_softcap(_resolve_mask(window_size, causal, *_dense_lengths(q, k)), softcap)
    out, lse = _forward(q, k, v, softmax_scale=scale, mask=mask, want_lse=return_attn_probs,
                        check_indices=bool(check_indices), alibi_slopes=alibi_slopes, **fp8)
    return (out, lse, None) if return_attn_probs else out


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                           dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                           softcap=0.0, alibi_slopes=None, deterministic=False,
                           return_attn_probs=False, block_table=None, *, q_descale=None,
                           k_descale=None, v_descale=None, out_dtype=None, check_indices=True):
    """Variable-length (packed) attention. q (total_q, nheads, headdim), k/v (total_k, nheads_k,
    headdim); cu_seqlens_q/k int32 (batch + 1,) prefix sums on q's device; max_seqlen_q/k positive
    ints bounding every sequence length. A sequence may have no rows on either side (equal
    neighbouring cu_seqlens entries), and so may every sequence: q or k/v of 0 rows (then out
    (0, nheads, headdim), lse (nheads, 0)); rows that see no key get out 0, lse -inf. causal and window_size as in flash_attn_func, with seqlen_q and
    seqlen_k the lengths of each sequence; so are FP8 attention's q_descale, k_descale, v_descale
    and out_dtype (keyword only). On CUDA cu_seqlens_q/k (and FP8 descales) are checked on a host
    copy, a stream synchronization; check_indices=False (keyword only, ours) trusts them instead,
    as flash-attn does (a value out of range then reads or writes out of bounds), and the call
    stays asynchronous and can be captured into a CUDA graph. The CPU backend always checks.
    alibi_slopes as in flash_attn_func: float32 (nheads,) or (batch, nheads), batch the number of
    sequences (len(cu_seqlens_q) - 1), each sequence's positions counted from its own first row
    (its own seqlen_q and seqlen_k in the distance); its values are checked with the indices.

    Returns out (total_q, nheads, headdim), or with return_attn_probs=True
    (out, softmax_lse float32 (nheads, total_q), None).
    """
    if block_table is not None:
        raise NotImplementedError("block_table: paged KV is supported in flash_attn_with_kvcache "
                                  "(dense q), not in varlen calls")
    _check_dropout(dropout_p)
    softcap = _check_softcap(softcap)
    scale = _softmax_scale(softmax_scale)
    if cu_seqlens_q is None or cu_seqlens_k is None:
        raise ValueError("cu_seqlens_q and cu_seqlens_k are required (int32 arrays of batch + 1)")
    # Any int32 crosses: the library names a length that is not positive.
    max_seqlen_q = _int_arg(max_seqlen_q, "max_seqlen_q", lo=_INT32_MIN)
    max_seqlen_k = _int_arg(max_seqlen_k, "max_seqlen_k", lo=_INT32_MIN)
    _framework(q, "q")
    fp8 = _fp8_options(q, k, v, q_descale, k_descale, v_descale, out_dtype)
    mask = _with_softcap(_resolve_mask(window_size, causal, max_seqlen_q, max_seqlen_k), softcap)
    out, lse = _forward(q, k, v, cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k,
                        max_seqlen_q=max_seqlen_q, max_seqlen_k=max_seqlen_k, softmax_scale=scale,
                        mask=mask, want_lse=return_attn_probs, check_indices=bool(check_indices),
                        alibi_slopes=alibi_slopes, **fp8)
    return (out, lse, None) if return_attn_probs else out


def flash_attn_qkvpacked_func(qkv, dropout_p=0.0, softmax_scale=None, causal=False,
                              window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                              deterministic=False, return_attn_probs=False):
    """qkv (batch, seqlen, 3, nheads, headdim): views into it are passed without a copy."""
    _framework(qkv, "qkv")
    if qkv.ndim != 5 or qkv.shape[2] != 3:
        raise ValueError(f"qkv shape {tuple(qkv.shape)} must be (batch, seqlen, 3, nheads, headdim)")
    return flash_attn_func(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], dropout_p, softmax_scale,
                           causal, window_size, softcap, alibi_slopes, deterministic,
                           return_attn_probs)


def flash_attn_kvpacked_func(q, kv, dropout_p=0.0, softmax_scale=None, causal=False,
                             window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                             deterministic=False, return_attn_probs=False):
    """kv (batch, seqlen_k, 2, nheads_k, headdim)."""
    _framework(kv, "kv")
    if kv.ndim != 5 or kv.shape[2] != 2:
        raise ValueError(f"kv shape {tuple(kv.shape)} must be (batch, seqlen_k, 2, nheads_k, headdim)")
    return flash_attn_func(q, kv[:, :, 0], kv[:, :, 1], dropout_p, softmax_scale, causal,
                           window_size, softcap, alibi_slopes, deterministic, return_attn_probs)


def flash_attn_varlen_qkvpacked_func(qkv, cu_seqlens, max_seqlen, dropout_p=0.0, softmax_scale=None,
                                     causal=False, window_size=(-1, -1), softcap=0.0,
                                     alibi_slopes=None, deterministic=False,
                                     return_attn_probs=False):
    """qkv (total, 3, nheads, headdim)."""
    _framework(qkv, "qkv")
    if qkv.ndim != 4 or qkv.shape[1] != 3:
        raise ValueError(f"qkv shape {tuple(qkv.shape)} must be (total, 3, nheads, headdim)")
    return flash_attn_varlen_func(qkv[:, 0], qkv[:, 1], qkv[:, 2], cu_seqlens, cu_seqlens,
                                  max_seqlen, max_seqlen, dropout_p, softmax_scale, causal,
                                  window_size, softcap, alibi_slopes, deterministic,
                                  return_attn_probs)


def flash_attn_varlen_kvpacked_func(q, kv, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                                    dropout_p=0.0, softmax_scale=None, causal=False,
                                    window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                                    deterministic=False, return_attn_probs=False):
    """kv (total_k, 2, nheads_k, headdim)."""
    _framework(kv, "kv")
    if kv.ndim != 4 or kv.shape[1] != 2:
        raise ValueError(f"kv shape {tuple(kv.shape)} must be (total_k, 2, nheads_k, headdim)")
    return flash_attn_varlen_func(q, kv[:, 0], kv[:, 1], cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                                  max_seqlen_k, dropout_p, softmax_scale, causal, window_size,
                                  softcap, alibi_slopes, deterministic, return_attn_probs)


def flash_attn_with_kvcache(q, k_cache, v_cache, k=None, v=None, rotary_cos=None, rotary_sin=None,
                            cache_seqlens=None, cache_batch_idx=None, cache_leftpad=None,
                            block_table=None, softmax_scale=None, causal=False,
                            window_size=_NO_WINDOW, softcap=0.0, rotary_interleaved=True,
                            alibi_slopes=None, num_splits=0, return_softmax_lse=False, *,
                            check_indices=True, k_scale=None, v_scale=None, pdl=False,
                            q_descale=None, k_descale=None, v_descale=None, out_dtype=None):
    """Attention of q (batch, seqlen_q, nheads, headdim) over a KV cache k_cache/v_cache
    (batch, seqlen_cache, nheads_k, headdim), or with block_table a paged cache.

    Supported today: the whole cache attended, or with cache_seqlens (int32 (batch,) on q's
    device, or an int for every sequence) the first cache_seqlens[b] keys of sequence b, causal
    bottom-right aligned to them. block_table (int32 (batch, max_num_blocks_per_seq) on q's
    device) makes k_cache/v_cache a page pool (num_blocks, page_block_size, nheads_k, headdim) of
    any page_block_size: key j of sequence b is row j % page_block_size of page
    block_table[b, j // page_block_size]; the cache is max_num_blocks_per_seq * page_block_size
    keys long, and entries past a sequence's used pages are never read. On CUDA cache_seqlens and
    block_table are checked on a host copy (a stream synchronization); decode calls
    (seqlen_q x nheads / nheads_k <= 64, no window) run the split-KV decode kernel, reading pages
    in place; other calls with cache_seqlens run the portable sm_80 kernel, and other paged calls
    first gather their pages into a contiguous buffer. cache_batch_idx (int32 (batch,) on q's
    device; not with block_table) makes row cache_batch_idx[b] of a dense cache (batch_size_cache,
    seqlen_cache, ...) sequence b's, read and appended to in place (run as a paged call over the
    same memory, one page a sequence). cache_leftpad (int32 (batch,) on q's device, as
    flash-attn; the library's leftpad_k) starts sequence b at cache row cache_leftpad[b]: it
    attends to keys cache_leftpad[b] .. cache_seqlens[b] (the whole cache row's end without
    cache_seqlens; plus the appended keys), causal bottom-right aligned to them; k/v are still
    appended at row cache_seqlens[b] and rotary positions stay cache rows (flash-attn's rule).
    Each value must be in [0, cache_seqlens[b]] (checked on a host copy as cache_seqlens is).
    Decode calls read the keys in place (the split-KV decode kernel, where it fits the GPU's
    shared memory: not head dim 256 on 99 KB GPUs, which gather a paged cache); with block_table or
    cache_batch_idx (beyond flash-attn, which refuses a paged cache with it) the positions are
    logical, and the pages before cache_leftpad[b] are never read.
    `num_splits` is a performance hint and accepted as any int >= 0.
    rotary_cos / rotary_sin (seqlen_ro, rotary_dim / 2), of q's dtype or float32 on q's device,
    rotary_dim <= headdim, with k/v only (as flash-attn): q and k are rotated by the append
    itself (apply_rotary_emb's rule: k on its way into the cache, q into a new array; the
    caller's are untouched), before the attention; new key i of sequence b at position
    cache_seqlens[b] + i, query i likewise when the call is causal or has a window, else every
    query at cache_seqlens[b]; every position must be < seqlen_ro, checked before anything is
    written.
    rotary_interleaved (True, flash-attn's default: pairs (2j, 2j + 1); False: (j, j +
    rotary_dim / 2), GPT-NeoX) only matters with them. k/v (batch, seqlen_new, nheads_k,
    headdim), given together with cache_seqlens, are first written into the cache in place at
    rows cache_seqlens[b].. (through block_table for a paged cache), and the attention then uses
    cache_seqlens + seqlen_new keys, as flash-attn does; cache_seqlens itself is not updated.
    check_indices=False (keyword only, not
    in flash-attn) skips the host copies on CUDA: the call stays asynchronous and can be captured
    into a CUDA graph, and cache_seqlens and block_table are trusted as flash-attn trusts them.
    k_scale/v_scale (keyword only, as vLLM names them; float32 (nheads_k,) or (1,) arrays on q's
    device, or Python / numpy real numbers; two arrays must have the same shape and the same
    stride, the library reading both with one stride, and a number beside an array is made a
    float32 array of that array's shape and stride) make k_cache/v_cache a quantized cache of
    int8 or float8_e4m3fn (torch.float8_e4m3fn, or uint8 bytes): element x of kv head h stands
    for x * k_scale[h] (v_scale for v). Decode calls read the 8-bit cache in place; k/v appended
    are quantized (x / scale, rounded to nearest even, saturated).
    FP8 decode (keyword only, FlashAttention-3's names): q of torch.float8_e4m3fn (numpy: uint8
    E4M3 bytes) with q_descale (float32 (nheads,) or (1,) on q's device, or a real number:
    element x of query head h stands for x * q_descale[h]) attends to an E4M3 cache (dense or
    paged) with its k_scale / v_scale; k_descale / v_descale are FlashAttention-3's names for
    k_scale / v_scale (one of each pair, in any call). out is allocated of out_dtype, the dtype the
    call computes in, as in flash_attn_func (torch.bfloat16 by default; numpy float32). k/v
    appended are 16-bit rows, quantized into the cache as above. q_descale or out_dtype with a q
    that is not FP8, an FP8 q without q_descale, beside a cache that is not E4M3 or without the
    cache's scales, and both names of one scale raise ValueError naming the argument before k/v
    are appended.
    With k/v, the attention's own checks (q against the cache, the mask, q_descale's shape) and
    the append's (the new rows fit after cache_seqlens) run before anything is written: a call
    that raises ValueError or NotImplementedError leaves the caches as they were. One exception:
    on CUDA the values of device index arrays and scales (block_table, q_descale; check_indices)
    are read on a host copy by each step as it runs, so a bad table entry of a page before
    cache_seqlens, or a bad q_descale value, raises after the rows are appended. The library's
    errors name cache_seqlens as passed (its own name for the lengths is seqused_k).
    alibi_slopes as in flash_attn_func (float32 (nheads,) or (batch, nheads) on q's device),
    applied by the attention over the cache as it ends up, after the append: key j of sequence
    b (counted from cache_leftpad[b], over cache_seqlens[b] + seqlen_new - cache_leftpad[b] =
    seqlen_k keys) is at distance |i + seqlen_k - seqlen_q - j| from query i, and the lse is of the
    biased scores. Its shape, dtype, device and (on the CPU, and on CUDA with check_indices, on a
    host copy) values are checked before k/v are appended: a bad one leaves the caches as they
    were. On CUDA decode calls with it run the split-KV decode kernels on the cache in place: 16-bit,
    paged or 8-bit.
    pdl=True (keyword only, not in flash-attn; FlashInfer calls it enable_pdl): on CUDA sm_90+ a
    decode call's kernel launches with programmatic dependent launch, scheduled while the kernel
    ahead of it in the stream still runs (AttentionArgs::pdl in the C++ API). It pays in chains
    of small kernels (a decode step) and can cost a lone call; other calls and the CPU ignore it.

    Returns out, or (out, softmax_lse float32 (batch, nheads, seqlen_q)) with
    return_softmax_lse=True.
    """
    if type(pdl) is not bool:
        raise TypeError(f"flash_attn_with_kvcache: pdl must be True or False, not {pdl!r}")
    torch = sys.modules.get("torch")
    if (torch is not None
            and ((rotary_cos is None and rotary_sin is None)
                 or (k is not None and type(rotary_interleaved) is bool
                     and _plain_tables(torch, rotary_cos, rotary_sin)))
            and cache_batch_idx is None
            and (cache_leftpad is None or _plain_leftpad(torch, cache_leftpad, q))
            and q_descale is None and k_descale is None and v_descale is None
            and out_dtype is None
            and ((k_scale is None and v_scale is None)
                 or (type(k_scale) is torch.Tensor and type(v_scale) is torch.Tensor))
            and type(num_splits) is int and 0 <= num_splits <= _INT32_MAX
            and (cache_seqlens is None or type(cache_seqlens) is torch.Tensor)
            and (block_table is None or type(block_table) is torch.Tensor)
            and _plain_options(0, softmax_scale, causal, window_size, softcap)
            and _plain_tensors(torch, q, k_cache, v_cache)
            and _plain_slopes(torch, alibi_slopes, q)
            and q.dtype is not getattr(torch, "float8_e4m3fn", None)  # FP8 q: the general path
            and ((k is None and v is None)
                 or (cache_seqlens is not None and _plain_tensors(torch, k, v)
                     and _attends_cache(q, k_cache, k, block_table, softmax_scale,
                                        softcap)))):
        indices = bool(check_indices)
        kc, vc, kv_format = k_cache, v_cache, ""
        if k_scale is not None:  # a quantized cache (scales as tensors): as _forward passes it
            kc, kv_format = _kv_cache("torch", k_cache)
            vc, _ = _kv_cache("torch", v_cache)
        used = cache_seqlens
        checked = None  # the check_only call's out and lse, which the call then writes
        appended = False
        try:
            if k is not None:  # appended first, as _append_kv does, then attended with them
                if not q.is_cuda or alibi_slopes is not None:
                    # The attention's checks before anything is written, in the general path's
                    # order: on the CPU every page of a block table (the append checks only those
                    # it writes; the check's time is the CPU's least cost), and with ALiBi the
                    # slopes against the scale and cap, which the attention would otherwise judge
                    # only after the append. Host data only (no synchronization).
                    checked = _fast_forward(torch, q, kc, vc, softmax_scale, causal,
                                            return_softmax_lse, used, block_table, indices,
                                            k_scale, v_scale, kv_format, pdl, check_only=True,
                                            softcap=softcap, leftpad_k=cache_leftpad,
                                            alibi_slopes=alibi_slopes)
                if cache_leftpad is not None and (indices or not q.is_cuda):
                    _check_leftpad_before_append("torch", cache_leftpad, used)
                if alibi_slopes is not None and indices and q.is_cuda:
                    # Their values, which the CUDA attention checks (on a host copy) only after
                    # the append; the CPU's check_only call above read them.
                    _check_alibi_before_append(
                        alibi_slopes, q, _softmax_scale(softmax_scale), float(softcap))
                cap = torch.utils.dlpack.to_dlpack
                stream = _current_raw_stream(torch, kc) if kc.is_cuda else 0
                rotary = {}
                if rotary_cos is not None:  # k rotated by the append, q beside it (_with_kvcache)
                    q_rotated = torch.empty(q.shape, dtype=q.dtype, device=q.device)
                    rotary = dict(rotary_cos=cap(rotary_cos), rotary_sin=cap(rotary_sin),
                                  rotary_interleaved=rotary_interleaved, q=cap(q),
                                  q_out=cap(q_rotated), q_same_position=not causal)
                _C.append_kv(cap(kc), cap(vc), cap(k), cap(v), cap(used),
                             block_table=None if block_table is None else cap(block_table),
                             check_indices=indices, stream=stream,
                             k_scale=None if k_scale is None else cap(k_scale),
                             v_scale=None if v_scale is None else cap(v_scale),
                             kv_format=kv_format, **rotary)
                appended = True
                if rotary:
                    q = q_rotated
                used = (used + k.shape[1]).to(torch.int32)
            out, lse = _fast_forward(torch, q, kc, vc, softmax_scale, causal, return_softmax_lse,
                                     used, block_table, indices, k_scale, v_scale, kv_format, pdl,
                                     into=checked, softcap=softcap, leftpad_k=cache_leftpad,
                                     alibi_slopes=alibi_slopes)
        except (ValueError, NotImplementedError) as e:
            # A tensor of no elements crosses without storage, which the module refuses before
            # the library judges its shape (and before anything is written): the general path
            # passes it with storage. (The append's own errors name k_new / v_new / k_cache:
            # untouched by _named_caches.)
            if appended or not any(x is not None and x.numel() == 0 for x in (
                    q, k_cache, v_cache, k, v, cache_seqlens, block_table, k_scale, v_scale,
                    cache_leftpad, rotary_cos, rotary_sin, alibi_slopes)):
                raise _named_new_rows(_named_caches(_named_cache_seqlens(e))) from None
        else:
            return (out, lse) if return_softmax_lse else out
    if (k is None) != (v is None):
        raise ValueError("flash_attn_with_kvcache: k and v are appended together: pass both or "
                         "neither")
    if k is not None and cache_seqlens is None:
        raise ValueError("flash_attn_with_kvcache: appending k/v needs cache_seqlens (where each "
                         "sequence's new keys go)")
    rotary = rotary_cos is not None or rotary_sin is not None
    if rotary:
        if rotary_cos is None or rotary_sin is None:
            raise ValueError("flash_attn_with_kvcache: rotary_cos and rotary_sin go together: "
                             "pass both or neither")
        if k is None:
            raise ValueError("flash_attn_with_kvcache: rotary_cos/rotary_sin rotate q and the "
                             "appended k (as flash-attn): pass k and v with them")
        if type(rotary_interleaved) is not bool:
            raise TypeError("flash_attn_with_kvcache: rotary_interleaved must be True or False, "
                            f"not {rotary_interleaved!r}")
    softcap = _check_softcap(softcap)
    _int_arg(num_splits, "num_splits", lo=0)
    scale = _softmax_scale(softmax_scale)
    fw = _framework(q, "q")
    if cache_batch_idx is not None:
        # Sequence b's cache is row cache_batch_idx[b] of k_cache (batch_size_cache, seqlen_cache,
        # ...): the same memory as a page pool of pages of seqlen_cache keys, one a sequence, and
        # cache_batch_idx as its (batch, 1) block table. Everything below runs paged, then names
        # the index as the caller passed it.
        if block_table is not None:
            raise ValueError("flash_attn_with_kvcache: cache_batch_idx picks rows of a dense "
                             "cache; a paged cache (block_table) lists each sequence's pages "
                             "in its table: pass one of the two")
        _check_same_framework(fw, cache_batch_idx, "cache_batch_idx")
        for cache, name in ((k_cache, "k_cache"), (v_cache, "v_cache")):
            if len(getattr(cache, "shape", ())) != 4:
                raise ValueError(f"flash_attn_with_kvcache: {name} has shape "
                                 f"{tuple(getattr(cache, 'shape', ()))}, expected (batch_size_cache, "
                                 "seqlen_cache, nheads_k, headdim) with cache_batch_idx")
        shape = tuple(cache_batch_idx.shape)
        batch = tuple(q.shape)[:1]
        if len(shape) != 1 or shape != batch:
            raise ValueError(f"flash_attn_with_kvcache: cache_batch_idx has shape {shape}, "
                             f"expected (batch,) = {batch}")
        try:
            return _with_kvcache(q, k_cache, v_cache, k, v, rotary_cos, rotary_sin, cache_seqlens,
                                 cache_batch_idx.reshape(-1, 1), softmax_scale, causal,
                                 window_size, rotary_interleaved, return_softmax_lse,
                                 check_indices, k_scale, v_scale, pdl, q_descale, k_descale,
                                 v_descale, out_dtype, fw, scale, softcap, cache_leftpad,
                                 alibi_slopes)
        except (ValueError, NotImplementedError) as e:
            raise _named_batch_index(e) from None
    return _with_kvcache(q, k_cache, v_cache, k, v, rotary_cos, rotary_sin, cache_seqlens,
                         block_table, softmax_scale, causal, window_size, rotary_interleaved,
                         return_softmax_lse, check_indices, k_scale, v_scale, pdl, q_descale,
                         k_descale, v_descale, out_dtype, fw, scale, softcap, cache_leftpad,
                         alibi_slopes)


def _named_batch_index(error):
    """An error of a cache_batch_idx call (run as a paged one) with its block table named as the
    caller passed it: block_table[b][0] is cache_batch_idx[b], its pages k_cache's rows."""
    text = re.sub(r"block_table\[(\d+)\]\[0\]", r"cache_batch_idx[\1]", str(error))
    text = re.sub(r" \((?:sequence \d+ uses [^)]*|the new keys of sequence \d+ land in it)\)",
                  "", text)
    text = text.replace("must be a page in", "must be a row of k_cache in")
    return type(error)(re.sub(r"\bblock_table\b", "cache_batch_idx", text))


def _with_kvcache(q, k_cache, v_cache, k, v, rotary_cos, rotary_sin, cache_seqlens, block_table,
                  softmax_scale, causal, window_size, rotary_interleaved, return_softmax_lse,
                  check_indices, k_scale, v_scale, pdl, q_descale, k_descale, v_descale,
                  out_dtype, fw, scale, softcap, cache_leftpad=None, alibi_slopes=None):
    """flash_attn_with_kvcache's general path past its option checks (a dense or paged cache;
    cache_leftpad is the library's leftpad_k). alibi_slopes goes to the attention (its check
    before the append included), never to the append."""
    rotary = rotary_cos is not None  # with rotary_sin and k (checked)
    k_scale, k_descaled = _kvcache_scale(fw, k_scale, k_descale, "k")
    v_scale, v_descaled = _kvcache_scale(fw, v_scale, v_descale, "v")
    descaled = "k" * k_descaled + "v" * v_descaled  # the scales the caller named descales
    fp8 = _kvcache_fp8_options(fw, q, k_cache, v_cache, q_descale, k_scale, v_scale, out_dtype)
    seqused = None
    if cache_seqlens is not None:
        if isinstance(cache_seqlens, bool) or not isinstance(cache_seqlens, int):
            seqused = cache_seqlens
        else:  # one length for every sequence, as flash-attn takes it
            if getattr(q, "ndim", 0) != 4:
                raise ValueError(f"q shape {tuple(q.shape)} must be (batch, seqlen_q, nheads, "
                                 "headdim)")
            seqused = _full_int32(_framework(q, "q"), q, q.shape[0],
                                  _int_arg(cache_seqlens, "cache_seqlens", 0, _INT32_MAX))
    sq, sk = _dense_lengths(q, k_cache)
    if block_table is not None:  # the logical cache: every page of a table row
        shape = getattr(block_table, "shape", None)
        sk = (shape[1] * k_cache.shape[1]
              if shape is not None and len(shape) == 2 and sk is not None else None)
    mask = _resolve_mask(window_size, causal, sq, sk)
    append_rotary = None
    if rotary:
        # q and the new keys rotated by the append itself, every position checked with the
        # append's cache_seqlens before anything is written: key row i of sequence b at
        # cache_seqlens[b] + i, and so query row i where the call is causal or has a window, else
        # every query row at cache_seqlens[b] (flash-attn's rule). q is rotated into a new array
        # (the caller's is untouched), which the attention reads after the append.
        # flash-attn's rule: a window side counts when it is under the cache's length (sk), not
        # the narrower reductions _resolve_mask makes for the mask itself.
        left, right = _window_pair(window_size)
        cap = sk if sk is not None else _INT32_MAX
        per_row = mask["causal"] or 0 <= left < cap or 0 <= right < cap
        _check_same_framework(fw, k, "k")
        q_in = _prepare(fw, q, "q")
        q = _empty(fw, q_in, tuple(q_in.shape))
        append_rotary = (rotary_cos, rotary_sin, rotary_interleaved, q_in, q, not per_row)
    call = dict(softmax_scale=scale, mask=_with_softcap(mask, softcap),
                want_lse=return_softmax_lse, block_table=block_table, check_indices=bool(check_indices), k_scale=k_scale,
                v_scale=v_scale, pdl=pdl, descaled=descaled + "q" * bool(fp8),
                leftpad_k=cache_leftpad, alibi_slopes=alibi_slopes, **fp8)
    checked = None  # the check's out and lse, which the call then writes
    try:
        if k is not None:
            # The attention checked before anything is written, so that a call it refuses leaves
            # the caches as they were. Over the lengths before the append: the append itself then
            # checks that the new rows fit (naming cache_seqlens), before it writes.
            try:
                checked = _forward(q, k_cache, v_cache, seqused_k=seqused, check_only=True,
                                   **call)
            except (TypeError, ValueError, NotImplementedError) as e:
                raise _named_caches(e) from None
            if cache_leftpad is not None and (check_indices or not (fw == "torch" and q.is_cuda)):
                _check_leftpad_before_append(fw, cache_leftpad, seqused)
            if alibi_slopes is not None and check_indices and fw == "torch" and q.is_cuda:
                # The check above read no device values; the CPU's checked the slopes.
                _check_alibi_before_append(alibi_slopes, q, scale, softcap)
            try:
                _append_kv(fw, k_cache, v_cache, k, v, seqused, block_table, check_indices,
                           k_scale=k_scale, v_scale=v_scale, rotary=append_rotary)
            except (ValueError, NotImplementedError) as e:
                e = _named_new_rows(e)
                raise (_descale_names(e, descaled) if descaled else e) from None
            n = getattr(k, "shape", (0, 0))[1]
            if fw == "torch":
                seqused = (seqused + n).to(sys.modules["torch"].int32)
            else:
                seqused = (seqused + n).astype(sys.modules["numpy"].int32)
        try:
            out, lse = _forward(q, k_cache, v_cache, seqused_k=seqused, into=checked, **call)
        except (TypeError, ValueError, NotImplementedError) as e:
            raise _named_caches(e) from None
    except (ValueError, NotImplementedError) as e:
        raise _named_cache_seqlens(e) from None
    return (out, lse) if return_softmax_lse else out

