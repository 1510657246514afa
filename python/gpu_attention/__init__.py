"""gpu_attention: exact attention kernels (CUDA, with a CPU fallback) behind flash-attn 2.x's API.

    from gpu_attention import flash_attn_func
    out = flash_attn_func(q, k, v, causal=True)   # q [B, Sq, Hq, D], k/v [B, Sk, Hkv, D]

Accepts torch tensors (CUDA or CPU) and numpy arrays, zero-copy through DLPack; CUDA tensors run
on the current torch stream. Outputs are allocated with the inputs' framework.
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
    flash_attn_func,
    flash_attn_kvpacked_func,
    flash_attn_qkvpacked_func,
    flash_attn_varlen_func,
    flash_attn_varlen_kvpacked_func,
    flash_attn_varlen_qkvpacked_func,
    flash_attn_with_kvcache,
)

__version__ = _C.__version__


def cuda_available() -> bool:
    """True when this build has the CUDA backend and a CUDA device is visible."""
    return bool(_C.cuda_available())


__all__ = [
    "__version__",
    "cuda_available",
    "flash_attn_func",
    "flash_attn_kvpacked_func",
    "flash_attn_qkvpacked_func",
    "flash_attn_varlen_func",
    "flash_attn_varlen_kvpacked_func",
    "flash_attn_varlen_qkvpacked_func",
    "flash_attn_with_kvcache",
]
