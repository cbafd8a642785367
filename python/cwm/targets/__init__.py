"""Back ends that need more than ``tvm.compile``: see :mod:`cwm.targets.cuda` (the steps of a CUDA
build, docs/cuda.md) and :mod:`cwm.targets.cuda_inspect` (is there GPU code in a library?).

Importing this package is cheap; TVM is imported by the functions that need it.
"""
from cwm._lazy import lazy_exports

_EXPORTS = {
    "build_cuda": "cuda", "CudaBuild": "cuda", "CudaBuildInfo": "cuda", "has_device_code": "cuda_inspect",
    "build_device_code": "cuda", "apply_default_gpu_schedules": "cuda", "gpu_library_dispatch": "cuda",
    "enable_cuda_codegen": "cuda", "cuda_codegen_status": "cuda", "find_nvcc": "cuda",
    "CudaUnavailable": "cuda",
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
