"""Back ends that need more than ``tvm.compile``: see :mod:`cwm.targets.cuda` (docs/cuda.md).

Importing this package is cheap; TVM is imported by the functions that need it.
"""
from cwm._lazy import lazy_exports

_EXPORTS = {
    "build_cuda": "cuda", "CudaBuild": "cuda", "CudaBuildInfo": "cuda", "has_device_code": "cuda",
    "enable_cuda_codegen": "cuda", "cuda_codegen_status": "cuda", "find_nvcc": "cuda",
    "CudaUnavailable": "cuda",
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
