"""gpu_attention-specific sparse attention: a sliding window plus global tokens (Longformer style).

These functions are not in flash-attn. They take the same layouts as flash_attn_func /
flash_attn_varlen_func and add `global_tokens` and `global_stride` to flash-attn's window_size; see
sparse_attn_func for the exact visibility rule (gpuattn::MaskSpec in include/gpuattn/attention.h).
"""

from .flash_attn_interface import (
    _dense_lengths,
    _forward,
    _framework,
    _global_arg,
    _int_arg,
    _resolve_mask,
    _softmax_scale,
)


def _mask(window_size, causal, seqlen_q, seqlen_k, global_tokens, global_stride):
    global_tokens = _global_arg(global_tokens, "global_tokens")
    global_stride = _global_arg(global_stride, "global_stride")
    return _resolve_mask(window_size, causal, seqlen_q, seqlen_k, global_tokens, global_stride)


def sparse_attn_func(q, k, v, *, softmax_scale=None, causal=False, window_size=(-1, -1),
                     global_tokens=0, global_stride=0, return_attn_probs=False):
    """Attention with a sliding window and global tokens. q (batch, seqlen_q, nheads, headdim),
    k/v (batch, seqlen_k, nheads_k, headdim), nheads % nheads_k == 0 (GQA/MQA); softmax_scale
    defaults to 1/sqrt(headdim).

    Visibility. Positions are bottom-right aligned, as flash-attn's causal mask: with Sq queries and
    Sk keys, query row i stands at key position p = i + Sk - Sq (p = i when Sq == Sk; with Sq > Sk
    the first rows have p < 0). Write window_size = (left, right). Query i sees key j
    (0 <= j < Sk) exactly when both hold:

      1. causal is False, or j <= p (causal is a hard limit that nothing widens);
      2. j lies in the window -- (left == -1 or j >= p - left) and (right == -1 or j <= p + right)
         -- or j is a global position, or p is a global position.

    A position t >= 0 is global when t < global_tokens, or global_stride > 0 and t is a multiple of
    global_stride (0, global_stride, 2 * global_stride, ...; so position 0 is always global when
    global_stride > 0). A global key is seen by every query (up to its causal limit); a global query
    sees every key (up to its causal limit). Global tokens only widen a window: with window_size
    (-1, -1) every key is already in the window and they change nothing. With causal=True the right
    window has no effect (flash-attn: right = 0). window_size (0, 0) is the query's own position
    only; windows longer than the sequence and global_tokens > seqlen are valid. A query row that
    sees no key gets out = 0 and lse = -inf.

    window_size sides must be ints >= -1, global_tokens and global_stride ints >= 0 (0: off);
    anything else raises ValueError / TypeError naming the argument.

    Returns out (batch, seqlen_q, nheads, headdim), or with return_attn_probs=True
    (out, softmax_lse float32 (batch, nheads, seqlen_q), None) as flash_attn_func does.
    """
    scale = _softmax_scale(softmax_scale)
    _framework(q, "q")
    mask = _mask(window_size, causal, *_dense_lengths(q, k), global_tokens, global_stride)
    out, lse = _forward(q, k, v, softmax_scale=scale, mask=mask, want_lse=return_attn_probs)
    return (out, lse, None) if return_attn_probs else out


def sparse_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, *,
                            softmax_scale=None, causal=False, window_size=(-1, -1),
                            global_tokens=0, global_stride=0, return_attn_probs=False):
    """sparse_attn_func over packed variable-length sequences, with flash_attn_varlen_func's
    layout: q (total_q, nheads, headdim), k/v (total_k, nheads_k, headdim), cu_seqlens_q/k int32
    (batch + 1,) prefix sums on q's device, max_seqlen_q/k bounding every length.

    The visibility rule is sparse_attn_func's, applied to each sequence on its own: Sq and Sk are
    that sequence's lengths, positions (and so global positions) count from its first token.

    Returns out (total_q, nheads, headdim), or with return_attn_probs=True
    (out, softmax_lse float32 (nheads, total_q), None).
    """
    scale = _softmax_scale(softmax_scale)
    if cu_seqlens_q is None or cu_seqlens_k is None:
        raise ValueError("cu_seqlens_q and cu_seqlens_k are required (int32 arrays of batch + 1)")
    max_seqlen_q = _int_arg(max_seqlen_q, "max_seqlen_q")
    max_seqlen_k = _int_arg(max_seqlen_k, "max_seqlen_k")
    _framework(q, "q")
    mask = _mask(window_size, causal, max_seqlen_q, max_seqlen_k, global_tokens, global_stride)
    out, lse = _forward(q, k, v, cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k,
                        max_seqlen_q=max_seqlen_q, max_seqlen_k=max_seqlen_k, softmax_scale=scale,
                        mask=mask, want_lse=return_attn_probs)
    return (out, lse, None) if return_attn_probs else out
