"""The `auto` sparsity policy (gpuattn::choose_sparsity, include/gpuattn/sparsity.h) for Python.

Explicit opt-in only: choose_sparsity() recommends dense attention, a sliding window or a
block-sparse layout for one long-context self-attention call and says why; it changes nothing.
No function of gpu_attention ever calls it or applies its choice on its own: the caller decides
whether to pass SparsityChoice.sparse_attn_kwargs() (or a layout it builds) to sparse_attn_func.
"""

import dataclasses
import sys
from typing import Optional, Tuple

from . import _C
from .flash_attn_interface import _as_int

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)

# Bytes per element of q/k/v/out for the dtypes the library computes in.
_DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4}


@dataclasses.dataclass(frozen=True)
class SparsityEstimate:
    """Memory and work of one mode for the request."""

    bytes: int  # Q, K, V, O, LSE (+ the layout for block-sparse)
    visible_pairs: float  # (query, key) pairs computed, all heads and sequences
    fits: bool  # bytes <= free_memory_bytes


@dataclasses.dataclass(frozen=True)
class SparsityChoice:
    """What choose_sparsity recommends, with the estimates behind it and a reason in words.

    mode: 'dense', 'sliding_window' or 'block_sparse'. fits: the chosen mode's estimate is within
    the free memory (False: no mode fits on one device; split the batch or shard the sequence).
    window_size: (left, right) for 'sliding_window' (flash-attn's window_size), else None;
    global_tokens: the global tokens to keep with that window (0 otherwise). block_size and
    max_block_density: for 'block_sparse', the block size of the layout to build (block_q =
    block_k) and the largest fraction of its (query block, key block) pairs to turn on; else None.
    causal, seqlen: the request's, which the recommended call keeps.
    """

    mode: str
    fits: bool
    window_size: Optional[Tuple[int, int]]
    global_tokens: int
    block_size: Optional[int]
    max_block_density: Optional[float]
    dense: SparsityEstimate
    sliding_window: SparsityEstimate
    block_sparse: SparsityEstimate
    reason: str
    causal: bool
    seqlen: int

    def sparse_attn_kwargs(self):
        """The keyword arguments of sparse_attn_func (and sparse_attn_varlen_func) for this choice:
        {'causal', 'window_size', 'global_tokens'}; dense is window_size (-1, -1) and no global
        tokens. Raises ValueError for 'block_sparse': the layout depends on the model, so the
        caller builds it (the message gives the block size and the density to stay within)."""
        if self.mode == "block_sparse":
            n = -(-self.seqlen // self.block_size)
            raise ValueError(
                f"sparse_attn_kwargs: the choice is block_sparse, whose layout the caller must "
                f"build: a uint8/bool block_mask of shape (nheads or 1, {n}, {n}) (block size "
                f"{self.block_size}, seqlen {self.seqlen}) with at most "
                f"{100 * self.max_block_density:.2f}% of its entries on, then "
                f"sparse_attn_func(q, k, v, causal={self.causal}, block_mask=layout, "
                f"block_size={self.block_size})"
            )
        return {
            "causal": self.causal,
            "window_size": self.window_size if self.window_size is not None else (-1, -1),
            "global_tokens": self.global_tokens,
        }


def _int(value, name, bounds, none_ok=False):
    """An int within the C++ field's type; its other checks (positive, ...) are the library's, so
    that every bad value is named by one set of messages."""
    if value is None and none_ok:
        return None
    value = _as_int(value, name)
    lo, hi = bounds
    if not lo <= value <= hi:
        raise ValueError(f"{name} {value} is out of range (the library holds it in "
                         f"{'int32' if bounds == _INT32 else 'int64'})")
    return value


def _dtype_bytes(dtype):
    """A string, numpy dtype (or scalar type) or torch dtype -> bytes per element."""
    name = None
    if isinstance(dtype, str):
        name = dtype
    else:
        torch = sys.modules.get("torch")
        np = sys.modules.get("numpy")
        if torch is not None and isinstance(dtype, torch.dtype):
            name = str(dtype).replace("torch.", "", 1)
        elif np is not None:
            try:
                name = np.dtype(dtype).name
            except TypeError:
                pass
    if name not in _DTYPE_BYTES:
        raise ValueError(f"dtype {dtype!r} is not supported (float16, bfloat16, float32, as a "
                         "string, numpy dtype or torch dtype)")
    return _DTYPE_BYTES[name]


def _free_memory_bytes():
    """torch.cuda.mem_get_info()[0] of the current device, or a RuntimeError when no CUDA device
    is usable through torch (the rule of python/README.md's "Errors"): never a guess."""
    try:
        import torch
    except ImportError:
        torch = None
    if torch is None or not torch.cuda.is_available():
        why = "torch is not installed" if torch is None else "torch sees no CUDA device"
        raise RuntimeError(
            "free_memory_bytes=None needs torch with a visible CUDA device (torch.cuda."
            f"mem_get_info of the current device), but {why}: pass free_memory_bytes explicitly"
        )
    return int(torch.cuda.mem_get_info()[0])


def _check_estimate_range(seqlen, batch, heads, kv_heads, head_dim, dtype_bytes, block_size):
    """The library computes the estimates in int64; a request whose bytes do not fit there is
    refused here (its other checks are the library's, so only well-formed requests are summed)."""
    if min(seqlen, batch, heads, head_dim, block_size) <= 0 or kv_heads < 0:
        return
    hkv = kv_heads or heads
    io = (batch * seqlen * (2 * heads + 2 * hkv) * head_dim * dtype_bytes
          + batch * heads * seqlen * 4)
    n_blocks = -(-seqlen // block_size)
    total = io + heads * n_blocks * n_blocks
    if total > _INT64[1]:
        raise ValueError(f"the request's memory estimate, {total} bytes (batch {batch}, seqlen "
                         f"{seqlen}, heads {heads}, head_dim {head_dim}), exceeds int64")


def choose_sparsity(seqlen, heads, head_dim, *, batch=1, kv_heads=None, dtype="bfloat16",
                    free_memory_bytes=None, window_hint=None, global_tokens=0, causal=True,
                    max_dense_seqlen=32768, block_size=128):
    """The `auto` sparsity policy's recommendation for one self-attention call (Sq = Sk = seqlen)
    of q (batch, seqlen, heads, head_dim) and k/v (batch, seqlen, kv_heads, head_dim).

    Opt-in: nothing in gpu_attention calls this or applies the result on its own. The rule
    (gpuattn/sparsity.h): every mode keeps Q, K, V, O and the LSE (the kernels are O(N) in memory);
    block-sparse adds its layout, one byte per (head, query block, key block). seqlen <=
    max_dense_seqlen (the work budget), or a window_hint reaching across the whole sequence: dense.
    Longer with a window_hint: sliding_window (hint, 0) causal or (hint, hint), plus global_tokens.
    Longer without one: block_sparse with block_size blocks, at most max_dense_seqlen / seqlen of
    them on, when the layout fits next to Q, K, V, O; else a sliding window with the same work
    budget (max_dense_seqlen / 2 - 1 keys left causal, max_dense_seqlen / 2 each side non-causal).
    When not even Q, K, V, O fit, that choice stands with fits=False.

    dtype: q/k/v's dtype, a string ('float16', 'bfloat16', 'float32'), numpy dtype or torch dtype.
    kv_heads: None for heads (MHA), else a positive int that divides heads (0 or a negative value is
    a ValueError). causal: a bool (Python's or numpy's); anything else, 0 and 1 too, is a TypeError.
    free_memory_bytes: the memory the call may use; None takes torch.cuda.mem_get_info()[0] of the
    current device, and raises RuntimeError when torch or a CUDA device is missing (pass it
    explicitly then). window_hint: keys left of each query the model tolerates, or None.
    block_size: a multiple of 16.

    Returns a frozen SparsityChoice (mode, fits, window_size, global_tokens, block_size,
    max_block_density, the dense / sliding_window / block_sparse estimates, reason, causal,
    seqlen);
    choice.sparse_attn_kwargs() gives sparse_attn_func's arguments for the dense and window modes.
    Raises ValueError naming a bad value (the library's checks), TypeError for a non-int (for
    causal, a non-bool).
    """
    seqlen = _int(seqlen, "seqlen", _INT64)
    heads = _int(heads, "heads", _INT32)
    head_dim = _int(head_dim, "head_dim", _INT32)
    batch = _int(batch, "batch", _INT32)
    kv_heads = _int(kv_heads, "kv_heads", _INT32, none_ok=True)
    window_hint = _int(window_hint, "window_hint", _INT32, none_ok=True)
    global_tokens = _int(global_tokens, "global_tokens", _INT32)
    max_dense_seqlen = _int(max_dense_seqlen, "max_dense_seqlen", _INT64)
    block_size = _int(block_size, "block_size", _INT32)
    if kv_heads is not None and kv_heads <= 0:
        raise ValueError(f"kv_heads {kv_heads} must be positive, or None for heads (MHA)")
    np = sys.modules.get("numpy")
    if not isinstance(causal, bool) and not (np is not None and isinstance(causal, np.bool_)):
        raise TypeError(f"causal={causal!r} must be a bool, got {type(causal).__name__}")
    causal = bool(causal)
    dtype_bytes = _dtype_bytes(dtype)
    if free_memory_bytes is None:
        free_memory_bytes = _free_memory_bytes()
    free_memory_bytes = _int(free_memory_bytes, "free_memory_bytes", _INT64)
    kv_heads = 0 if kv_heads is None else kv_heads
    _check_estimate_range(seqlen, batch, heads, kv_heads, head_dim, dtype_bytes, block_size)

    c = _C.choose_sparsity(seqlen, batch, heads, kv_heads, head_dim, dtype_bytes,
                           free_memory_bytes, window_hint, global_tokens, causal,
                           max_dense_seqlen, block_size)
    window = c["mode"] == "sliding_window"
    blocks = c["mode"] == "block_sparse"
    return SparsityChoice(
        mode=c["mode"],
        fits=c["fits"],
        window_size=(c["window_left"], c["window_right"]) if window else None,
        global_tokens=c["global_tokens"],
        block_size=c["block_size"] if blocks else None,
        max_block_density=c["max_block_density"] if blocks else None,
        dense=SparsityEstimate(**c["dense"]),
        sliding_window=SparsityEstimate(**c["sliding_window"]),
        block_sparse=SparsityEstimate(**c["block_sparse"]),
        reason=c["reason"],
        causal=causal,
        seqlen=seqlen,
    )
