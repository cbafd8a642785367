"""Back ends that need more than ``tvm.compile``: see :mod:`cwm.targets.cuda` (docs/cuda.md).

Importing this package is cheap; TVM is imported by the functions that need it.
"""
from importlib import import_module

_EXPORTS = {
    "build_cuda": "cuda", "CudaBuild": "cuda", "CudaBuildInfo": "cuda", "has_device_code": "cuda",
    "enable_cuda_codegen": "cuda", "cuda_codegen_status": "cuda", "find_nvcc": "cuda",
    "CudaUnavailable": "cuda",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(import_module(f"cwm.targets.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'cwm.targets' has no attribute {name!r}")


def __dir__():
    return __all__
