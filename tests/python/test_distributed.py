"""gpu_attention.sequence_parallel_attention (the distributed layer's binding): CPU ranks over numpy
arrays against the float64 reference of the whole sequence, every strategy and layout; errors
named; and, where torch sees a CUDA device, three ranks on it through peer copies.
"""

import numpy as np
import pytest

import gpu_attention as ga
from reference import causal_rule, needs_torch, ref_dense, torch, visibility

STRATEGIES = ["ring", "all_gather", "head_parallel"]
LAYOUTS = ["contiguous", "zigzag"]


def shards(x, world, layout):
    """Rank r's rows of x [B, S, H, D] under `layout`."""
    return [np.ascontiguousarray(x[:, ga.shard_rows(layout, world, r, x.shape[1])])
            for r in range(world)]


def run(group, world, q, k, v, causal, layout, strategy, lse=True):
    qs, ks, vs = (shards(x, world, layout) for x in (q, k, v))
    outs = [np.full_like(s, np.nan) for s in qs]
    lses = [np.full((q.shape[0], q.shape[2], s.shape[1]), np.nan, np.float32) for s in qs]
    ga.sequence_parallel_attention(group, qs, ks, vs, outs, lses if lse else None, causal=causal,
                                   layout=layout, strategy=strategy)
    out = np.empty_like(q)
    lse_all = np.empty((q.shape[0], q.shape[2], q.shape[1]), np.float32)
    for r in range(world):
        rows = ga.shard_rows(layout, world, r, q.shape[1])
        out[:, rows] = outs[r]
        lse_all[:, :, rows] = lses[r]
    return out, lse_all


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("causal", [False, True])
def test_cpu_ranks_match_the_whole_sequence(strategy, layout, causal):
    world, b, s, hq, hkv, d = 3, 2, 3 * 26, 6, 3, 64
    rng = np.random.default_rng(5)
    q = rng.standard_normal((b, s, hq, d)).astype(np.float32)
    k = rng.standard_normal((b, s, hkv, d)).astype(np.float32)
    v = rng.standard_normal((b, s, hkv, d)).astype(np.float32)
    group = ga.RankGroup.local_cpu(world)
    assert group.world_size == world and group.local_ranks == [0, 1, 2]
    assert group.device == "cpu" and group.transport == "host" and group.devices == []
    out, lse = run(group, world, q, k, v, causal, layout, strategy)
    want, want_lse = ref_dense(q, k, v, d ** -0.5, causal_rule(causal))
    np.testing.assert_allclose(out, want, atol=2e-5, rtol=0)
    np.testing.assert_allclose(lse, want_lse, atol=2e-5, rtol=0)


@pytest.mark.parametrize("strategy", ["head_parallel", "all_gather"])
def test_a_window_and_global_tokens_over_global_positions(strategy):
    world, b, s, hq, hkv, d = 2, 1, 2 * 40, 4, 2, 64
    rng = np.random.default_rng(11)
    q, k, v = (rng.standard_normal((b, s, h, d)).astype(np.float32) for h in (hq, hkv, hkv))
    qs, ks, vs = (shards(x, world, "zigzag") for x in (q, k, v))
    outs = [np.full_like(x, np.nan) for x in qs]
    ga.sequence_parallel_attention(ga.RankGroup.local_cpu(world), qs, ks, vs, outs, causal=True,
                                   layout="zigzag", strategy=strategy, window_size=(9, 0),
                                   global_tokens=3)
    out = np.empty_like(q)
    for r in range(world):
        out[:, ga.shard_rows("zigzag", world, r, s)] = outs[r]
    want, _ = ref_dense(q, k, v, d ** -0.5,
                        lambda sq, sk: visibility(sq, sk, True, (9, 0), global_tokens=3))
    np.testing.assert_allclose(out, want, atol=2e-5, rtol=0)
    with pytest.raises(NotImplementedError, match="not on the ring"):
        ga.sequence_parallel_attention(ga.RankGroup.local_cpu(world), qs, ks, vs, outs,
                                       causal=True, strategy="ring", window_size=(9, 0))


def test_shard_rows():
    assert ga.shard_rows("zigzag", 2, 0, 8) == [0, 1, 6, 7]
    assert ga.shard_rows("contiguous", 2, 1, 8) == [4, 5, 6, 7]
    with pytest.raises(ValueError, match="seq_len 6 is not a multiple of 4"):
        ga.shard_rows("zigzag", 2, 0, 6)
    with pytest.raises(ValueError, match="layout 'diagonal'"):
        ga.shard_rows("diagonal", 2, 0, 8)


def test_errors_name_the_bad_value():
    group = ga.RankGroup.local_cpu(2)
    q = np.ones((1, 8, 2, 64), np.float32)
    out = np.zeros_like(q)
    with pytest.raises(ValueError, match="k has 1 arrays but q has 2"):
        ga.sequence_parallel_attention(group, [q, q], [q], [q, q], [out, out])
    with pytest.raises(ValueError, match="strategy 'tree'"):
        ga.sequence_parallel_attention(group, [q, q], [q, q], [q, q], [out, out.copy()],
                                       strategy="tree")
    with pytest.raises(ValueError, match=r"shards\[1\]: q holds 4 rows but k holds 8"):
        ga.sequence_parallel_attention(group, [q, q[:, :4]], [q, q], [q, q],
                                       [out, out[:, :4].copy()])
    with pytest.raises(ValueError, match="world_size 0 is not positive"):
        ga.RankGroup.local_cpu(0)
    with pytest.raises(ValueError, match=r"world_size is 2147483648, must be in \["):
        ga.RankGroup.local_cpu(2**31)
    with pytest.raises(TypeError, match="world_size must be an int, got True"):
        ga.RankGroup.local_cpu(True)
    call = lambda **kw: ga.sequence_parallel_attention(group, [q, q], [q, q], [q, q],
                                                       [out, out.copy()], **kw)
    with pytest.raises(ValueError, match=r"window_size\[0\] is 2147483648, must be in \["):
        call(window_size=(2**31, 0))
    with pytest.raises(TypeError, match=r"window_size\[0\] must be an int, got True"):
        call(window_size=(True, 0))
    with pytest.raises(ValueError, match=r"window_size is \(1, 2, 3\), must be \(left, right\)"):
        call(window_size=(1, 2, 3))
    with pytest.raises(ValueError, match=r"softmax_scale is 1e\+39, which float32 rounds to inf"):
        call(softmax_scale=1e39)
    with pytest.raises(TypeError, match="softmax_scale must be a number, got True"):
        call(softmax_scale=True)
    with pytest.raises(ValueError, match=r"global_tokens is 1180591620717411303424, must be in"):
        call(global_tokens=2**70)
    with pytest.raises(ValueError, match=r"streams\[0\] is -1, must be in \[0, 2\^64 - 1\]"):
        call(streams=[-1, 0])
    with pytest.raises(ValueError, match=r"lse\[0\] is None"):
        call(lse=[None, None])
    with pytest.raises(ValueError, match=r"shard_rows: world_size is 2147483648"):
        ga.shard_rows("contiguous", 2**31, 0, 8)
    # numpy's bool is a bool, and numpy's ints are ints
    call(causal=np.True_, global_tokens=np.int64(0))


def test_cuda_groups_without_a_usable_device_raise_runtime_error(tmp_path):
    """python/README.md's rule: asking for CUDA where no CUDA device is usable (this build has no
    CUDA backend, or none is visible) is a RuntimeError naming it, before the group's values are
    checked (a group of no devices too); the arguments' types and names are checked first. It was
    a ValueError of the device ordinal ("0 visible"), while the engine raised another type."""
    if ga.cuda_available():
        pytest.skip("a CUDA device is usable here")
    no_device = r"needs a CUDA device, but none is usable: (this build of gpu_attention has no " \
                r"CUDA backend|no CUDA device is visible)"
    for devices, transport in (([0], "nccl"), ([0, 1], "peer_copy"), ([], "nccl")):
        with pytest.raises(RuntimeError, match="^RankGroup.local_cuda " + no_device):
            ga.RankGroup.local_cuda(devices, transport=transport)
    with pytest.raises(RuntimeError, match="^RankGroup.nccl_from_file " + no_device):
        ga.RankGroup.nccl_from_file(str(tmp_path / "id"), 0, 1, 0)
    assert not (tmp_path / "id").exists()
    with pytest.raises(ValueError, match="transport 'tcp' is not one of"):
        ga.RankGroup.local_cuda([0], transport="tcp")
    with pytest.raises(ValueError, match=r"RankGroup.local_cuda: devices\[0\] is 2147483648"):
        ga.RankGroup.local_cuda([2**31])
    with pytest.raises(ValueError, match=r"RankGroup.nccl_from_file: rank is 2147483648"):
        ga.RankGroup.nccl_from_file(str(tmp_path / "id"), 2**31, 1, 0)


def test_cuda_group_device_past_the_visible_ones_is_a_value_error():
    """With a usable device, an ordinal that is not a visible device is a bad argument value."""
    if not ga.cuda_available():
        pytest.skip("no CUDA device")
    with pytest.raises(ValueError, match=r"devices\[0\] = 4096 is not a visible CUDA device"):
        ga.RankGroup.local_cuda([4096], transport="peer_copy")


@needs_torch
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_three_ranks_on_one_gpu(strategy):
    if not (torch.cuda.is_available() and ga.cuda_available()):
        pytest.skip("no CUDA device")
    world, b, s, hq, hkv, d = 3, 1, 3 * 2 * 150, 6, 3, 128
    rng = np.random.default_rng(9)
    q, k, v = (rng.standard_normal((b, s, h, d)).astype(np.float32) for h in (hq, hkv, hkv))
    dev = torch.device("cuda", 0)
    to = lambda x: torch.from_numpy(x).to(dev, torch.bfloat16)  # noqa: E731
    qs, ks, vs = ([to(x) for x in shards(a, world, "zigzag")] for a in (q, k, v))
    outs = [torch.full_like(x, float("nan")) for x in qs]
    group = ga.RankGroup.local_cuda([0, 0, 0], transport="peer_copy")
    ga.sequence_parallel_attention(group, qs, ks, vs, outs, causal=True, layout="zigzag",
                                   strategy=strategy)
    torch.cuda.synchronize()
    out = np.empty((b, s, hq, d), np.float32)
    for r in range(world):
        out[:, ga.shard_rows("zigzag", world, r, s)] = outs[r].float().cpu().numpy()
    bf = lambda x: torch.from_numpy(x).to(torch.bfloat16).float().numpy()  # noqa: E731
    want, _ = ref_dense(bf(q), bf(k), bf(v), d ** -0.5, causal_rule(True))
    err = np.linalg.norm(out - want) / np.linalg.norm(want)
    assert err < 1.2e-2, err
