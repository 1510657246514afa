"""The `auto` sparsity policy through Python (gpu_attention.choose_sparsity over
gpuattn::choose_sparsity): the C++ rules of tests/core/test_sparsity.cpp seen from Python, dtype
handling, errors, free_memory_bytes=None, and SparsityChoice.sparse_attn_kwargs() run through
sparse_attn_func on the CPU backend.

Run with the built package on the path:  PYTHONPATH=<build>/python python3 -m pytest tests/python
"""

import dataclasses
import math
import sys
import types

import numpy as np
import pytest

import gpu_attention as ga
from reference import assert_close, needs_torch, qkv, ref_dense, rng_for, torch, visibility

GiB = 1 << 30
MiB = 1 << 20


# B1 H16 D128 bf16, causal: the long-context shape of issue 5 (as in test_sparsity.cpp).
def choose(seqlen, free=80 * GiB, **kwargs):
    return ga.choose_sparsity(seqlen, 16, 128, free_memory_bytes=free, **kwargs)


def io_bytes(seqlen, heads=16, kv_heads=16, head_dim=128, dtype_bytes=2, batch=1):
    """Q, K, V, O and the fp32 LSE."""
    return (batch * seqlen * (2 * heads + 2 * kv_heads) * head_dim * dtype_bytes
            + batch * heads * seqlen * 4)


def assert_reason(choice, *needles):
    for n in needles:
        assert n in choice.reason, f"reason {choice.reason!r} lacks {n!r}"


# ---- the rules ---------------------------------------------------------------------------------


@pytest.mark.parametrize("hint", [None, 1024])
def test_short_sequence_is_dense(hint):
    c = choose(4096, window_hint=hint)
    assert c.mode == "dense", c.reason
    assert c.fits
    assert c.window_size is None and c.block_size is None and c.max_block_density is None
    assert c.dense.bytes == io_bytes(4096)
    assert c.dense.visible_pairs == 16.0 * 4096 * 4097 / 2
    assert_reason(c, "dense", "S = 4096", "max_dense_seqlen 32768", "64.2 MiB", "80.00 GiB free")
    assert c.sparse_attn_kwargs() == {"causal": True, "window_size": (-1, -1), "global_tokens": 0}


@pytest.mark.parametrize("seqlen", [131072, 524288])
def test_long_sequence_with_window_hint_is_sliding_window(seqlen):
    c = choose(seqlen, window_hint=4096, global_tokens=128)
    assert c.mode == "sliding_window", c.reason
    assert c.fits
    assert c.window_size == (4096, 0) and c.global_tokens == 128
    assert c.sliding_window.bytes == io_bytes(seqlen)
    assert c.sliding_window.visible_pairs <= 16.0 * seqlen * (4097 + 128)
    assert c.sliding_window.visible_pairs * 10 < c.dense.visible_pairs
    assert_reason(c, "sliding_window (4096, 0) + 128 global tokens", f"S = {seqlen}",
                  "window hint")
    assert c.sparse_attn_kwargs() == {"causal": True, "window_size": (4096, 0),
                                      "global_tokens": 128}


def test_non_causal_window_reaches_both_ways():
    c = choose(131072, causal=False, window_hint=512)
    assert c.mode == "sliding_window"
    assert c.window_size == (512, 512)
    assert c.sparse_attn_kwargs() == {"causal": False, "window_size": (512, 512),
                                      "global_tokens": 0}


@pytest.mark.parametrize("seqlen, density, layout",
                         [(131072, 0.25, 16 * 1024 * 1024), (524288, 0.0625, 256 * MiB)])
def test_long_sequence_without_hint_is_block_sparse(seqlen, density, layout):
    c = choose(seqlen)
    assert c.mode == "block_sparse", c.reason
    assert c.fits
    assert c.block_size == 128 and c.max_block_density == density
    assert c.window_size is None
    assert c.block_sparse.bytes == io_bytes(seqlen) + layout
    assert c.block_sparse.visible_pairs == density * c.dense.visible_pairs
    assert_reason(c, "block_sparse (block 128", "no window hint", "for the layout")
    # The layout is the caller's to build: the error says with which block size and density.
    with pytest.raises(ValueError) as e:
        c.sparse_attn_kwargs()
    n = seqlen // 128
    assert f"(nheads or 1, {n}, {n})" in str(e.value) and "block_size=128)" in str(e.value)
    assert f"{100 * density:.2f}%" in str(e.value)


def test_layout_that_does_not_fit_falls_back_to_window():
    s = 524288
    c = choose(s, free=io_bytes(s) + 128 * MiB)
    assert c.mode == "sliding_window", c.reason
    assert c.fits and c.dense.fits and not c.block_sparse.fits
    assert c.window_size == (16383, 0)  # 16384 keys per row, as dense causal at 32K averages
    assert_reason(c, "block-sparse layout (256.0 MiB", "does not fit")

    nc = choose(131072, free=io_bytes(131072) + MiB, causal=False)
    assert nc.mode == "sliding_window", nc.reason
    assert nc.window_size == (16384, 16384)


@pytest.mark.parametrize("seqlen", [4096, 131072, 524288])
@pytest.mark.parametrize("hint", [None, 4096])
def test_small_free_memory_fits_nothing(seqlen, hint):
    c = choose(seqlen, free=32 * MiB, window_hint=hint)
    assert not c.fits, c.reason
    assert not (c.dense.fits or c.sliding_window.fits or c.block_sparse.fits)
    assert c.mode == ("dense" if seqlen == 4096 else "sliding_window"), c.reason
    assert_reason(c, "DOES NOT FIT", "32.0 MiB free", "shard the sequence")


def test_dense_when_the_budget_or_the_window_covers_the_sequence():
    assert choose(131072, max_dense_seqlen=131072).mode == "dense"
    c = choose(131072, window_hint=131071)
    assert c.mode == "dense", c.reason
    assert_reason(c, "reaches across the whole sequence")


def test_estimates_follow_heads_and_batch():
    c = choose(4096, kv_heads=2, batch=3)
    assert c.dense.bytes == io_bytes(4096, kv_heads=2, batch=3)
    assert c.dense.visible_pairs == 3 * 16.0 * 4096 * 4097 / 2


def test_choice_is_frozen():
    c = choose(4096)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.mode = "sliding_window"
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.dense.fits = False


# ---- dtype -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype, nbytes", [
    ("float16", 2), ("bfloat16", 2), ("float32", 4),
    (np.float16, 2), (np.float32, 4), (np.dtype("float16"), 2), (np.dtype("float32"), 4),
])
def test_dtype_sets_the_element_size(dtype, nbytes):
    assert choose(4096, dtype=dtype).dense.bytes == io_bytes(4096, dtype_bytes=nbytes)


def test_default_dtype_is_two_bytes():
    assert choose(4096).dense.bytes == io_bytes(4096, dtype_bytes=2)


@needs_torch
@pytest.mark.parametrize("name, nbytes", [("float16", 2), ("bfloat16", 2), ("float32", 4)])
def test_torch_dtype(name, nbytes):
    dtype = getattr(torch, name)
    assert choose(4096, dtype=dtype).dense.bytes == io_bytes(4096, dtype_bytes=nbytes)


@pytest.mark.parametrize("dtype", ["float64", "fp16", np.float64, np.int8, 2, None])
def test_unsupported_dtype_is_named(dtype):
    with pytest.raises(ValueError, match="dtype") as e:
        choose(4096, dtype=dtype)
    assert repr(dtype) in str(e.value)


# ---- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, needle", [
    ({"seqlen": 0}, "seqlen is 0"),
    ({"seqlen": 2**31}, "exceeds 2^30"),
    ({"heads": 0}, "heads is 0"),
    ({"head_dim": -4}, "head_dim is -4"),
    ({"batch": 0}, "batch is 0"),
    ({"kv_heads": 3}, "kv_heads 3 does not divide heads 16"),
    ({"kv_heads": -2}, "kv_heads -2 must be positive, or None for heads (MHA)"),
    ({"kv_heads": 0}, "kv_heads 0 must be positive, or None for heads (MHA)"),
    ({"block_size": 40}, "block_size 40"),
    ({"block_size": 0}, "block_size is 0"),
    ({"free": -1}, "free_memory_bytes -1"),
    ({"window_hint": -5}, "window_hint -5"),
    ({"global_tokens": -1}, "global_tokens -1"),
    ({"max_dense_seqlen": 0}, "max_dense_seqlen is 0"),
    ({"heads": 2**40}, f"heads {2**40} is out of range"),
    ({"free": 2**64}, f"free_memory_bytes {2**64} is out of range"),
    ({"batch": 2**31 - 1, "head_dim": 2**31 - 1}, "exceeds int64"),
])
def test_bad_values_are_named(kwargs, needle):
    args = {"seqlen": 4096, "heads": 16, "head_dim": 128, "free": 80 * GiB}
    args.update(kwargs)
    with pytest.raises(ValueError) as e:
        ga.choose_sparsity(args.pop("seqlen"), args.pop("heads"), args.pop("head_dim"),
                           free_memory_bytes=args.pop("free"), **args)
    assert needle in str(e.value)


@pytest.mark.parametrize("kwargs, name", [
    ({"heads": 1.5}, "heads"), ({"heads": True}, "heads"), ({"window_hint": "4096"}, "window_hint"),
    ({"free_memory_bytes": 1e9}, "free_memory_bytes"), ({"causal": "yes"}, "causal"),
    ({"causal": 5}, "causal=5 must be a bool, got int"),
    ({"causal": 1}, "causal=1 must be a bool, got int"),
    ({"causal": np.int64(0)}, "causal=.*0.* must be a bool, got int64"),
])
def test_non_ints_are_type_errors(kwargs, name):
    args = {"heads": 16, "free_memory_bytes": 80 * GiB}
    args.update(kwargs)
    with pytest.raises(TypeError, match=name):
        ga.choose_sparsity(4096, head_dim=128, **args)


def test_causal_takes_numpy_bools():
    for causal in (True, False):
        want = choose(131072, causal=causal, window_hint=512)
        assert choose(131072, causal=np.bool_(causal), window_hint=512) == want
        assert want.causal is causal


# ---- free_memory_bytes=None --------------------------------------------------------------------


def fake_torch(cuda, free=0):
    """A stand-in torch module with just what choose_sparsity reads."""
    t = types.ModuleType("torch")
    t.dtype = type("dtype", (), {})
    t.cuda = types.SimpleNamespace(is_available=lambda: cuda, mem_get_info=lambda: (free, 2 * free))
    return t


def test_free_memory_without_torch_asks_for_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    with pytest.raises(RuntimeError, match="torch is not installed: pass free_memory_bytes"):
        ga.choose_sparsity(4096, 16, 128)


def test_free_memory_without_gpu_asks_for_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", fake_torch(cuda=False))
    with pytest.raises(RuntimeError, match="no CUDA device: pass free_memory_bytes"):
        ga.choose_sparsity(4096, 16, 128)


def test_free_memory_from_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", fake_torch(cuda=True, free=32 * MiB))
    c = ga.choose_sparsity(4096, 16, 128)
    assert not c.fits
    assert_reason(c, "32.0 MiB free")


def test_free_memory_in_this_environment():
    """The real lookup: torch.cuda.mem_get_info when torch sees a GPU, else RuntimeError."""
    if torch is not None and torch.cuda.is_available():
        free = torch.cuda.mem_get_info()[0]
        assert ga.choose_sparsity(4096, 16, 128).dense.fits == (io_bytes(4096) <= free)
    else:
        with pytest.raises(RuntimeError, match="pass free_memory_bytes explicitly"):
            ga.choose_sparsity(4096, 16, 128)


# ---- the choice applied through sparse_attn_func (CPU backend) ---------------------------------

B, H, D = 1, 2, 64


def small_io(seqlen):
    return io_bytes(seqlen, heads=H, kv_heads=H, head_dim=D, dtype_bytes=4, batch=B)


@pytest.mark.parametrize("request_kwargs, mode, window", [
    ({"seqlen": 32}, "dense", (-1, -1)),
    ({"seqlen": 96, "window_hint": 8, "global_tokens": 2}, "sliding_window", (8, 0)),
    ({"seqlen": 96, "window_hint": 8, "causal": False}, "sliding_window", (8, 8)),
    # No hint, and the 2 x 6 x 6 byte layout does not fit: the work-budget window.
    ({"seqlen": 96, "free": small_io(96) + 71}, "sliding_window", (15, 0)),
    ({"seqlen": 96, "free": small_io(96) + 71, "causal": False}, "sliding_window", (16, 16)),
])
def test_kwargs_run_through_sparse_attn_func(request_kwargs, mode, window):
    args = {"free": 1 * GiB}
    args.update(request_kwargs)
    s = args.pop("seqlen")
    c = ga.choose_sparsity(s, H, D, batch=B, dtype=np.float32, max_dense_seqlen=32,
                           block_size=16, free_memory_bytes=args.pop("free"), **args)
    assert c.mode == mode, c.reason
    kw = c.sparse_attn_kwargs()
    assert kw["window_size"] == window
    causal = args.get("causal", True)
    globals_ = args.get("global_tokens", 0)
    q, k, v = qkv("numpy", "float32", B, s, s, H, H, D, rng_for("policy", s, mode, window))
    got = ga.sparse_attn_func(q, k, v, **kw)
    by_hand = ga.sparse_attn_func(q, k, v, causal=causal, window_size=window,
                                  global_tokens=globals_)
    assert np.array_equal(got, by_hand)
    want, _ = ref_dense(q, k, v, 1 / math.sqrt(D),
                        lambda sq, sk: visibility(sq, sk, causal, window, globals_))
    assert_close(got, want, 2e-5, f"{mode} {window}")


def test_block_sparse_choice_builds_a_layout_that_runs():
    """The block_sparse error's recipe: a layout of the given block size within the density."""
    s = 96
    c = ga.choose_sparsity(s, H, D, dtype="float32", max_dense_seqlen=32, block_size=16,
                           free_memory_bytes=1 * GiB)
    assert c.mode == "block_sparse", c.reason
    assert c.block_size == 16 and c.max_block_density == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match=r"block_size=16\)") as e:
        c.sparse_attn_kwargs()
    assert "33.33%" in str(e.value) and "(nheads or 1, 6, 6)" in str(e.value)
    n = -(-s // c.block_size)
    layout = np.eye(n, dtype=bool)[None] | np.eye(n, k=-1, dtype=bool)[None]  # 11 of 36 on
    assert layout.mean() <= c.max_block_density
    q, k, v = qkv("numpy", "float32", B, s, s, H, H, D, rng_for("policy block", s))
    got = ga.sparse_attn_func(q, k, v, causal=c.causal, block_mask=layout, block_size=c.block_size)
    blocks = np.kron(layout[0], np.ones((c.block_size, c.block_size), bool))[:s, :s]
    want, _ = ref_dense(q, k, v, 1 / math.sqrt(D),
                        lambda sq, sk: visibility(sq, sk, True) & blocks)
    assert_close(got, want, 2e-5, "block_sparse layout")
