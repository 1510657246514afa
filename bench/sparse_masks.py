"""The sparse masks of bench/sparse_bench.py and bench/long_context.py, in one place: the rule of
src/core/mask.h for self-attention (Sq == Sk, so a query row's position is its index), exact
counts of visible (query, key) pairs per row and per block (the FLOPs we report count only those),
random block-sparse layouts, the key set of one row (for the sampled fp64 reference) and the
FlexAttention BlockMask and mask_mod that express the same rule.

Importing this module needs numpy only; the functions that build torch objects import torch
themselves, so tests/python/test_bench_scripts.py checks the pure logic on a machine without it.

The rule (src/core/mask.h, with p = i): query i sees key j iff
    (not causal or j <= i) and (j in [i - left, i + right] or j < G or i < G)
    and (no layout or layout[h, i // block_q, j // block_k] != 0),
with a window side of -1 unbounded and G the number of global tokens.
"""

import dataclasses
import math

import numpy as np


@dataclasses.dataclass(frozen=True)
class MaskRule:
    """One sparse mask of gpu_attention.sparse_attn_func, for self-attention (Sq == Sk)."""

    causal: bool = False
    left: int = -1  # window_size[0]; -1: unbounded
    right: int = -1  # window_size[1]; -1: unbounded
    global_tokens: int = 0
    # Block layout [heads or 1, ceil(S / block_q), ceil(S / block_k)] of 0/1 (numpy), or None.
    layout: object = None
    block_q: int = 128
    block_k: int = 128

    def __post_init__(self):
        for name in ("left", "right"):
            if getattr(self, name) < -1:
                raise ValueError(f"MaskRule.{name} must be >= -1, got {getattr(self, name)}")
        if self.global_tokens < 0:
            raise ValueError(f"MaskRule.global_tokens must be >= 0, got {self.global_tokens}")
        if self.layout is not None and np.asarray(self.layout).ndim != 3:
            raise ValueError("MaskRule.layout must be [heads or 1, blocks_q, blocks_k]")

    @property
    def has_window(self):
        return self.left >= 0 or self.right >= 0

    def layout_heads(self):
        return 0 if self.layout is None else int(np.asarray(self.layout).shape[0])

    def check_shape(self, seqlen, heads):
        """Raises ValueError when the layout does not cover (heads, seqlen)."""
        if self.layout is None:
            return
        want = (math.ceil(seqlen / self.block_q), math.ceil(seqlen / self.block_k))
        shape = tuple(np.asarray(self.layout).shape)
        if shape[1:] != want or shape[0] not in (1, heads):
            raise ValueError(f"layout shape {shape} does not fit S={seqlen} H={heads} with blocks "
                             f"({self.block_q}, {self.block_k}): want (1 or {heads}, {want[0]}, "
                             f"{want[1]})")

    def sparse_attn_kwargs(self, layout_tensor=None):
        """Keyword arguments of gpu_attention.sparse_attn_func for this rule; layout_tensor is the
        layout on q's device (the function wants it there)."""
        kw = dict(causal=self.causal, window_size=(self.left, self.right),
                  global_tokens=self.global_tokens)
        if self.layout is not None:
            if layout_tensor is None:
                raise ValueError("a rule with a layout needs the layout on q's device")
            kw.update(block_mask=layout_tensor, block_size=(self.block_q, self.block_k))
        return kw

    def describe(self):
        parts = ["causal" if self.causal else "non-causal"]
        if self.has_window:
            parts.append(f"window_size=({self.left}, {self.right})")
        if self.global_tokens:
            parts.append(f"global_tokens={self.global_tokens}")
        if self.layout is not None:
            lay = np.asarray(self.layout)
            parts.append(f"block layout {lay.shape[0]}x{lay.shape[1]}x{lay.shape[2]} of "
                         f"{self.block_q}x{self.block_k}, {100.0 * (1 - lay.mean()):.1f}% of "
                         "blocks off")
        return ", ".join(parts)

    def mask_mod(self, layout=None):
        """FlexAttention mask_mod (b, h, q_idx, kv_idx) -> bool of this rule. Written with
        comparisons and & | only, so it also evaluates on numpy index arrays (the tests compare it
        with the reference's rule). `layout` is the layout as an indexable array of the caller's
        framework (a torch tensor for Flex); None uses self.layout."""
        causal, left, right, g = self.causal, self.left, self.right, self.global_tokens
        bq, bk = self.block_q, self.block_k
        if self.layout is not None and layout is None:
            layout = self.layout
        per_head = self.layout is not None and self.layout_heads() > 1
        if self.layout is not None and not per_head:
            layout = layout[0]

        def mod(b, h, q_idx, kv_idx):
            vis = None
            if left >= 0:
                vis = kv_idx >= q_idx - left
            if right >= 0:
                term = kv_idx <= q_idx + right
                vis = term if vis is None else vis & term
            if vis is not None and g > 0:  # globals widen a window; without one they change nothing
                vis = vis | (kv_idx < g) | (q_idx < g)
            if causal:
                term = kv_idx <= q_idx
                vis = term if vis is None else vis & term
            if layout is not None:
                on = (layout[h, q_idx // bq, kv_idx // bk] if per_head
                      else layout[q_idx // bq, kv_idx // bk]) != 0
                vis = on if vis is None else vis & on
            if vis is None:
                vis = kv_idx >= 0  # every key, as an array of the inputs' shape
            return vis

        return mod


# ---- exact counts (the rule without its layout: intervals) --------------------------------------


def _intervals(rule, seqlen, rows, xp):
    """The keys row i sees without the layout are A u B with A = [wa, wb) (window and causal) and
    B = [0, gb) (global keys, or every key for a global row), both clipped to the causal limit.
    rows: an integer array of xp (numpy or torch) of any shape."""
    s = seqlen
    ce = rows + 1 if rule.causal else rows * 0 + s  # causal end, exclusive
    wa = rows * 0 if rule.left < 0 else xp.clip(rows - rule.left, 0, None)
    wb = ce if rule.right < 0 else xp.minimum(xp.clip(rows + rule.right + 1, None, s), ce)
    if rule.has_window and rule.global_tokens > 0:
        gb = xp.where(rows < rule.global_tokens, ce, xp.clip(ce, None, rule.global_tokens))
    else:
        gb = rows * 0  # no window: A already holds every key up to the causal limit
    return wa, wb, gb


def _overlap(x0, x1, c0, c1, xp):
    return xp.clip(xp.minimum(x1, c1) - xp.maximum(x0, c0), 0, None)


def row_counts(rule, seqlen, rows, xp=np):
    """Number of keys each row in `rows` sees, without the layout."""
    wa, wb, gb = _intervals(rule, seqlen, rows, xp)
    a = xp.clip(wb - wa, 0, None)
    both = xp.clip(xp.minimum(wb, gb) - wa, 0, None)  # A n B = [wa, min(wb, gb))
    return a + gb - both


def block_counts(rule, seqlen, xp=np, device=None, rows_per_chunk=8192):
    """[ceil(S / block_q), ceil(S / block_k)] int64: visible (query, key) pairs of each block,
    without the layout (multiply by the layout for the layout's rule). Exact, O(S * S / block_k)
    work in chunks of rows: fine on a GPU for S = 128k (xp=torch, device='cuda'), or on the CPU
    for test sizes."""
    bq, bk, s = rule.block_q, rule.block_k, seqlen
    nbq, nbk = math.ceil(s / bq), math.ceil(s / bk)

    def arange(n):
        return xp.arange(n) if device is None else xp.arange(n, device=device)

    c0 = (arange(nbk) * bk)[None, :]
    c1 = xp.clip(c0 + bk, None, s)
    out = []
    chunk_blocks = max(1, rows_per_chunk // bq)
    for r0 in range(0, nbq, chunk_blocks):
        r1 = min(nbq, r0 + chunk_blocks)
        rows = (arange((r1 - r0) * bq) + r0 * bq)[:, None]
        wa, wb, gb = _intervals(rule, s, rows, xp)
        per_row = (_overlap(wa, wb, c0, c1, xp) + _overlap(rows * 0, gb, c0, c1, xp)
                   - _overlap(wa, xp.minimum(wb, gb), c0, c1, xp))
        per_row = per_row * (rows < s)  # padding rows of a partial last block count nothing
        out.append(per_row.reshape(r1 - r0, bq, nbk).sum(1))
    return out[0] if len(out) == 1 else (xp.concatenate(out) if xp is np else xp.cat(out))


def block_areas(rule, seqlen):
    """[nbq, nbk] number of elements of each block (the last row/column may be partial)."""
    hq = np.minimum(np.arange(math.ceil(seqlen / rule.block_q)) * rule.block_q + rule.block_q,
                    seqlen) - np.arange(math.ceil(seqlen / rule.block_q)) * rule.block_q
    hk = np.minimum(np.arange(math.ceil(seqlen / rule.block_k)) * rule.block_k + rule.block_k,
                    seqlen) - np.arange(math.ceil(seqlen / rule.block_k)) * rule.block_k
    return hq[:, None] * hk[None, :]


def visible_pairs(rule, seqlen, heads):
    """Visible (query, key) pairs summed over `heads` heads (exact; numpy on the CPU; use
    visible_pairs_from_counts with block_counts on the GPU for long sequences with a layout)."""
    if rule.layout is None:
        return heads * int(row_counts(rule, seqlen, np.arange(seqlen, dtype=np.int64)).sum())
    return visible_pairs_from_counts(rule, block_counts(rule, seqlen), heads)


def visible_pairs_from_counts(rule, counts, heads):
    """From block_counts (numpy or torch): the counts of the blocks that are on, summed over
    `heads` heads."""
    if rule.layout is None:
        return heads * int(counts.sum())
    lay = np.asarray(rule.layout) != 0
    c = counts if isinstance(counts, np.ndarray) else counts.cpu().numpy()
    per_head = (lay * c[None]).reshape(lay.shape[0], -1).sum(1)
    return int(per_head.sum()) if lay.shape[0] == heads else heads * int(per_head[0])


def attention_flops(visible, head_dim, batch=1):
    """2 GEMMs (QK^T and PV), 2 FLOPs per multiply-add, over the visible pairs only."""
    return 4.0 * batch * head_dim * visible


# ---- layouts and sampled rows --------------------------------------------------------------------


def random_block_layout(heads, blocks_q, blocks_k, sparsity, seed):
    """[heads, blocks_q, blocks_k] uint8: exactly round((1 - sparsity) * blocks_q * blocks_k)
    blocks on per head (at least the diagonal), the diagonal always on so that no query row sees
    an empty set, the others chosen uniformly at random (numpy, fixed seed: the same layout on any
    machine)."""
    if not 0.0 <= sparsity < 1.0:
        raise ValueError(f"sparsity must be in [0, 1), got {sparsity}")
    rng = np.random.default_rng(seed)
    total = blocks_q * blocks_k
    diag = min(blocks_q, blocks_k)
    want = max(diag, int(round((1.0 - sparsity) * total)))
    layout = np.zeros((heads, blocks_q, blocks_k), dtype=np.uint8)
    idx = np.arange(diag)
    off_diag = np.flatnonzero(~np.eye(blocks_q, blocks_k, dtype=bool).ravel())
    for h in range(heads):
        layout[h, idx, idx] = 1
        pick = rng.choice(off_diag, size=want - diag, replace=False)
        layout[h].reshape(-1)[pick] = 1
    return layout


def row_keys(rule, seqlen, row, head=0):
    """Sorted int64 keys that `row` of `head` sees (numpy): the key set of the sampled fp64
    reference, built from the rule itself."""
    wa, wb, gb = (int(x) for x in _intervals(rule, seqlen, np.array(row, dtype=np.int64), np))
    keys = np.union1d(np.arange(wa, max(wa, wb)), np.arange(gb))
    if rule.layout is not None:
        lay = np.asarray(rule.layout)
        on = lay[head if lay.shape[0] > 1 else 0, row // rule.block_q] != 0
        keys = keys[on[keys // rule.block_k]]
    return keys.astype(np.int64)


def sample_rows(rule, seqlen, count, seed):
    """`count` random rows plus the rows where the rule changes: the first and last, the last
    global row and the first after it, the first rows whose window is full, the middle."""
    rng = np.random.default_rng(seed)
    special = {0, 1, seqlen // 2, seqlen - 2, seqlen - 1}
    g = rule.global_tokens
    if g:
        special |= {g - 1, g}
    for w in (rule.left, rule.right):
        if w >= 0:
            special |= {w, w + 1, w + g}
    rows = set(int(r) for r in rng.choice(seqlen, size=min(count, seqlen), replace=False))
    return sorted(r for r in rows | special if 0 <= r < seqlen)


# ---- FlexAttention -------------------------------------------------------------------------------


def flex_block_mask(rule, seqlen, heads, device, counts=None):
    """The FlexAttention BlockMask of `rule` (blocks block_q x block_k), built from the exact block
    counts: a block is full (Flex skips the mask_mod there) when every element is visible, partial
    when some are, absent when none are. No S x S tensor is ever made (O((S / 128)^2) memory).
    Returns (block_mask, counts) with counts the [nbq, nbk] torch tensor of block_counts."""
    import torch
    from torch.nn.attention.flex_attention import BlockMask

    rule.check_shape(seqlen, heads)
    if counts is None:
        counts = block_counts(rule, seqlen, xp=torch, device=device)
    area = torch.as_tensor(block_areas(rule, seqlen), device=device)
    full_size = rule.block_q * rule.block_k
    if rule.layout is None:
        c = counts[None]  # one mask shared by every head
        layout_t = None
    else:
        layout_t = torch.as_tensor(np.asarray(rule.layout), device=device)
        c = counts[None] * (layout_t != 0)
    # A block of partial size (the last row or column when S % 128 != 0) is never called full.
    full = (c == area) & (area == full_size)
    partial = (c > 0) & ~full

    def ordered(dense):  # [H, nbq, nbk] bool -> (num [1, H, nbq], indices [1, H, nbq, nbk])
        d = dense.to(torch.int32)
        num = d.sum(-1).to(torch.int32)
        idx = torch.argsort(d, dim=-1, descending=True, stable=True).to(torch.int32)
        return num[None].contiguous(), idx[None].contiguous()

    kv_num, kv_idx = ordered(partial)
    full_num, full_idx = ordered(full)
    block_mask = BlockMask.from_kv_blocks(
        kv_num, kv_idx, full_kv_num_blocks=full_num, full_kv_indices=full_idx,
        BLOCK_SIZE=(rule.block_q, rule.block_k), mask_mod=rule.mask_mod(layout_t),
        seq_lengths=(seqlen, seqlen))
    return block_mask, counts
