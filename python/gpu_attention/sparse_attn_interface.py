"""gpu_attention-specific sparse attention: a sliding window plus global tokens (Longformer style)
and user block-sparse layouts.

These functions are not in flash-attn. They take the same layouts as flash_attn_func /
flash_attn_varlen_func and add `global_tokens`, `global_stride` and `block_mask` / `block_size` to
flash-attn's window_size; see sparse_attn_func for the exact visibility rule (gpuattn::MaskSpec in
include/gpuattn/attention.h).
"""

import operator
import sys

from .flash_attn_interface import (
    _INT32_MAX,
    _INT32_MIN,
    _dense_lengths,
    _forward,
    _framework,
    _global_arg,
    _int_arg,
    _resolve_mask,
    _softmax_scale,
)


def _block_size_pair(block_size):
    """block_size as (block_q, block_k): an int (both) or a pair of ints. Positivity and the
    multiple-of-16 rule are the library's checks; here only the form and the int32 range."""
    try:
        if isinstance(block_size, bool):
            raise TypeError
        if isinstance(block_size, (list, tuple)):
            bq, bk = block_size
        else:
            bq = bk = block_size
        if isinstance(bq, bool) or isinstance(bk, bool):
            raise TypeError
        bq, bk = operator.index(bq), operator.index(bk)
    except (TypeError, ValueError):
        raise ValueError(
            f"block_size must be an int or a pair of ints (block_q, block_k), got {block_size!r}"
        ) from None
    for side, value in (("block_q", bq), ("block_k", bk)):
        if not 1 <= value <= _INT32_MAX:
            raise ValueError(
                f"block_size={(bq, bk)}: {side} {value} must be in [1, 2^31 - 1] (a multiple of "
                "16; 64 and 128 are the usual sizes)"
            )
    return bq, bk


def _block_mask_arg(block_mask, q):
    """A numpy array or torch tensor of uint8 or bool. A bool mask is reinterpreted as uint8 through
    a view (bool stores 0/1 bytes): no copy, and the caller's array is left as it is. A numpy mask
    with CUDA torch tensors is copied to q's device (numpy has no device, so that is the only thing
    it can mean; torch tensors must already be on q's device, as torch's own operators require).
    Every other check (dtype, rank, shape against the lengths and block sizes, device) is the
    library's: a numpy mask of another dtype stays on the host, so that the library names the
    dtype."""
    fw = _framework(block_mask, "block_mask")
    if fw == "torch":
        torch = sys.modules["torch"]
        if block_mask.dtype == torch.bool:
            block_mask = block_mask.view(torch.uint8)
        return block_mask
    np = sys.modules["numpy"]
    if block_mask.dtype == bool:
        block_mask = block_mask.view(np.uint8)
    if any(s < 0 for s in block_mask.strides):
        # The library takes strides >= 0 (0: broadcast); a reversed view is read through a copy.
        block_mask = np.array(block_mask, order="C")
    torch = sys.modules.get("torch")
    if (torch is not None and isinstance(q, torch.Tensor) and q.is_cuda
            and block_mask.dtype == np.uint8):
        # A fresh writable, C-contiguous host copy (any view will do: broadcast, read-only,
        # negative strides), then one host-to-device copy on the current stream of q's device,
        # the stream the call runs on.
        block_mask = torch.from_numpy(np.array(block_mask, order="C")).to(q.device)
    return block_mask


def _mask(q, window_size, causal, seqlen_q, seqlen_k, global_tokens, global_stride, block_mask,
          block_size):
    global_tokens = _global_arg(global_tokens, "global_tokens")
    global_stride = _global_arg(global_stride, "global_stride")
    mask = _resolve_mask(window_size, causal, seqlen_q, seqlen_k, global_tokens, global_stride)
    if block_mask is not None:  # block_size is ignored without one, as documented
        block_q, block_k = _block_size_pair(block_size)
        # The block layout ANDs with everything else, so _resolve_mask's reductions (a window
        # reaching past every key is no window, ...) stay exact with it.
        mask.update(block_layout=_block_mask_arg(block_mask, q), block_q=block_q, block_k=block_k)
    return mask


def sparse_attn_func(q, k, v, *, softmax_scale=None, causal=False, window_size=(-1, -1),
                     global_tokens=0, global_stride=0, block_mask=None, block_size=(128, 128),
                     return_attn_probs=False):
    """Attention with a sliding window, global tokens and a block-sparse layout.
    q (batch, seqlen_q, nheads, headdim),
    k/v (batch, seqlen_k, nheads_k, headdim), nheads % nheads_k == 0 (GQA/MQA); softmax_scale
    defaults to 1/sqrt(headdim).

    Visibility. Positions are bottom-right aligned, as flash-attn's causal mask: with Sq queries and
    Sk keys, query row i stands at key position p = i + Sk - Sq (p = i when Sq == Sk; with Sq > Sk
    the first rows have p < 0). Write window_size = (left, right). Query i sees key j
    (0 <= j < Sk) exactly when all three hold:

      1. causal is False, or j <= p (causal is a hard limit that nothing widens);
      2. j lies in the window -- (left == -1 or j >= p - left) and (right == -1 or j <= p + right)
         -- or j is a global position, or p is a global position;
      3. block_mask is None, or block_mask[h, i // block_q, j // block_k] is nonzero (True), with
         h the query head (0 for a shared layout) and (block_q, block_k) = block_size.

    A position t >= 0 is global when t < global_tokens, or global_stride > 0 and t is a multiple of
    global_stride (0, global_stride, 2 * global_stride, ...; so position 0 is always global when
    global_stride > 0). A global key is seen by every query (up to its causal limit); a global query
    sees every key (up to its causal limit). Global tokens only widen a window: with window_size
    (-1, -1) every key is already in the window and they change nothing. With causal=True the right
    window has no effect (flash-attn: right = 0). window_size (0, 0) is the query's own position
    only; windows longer than the sequence and global_tokens > seqlen are valid. A query row that
    sees no key gets out = 0 and lse = -inf.

    Block-sparse layout. block_mask is a uint8 or bool numpy array / torch tensor of shape
    (nheads or 1, ceil(seqlen_q / block_q), ceil(seqlen_k / block_k)): one layout per query head,
    or one shared by every head. A torch block_mask must be on q's device; a numpy block_mask
    with CUDA tensors is copied to q's device on every call (a small host-to-device copy on the
    current stream: for repeated calls, keep the layout as a torch tensor on q's device). Entry
    (h, r, c) on: query rows [r * block_q, (r + 1) * block_q) of head h may see keys
    [c * block_k, (c + 1) * block_k) (blocks count query rows i, not the bottom-right positions
    p); off: they see none of them.
    The layout ANDs with rules 1 and 2: a global token does not reach into a block that is off.
    block_size is (block_q, block_k) or one int for both (default (128, 128)), positive multiples
    of 16 (64 and 128 are the usual ones); a block need not divide the sequence length (the last
    block is partial). The layout may have any strides (a broadcast view is fine); a bool mask is
    reinterpreted as uint8 without a copy and the caller's array is never modified. block_size
    is ignored when block_mask is None. Both backends skip the key tiles that no query row of a
    block sees, so the work falls with the share of blocks that are off. On Hopper at head dims
    64 and 128, a block_mask alone (no causal, window or global tokens) with both block sizes
    multiples of 128 runs on the dense kernel: the fastest block sizes there.

    window_size sides must be ints >= -1, global_tokens and global_stride ints >= 0 (0: off);
    anything else raises ValueError / TypeError naming the argument. A block_mask that is not a
    numpy array or torch tensor raises TypeError naming block_mask; a malformed block_size
    ValueError naming block_size. The library validates the layout itself and raises ValueError
    naming mask.block_sparse.layout (its name for block_mask) for a wrong dtype (anything but
    uint8/bool), rank or shape (the message gives the expected shape) or a torch tensor on
    another device than q's, ValueError for a block size <= 0, NotImplementedError for a block
    size that is not a multiple of 16.

    Returns out (batch, seqlen_q, nheads, headdim), or with return_attn_probs=True
    (out, softmax_lse float32 (batch, nheads, seqlen_q), None) as flash_attn_func does.
    """
    scale = _softmax_scale(softmax_scale)
    _framework(q, "q")
    mask = _mask(q, window_size, causal, *_dense_lengths(q, k), global_tokens, global_stride,
                 block_mask, block_size)
    out, lse = _forward(q, k, v, softmax_scale=scale, mask=mask, want_lse=return_attn_probs)
    return (out, lse, None) if return_attn_probs else out


def sparse_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, *,
                            softmax_scale=None, causal=False, window_size=(-1, -1),
                            global_tokens=0, global_stride=0, block_mask=None,
                            block_size=(128, 128), return_attn_probs=False):
    """sparse_attn_func over packed variable-length sequences, with flash_attn_varlen_func's
    layout: q (total_q, nheads, headdim), k/v (total_k, nheads_k, headdim), cu_seqlens_q/k int32
    (batch + 1,) prefix sums on q's device, max_seqlen_q/k bounding every length.

    The visibility rule is sparse_attn_func's, applied to each sequence on its own: Sq and Sk are
    that sequence's lengths, positions (and so global positions) count from its first token.
    block_mask has shape (nheads or 1, ceil(max_seqlen_q / block_q), ceil(max_seqlen_k /
    block_k)) and the same layout applies to every sequence, block 0 at its first query row and
    first key; a sequence uses the blocks its lengths cover.

    Returns out (total_q, nheads, headdim), or with return_attn_probs=True
    (out, softmax_lse float32 (nheads, total_q), None).
    """
    scale = _softmax_scale(softmax_scale)
    if cu_seqlens_q is None or cu_seqlens_k is None:
        raise ValueError("cu_seqlens_q and cu_seqlens_k are required (int32 arrays of batch + 1)")
    # Any int32 crosses: the library names a length that is not positive.
    max_seqlen_q = _int_arg(max_seqlen_q, "max_seqlen_q", lo=_INT32_MIN)
    max_seqlen_k = _int_arg(max_seqlen_k, "max_seqlen_k", lo=_INT32_MIN)
    _framework(q, "q")
    mask = _mask(q, window_size, causal, max_seqlen_q, max_seqlen_k, global_tokens, global_stride,
                 block_mask, block_size)
    out, lse = _forward(q, k, v, cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k,
                        max_seqlen_q=max_seqlen_q, max_seqlen_k=max_seqlen_k, softmax_scale=scale,
                        mask=mask, want_lse=return_attn_probs)
    return (out, lse, None) if return_attn_probs else out
