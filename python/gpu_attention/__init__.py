"""gpu_attention: exact attention kernels (CUDA, with a CPU fallback) behind flash-attn 2.x's API.

    from gpu_attention import flash_attn_func
    out = flash_attn_func(q, k, v, causal=True)   # q [B, Sq, Hq, D], k/v [B, Sk, Hkv, D]

Accepts torch tensors (CUDA or CPU) and numpy arrays, zero-copy through DLPack; CUDA tensors run
on the current torch stream. Outputs are allocated with the inputs' framework.

    from gpu_attention import sparse_attn_func   # gpu_attention-specific: window + global tokens
    out = sparse_attn_func(q, k, v, causal=True, window_size=(4096, 0), global_tokens=128)
    out = sparse_attn_func(q, k, v, block_mask=layout, block_size=(64, 64))  # block-sparse

    from gpu_attention import choose_sparsity    # opt-in advice; nothing applies it on its own
    choice = choose_sparsity(131072, 16, 128, window_hint=4096, free_memory_bytes=free)
    print(choice.mode, choice.reason)            # 'sliding_window', why
    out = sparse_attn_func(q, k, v, **choice.sparse_attn_kwargs())

    from gpu_attention import RankGroup, sequence_parallel_attention   # several GPUs
    group = RankGroup.local_cuda([0, 1])           # NCCL; RankGroup.local_cpu(2) on the CPU
    sequence_parallel_attention(group, [q0, q1], [k0, k1], [v0, v1], [o0, o1], causal=True,
                                layout="zigzag", strategy="ring")  # rank r's rows: shard_rows

    from gpu_attention import Gpt2Engine          # GPT-2 on the engine (gpuattn/gpt2.h)
    engine = Gpt2Engine("gpt2/", backend="auto")  # model.safetensors + config.json (HF layout)
    new_tokens = engine.generate([[464, 3290, 318]], max_new_tokens=32)
"""

try:
    from . import _C
except ImportError as e:  # pragma: no cover - a broken build must fail loudly, not half-import
    raise ImportError(
        "gpu_attention: the native extension gpu_attention._C could not be imported "
        f"({e}). Build it with CMake (GPUATTN_PYTHON=ON) and put <build>/python on PYTHONPATH, "
        "or install the package with `pip install .`."
    ) from e

from .flash_attn_interface import (
    apply_rotary_emb,
    flash_attn_func,
    flash_attn_kvpacked_func,
    flash_attn_qkvpacked_func,
    flash_attn_varlen_func,
    flash_attn_varlen_kvpacked_func,
    flash_attn_varlen_qkvpacked_func,
    flash_attn_with_kvcache,
)
from .sparse_attn_interface import sparse_attn_func, sparse_attn_varlen_func
from .sparsity_policy import SparsityChoice, SparsityEstimate, choose_sparsity

__version__ = _C.__version__
Gpt2Engine = _C.Gpt2Engine
Gpt2Tokenizer = _C.Gpt2Tokenizer
RankGroup = _C.RankGroup
sequence_parallel_attention = _C.sequence_parallel_attention
shard_rows = _C.shard_rows


def cuda_available() -> bool:
    """True when this build has the CUDA backend and a CUDA device is visible."""
    return bool(_C.cuda_available())


__all__ = [
    "Gpt2Engine",
    "Gpt2Tokenizer",
    "RankGroup",
    "SparsityChoice",
    "SparsityEstimate",
    "__version__",
    "apply_rotary_emb",
    "choose_sparsity",
    "cuda_available",
    "flash_attn_func",
    "flash_attn_kvpacked_func",
    "flash_attn_qkvpacked_func",
    "flash_attn_varlen_func",
    "flash_attn_varlen_kvpacked_func",
    "flash_attn_varlen_qkvpacked_func",
    "flash_attn_with_kvcache",
    "sequence_parallel_attention",
    "shard_rows",
    "sparse_attn_func",
    "sparse_attn_varlen_func",
]
