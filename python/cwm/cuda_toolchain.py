"""The CUDA toolchain: find nvcc / NVRTC, load TVM's CUDA runtime, and hook real device code into builds.

Everything that makes a CUDA build *possible* lives here, low in the package (it imports only
:mod:`cwm.target_spec`), so that tuning (:mod:`cwm.tuning.settings`, :mod:`cwm.tuning.rpc`,
:mod:`cwm.tuning.pooled_builder`) and building (:mod:`cwm.targets.cuda`) can both use it.
What a build *does* (schedules, lowering, export, inspection) is :mod:`cwm.targets.cuda`;
docs/cuda.md tells the whole story.

The problem (docs/cuda.md, TVM_NOTES §6)
----------------------------------------
TVM 0.27 keeps its CUDA runtime in a side library, ``libtvm_runtime_cuda.so``, which needs the
CUDA *driver* (``libcuda.so.1``). On a machine with the CUDA toolkit but no driver (this one:
nvcc, no GPU) that library fails to load and ``import tvm`` goes on silently. ``tvm.compile``
for a cuda target then still "succeeds", but its device module is a *fallback* that holds only
the generated CUDA C source: ``tvm_callback_cuda_compile`` is never called, no PTX/cubin is
made, the exported ``.so`` cannot be loaded here (``a loader of that name is not registered``)
and on a GPU host it can only work if that host compiles the source again at load time.

What this module does
---------------------
:func:`find_nvcc` finds the compiler (``$CWM_NVCC``, ``PATH``, ``$CUDA_HOME``, /usr/local/cuda*);
:func:`enable_cuda_codegen` makes ``tvm.compile(..., target=cuda)`` embed real device code:

1. It loads ``libtvm_runtime_cuda.so`` (which registers ``ffi.Module.create.cuda``, the step
   that calls the compile callback). With a real driver that just works. Without one, a tiny
   *driver stub* is compiled with the C compiler and loaded first under the soname
   ``libcuda.so.1``; it defines exactly the driver symbols the CUDA runtime library imports
   (read from its ELF dynamic symbol table) and each returns ``CUDA_ERROR_NO_DEVICE``. Nothing
   can *run* on the GPU in such a process (there is none), but modules can be built, exported
   and loaded. The stub is only ever loaded when no ``libcuda.so.1`` can be opened.
2. It registers ``tvm_callback_cuda_compile`` (overriding TVM's, which defaults to NVRTC and
   needs the ``cuda-bindings`` package, and needs a ``with target:`` scope for the arch). Ours
   runs ``nvcc`` with the arch taken from the current target (or the one given to
   :func:`enable_cuda_codegen`), default output a *fatbin* holding ``sm_XX`` machine code plus
   ``compute_XX`` PTX (so newer GPUs can JIT it). NVRTC is used when there is no nvcc but
   ``cuda-bindings`` is installed.

:class:`CudaUnavailable` is raised when none of this can work here. :func:`cuda_target` turns a
spec into a cuda ``Target`` with an arch.
"""
from __future__ import annotations

import ctypes
import glob
import logging
import os
import re
import shutil
import struct
import subprocess
import tempfile
import threading
import time
from typing import Any

log = logging.getLogger("cwm.cuda_toolchain")

#: output formats the compile callback can produce
FORMATS = ("fatbin", "cubin", "ptx")

CUDA_ERROR_NO_DEVICE = 100

#: driver symbols libtvm_runtime_cuda.so (0.27) imports; the real list is read from the library
_KNOWN_DRIVER_SYMBOLS = ("cuDeviceGetName", "cuFuncSetAttribute", "cuGetErrorName", "cuGetErrorString",
                         "cuLaunchKernelEx", "cuModuleGetFunction", "cuModuleLoadData", "cuModuleUnload",
                         "cuTensorMapEncodeTiled")

#: nvcc flags TVM's own ``tvm.support.nvcc`` passes (fp16/bf16 operators, fast math)
_NVCC_FLAGS = ("-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__",
               "-U__CUDA_NO_BFLOAT16_OPERATORS__", "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
               "-U__CUDA_NO_BFLOAT162_OPERATORS__", "-U__CUDA_NO_BFLOAT162_CONVERSIONS__",
               "--expt-relaxed-constexpr", "--expt-extended-lambda")


class CudaUnavailable(RuntimeError):
    """Real CUDA device code cannot be produced here (no nvcc/NVRTC, no C compiler, no cudart)."""


# ----------------------------------------------------------------------------- tools
def find_nvcc() -> str | None:
    """Path of ``nvcc``: ``$CWM_NVCC``, ``PATH``, ``$CUDA_HOME``/``$CUDA_PATH``, /usr/local/cuda*."""
    env = os.environ.get("CWM_NVCC")
    if env and os.access(env, os.X_OK):
        return env
    found = shutil.which("nvcc")
    if found:
        return found
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    roots += sorted(glob.glob("/usr/local/cuda-*"), reverse=True)
    for root in roots:
        if root and os.access(os.path.join(root, "bin", "nvcc"), os.X_OK):
            return os.path.join(root, "bin", "nvcc")
    return None


def _find_cc() -> str | None:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def _have_nvrtc() -> bool:
    try:
        import cuda.bindings.nvrtc  # noqa: F401
    except Exception:  # not installed or broken
        return False
    return True


def _undefined_driver_symbols(path: str) -> list[str]:
    """Undefined ``cu*`` symbols of the ELF64 shared library ``path`` (its ``.dynsym``)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        return list(_KNOWN_DRIVER_SYMBOLS)
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = set()
    for sh in sections:
        if sh[1] != 11:  # SHT_DYNSYM
            continue
        strtab = sections[sh[6]]
        str_off = strtab[4]
        for off in range(sh[4], sh[4] + sh[5], sh[9] or 24):
            st_name, _info, _other, st_shndx = struct.unpack_from("<IBBH", data, off)
            if st_shndx != 0 or st_name == 0:
                continue
            end = data.index(b"\0", str_off + st_name)
            name = data[str_off + st_name:end].decode("ascii", "replace")
            if re.fullmatch(r"cu[A-Z]\w*", name):
                names.add(name)
    return sorted(names | set(_KNOWN_DRIVER_SYMBOLS))


def _stub_source(symbols) -> str:
    """C source of the driver stub: every symbol returns CUDA_ERROR_NO_DEVICE."""
    message = "no CUDA driver on this machine (cwm build-only driver stub)"
    lines = [f"static const char MSG[] = \"{message}\";"]
    for name in symbols:
        if name in ("cuGetErrorName", "cuGetErrorString"):
            lines.append(f"int {name}(int e, const char** s) {{ if (s) *s = MSG; return 0; }}")
        else:
            lines.append(f"int {name}(void) {{ return {CUDA_ERROR_NO_DEVICE}; }}")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- runtime + hook
_LOCK = threading.RLock()
_STATE: dict[str, Any] = {"runtime": None, "compiler": None, "nvcc": None, "fmt": "fatbin", "arch": None,
                          "compiles": 0, "compile_s": 0.0, "last_arch": None, "last_format": None}


def _runtime_registered() -> bool:
    import tvm_ffi

    return tvm_ffi.get_global_func("ffi.Module.create.cuda", allow_missing=True) is not None


def _runtime_lib_path() -> str:
    from tvm.base import _LOADED_LIBS

    return os.path.join(os.path.dirname(os.path.realpath(_LOADED_LIBS["tvm_runtime"]._name)),
                        "libtvm_runtime_cuda.so")


def _load_runtime_lib() -> None:
    from pathlib import Path

    from tvm.base import _LOADED_LIBS
    from tvm_ffi.libinfo import load_lib_ctypes

    _LOADED_LIBS["tvm_runtime_cuda"] = load_lib_ctypes(
        package="tvm", target_name="tvm_runtime_cuda", extra_lib_paths=[Path(_runtime_lib_path()).parent],
        mode="RTLD_LOCAL")


def _ensure_runtime() -> str:
    """Load TVM's CUDA runtime library; ``"driver"`` (real libcuda) or ``"stub"``."""
    import tvm  # noqa: F401  (loads libtvm_runtime first)

    if _STATE["runtime"]:
        return _STATE["runtime"]
    if _runtime_registered():  # import tvm found a driver
        _STATE["runtime"] = "driver"
        return "driver"
    try:
        ctypes.CDLL("libcuda.so.1", mode=ctypes.RTLD_GLOBAL)
        kind = "driver"
    except OSError:
        kind = "stub"
        cc = _find_cc()
        if cc is None:
            raise CudaUnavailable("no C compiler (cc/gcc/clang) to build the CUDA driver stub") from None
        lib = _runtime_lib_path()
        if not os.path.exists(lib):
            raise CudaUnavailable(f"this TVM has no CUDA runtime library ({lib})") from None
        with tempfile.TemporaryDirectory(prefix="cwm_cuda_stub_") as tmp:
            src, out = os.path.join(tmp, "stub.c"), os.path.join(tmp, "libcuda.so.1")
            with open(src, "w") as f:
                f.write(_stub_source(_undefined_driver_symbols(lib)))
            proc = subprocess.run([cc, "-shared", "-fPIC", "-O1", src, "-o", out, "-Wl,-soname,libcuda.so.1"],
                                  capture_output=True, text=True, timeout=120)
            if proc.returncode != 0:
                raise CudaUnavailable(f"building the CUDA driver stub with {cc} failed:\n{proc.stderr[-2000:]}")
            ctypes.CDLL(out, mode=ctypes.RTLD_GLOBAL)  # stays mapped after the file is removed
    try:
        _load_runtime_lib()
    except (OSError, RuntimeError, FileNotFoundError) as error:
        raise CudaUnavailable(f"cannot load TVM's CUDA runtime library ({kind} driver): {error}") from None
    if not _runtime_registered():
        raise CudaUnavailable("libtvm_runtime_cuda.so loaded but did not register ffi.Module.create.cuda")
    _STATE["runtime"] = kind
    log.info("CUDA runtime library loaded (%s)", "real driver" if kind == "driver" else "build-only driver stub")
    return kind


def target_arch(target) -> str | None:
    """The ``sm_XX`` arch of a cuda ``Target`` (``attrs['arch']``), or None."""
    if target is None or target.kind.name != "cuda":
        return None
    arch = str(target.attrs.get("arch", "") or "")
    return arch if arch.startswith("sm_") else None


def _nvcc_compile(code: str, arch: str, fmt: str) -> bytes:
    nvcc = _STATE["nvcc"] or find_nvcc()
    if nvcc is None:
        raise CudaUnavailable("nvcc not found (set CWM_NVCC or put it on PATH)")
    sm = arch[3:]
    if fmt == "fatbin":  # machine code for this GPU + PTX that later GPUs can JIT
        arch_flags = ["-gencode", f"arch=compute_{sm},code=[sm_{sm},compute_{sm}]"]
    else:
        arch_flags = [f"-arch=sm_{sm}"]
    fast_math = [] if os.environ.get("TVM_CUDA_NVCC_NO_FAST_MATH") else ["--use_fast_math"]
    with tempfile.TemporaryDirectory(prefix="cwm_nvcc_") as tmp:
        src, out = os.path.join(tmp, "kernels.cu"), os.path.join(tmp, f"kernels.{fmt}")
        with open(src, "w") as f:
            f.write(code)
        cmd = [nvcc, f"--{fmt}", "-O3", *arch_flags, *_NVCC_FLAGS, *fast_math, "-o", out, src]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise RuntimeError(f"nvcc failed ({' '.join(cmd)}):\n{proc.stdout}{proc.stderr}")
        with open(out, "rb") as f:
            data = f.read()
    if not data:
        raise RuntimeError("nvcc produced an empty file")
    return data


def _nvrtc_compile(code: str, arch: str, fmt: str) -> bytes:
    import tvm
    from tvm.support import nvcc

    with tvm.target.Target({"kind": "cuda", "arch": arch}):  # TVM reads the arch from the scope
        return bytes(nvcc.compile_cuda(code, target_format="ptx" if fmt == "ptx" else "cubin", arch=arch,
                                       compiler="nvrtc"))


def _compile_callback(code, *_unused):
    """``tvm_callback_cuda_compile``: CUDA source -> fatbin/cubin/PTX bytes."""
    import tvm

    arch = target_arch(tvm.target.Target.current(allow_none=True)) or _STATE["arch"]
    if arch is None:
        raise ValueError("cwm CUDA codegen: no arch; build inside `with target:` (a cuda target with "
                         "arch, e.g. nvidia/geforce-rtx-4090) or call enable_cuda_codegen(target)")
    start = time.perf_counter()
    compiler, fmt = _STATE["compiler"], _STATE["fmt"]
    data = _nvcc_compile(code, arch, fmt) if compiler == "nvcc" else _nvrtc_compile(code, arch, fmt)
    with _LOCK:
        _STATE["compiles"] += 1
        _STATE["compile_s"] += time.perf_counter() - start
        _STATE["last_arch"], _STATE["last_format"] = arch, fmt if compiler == "nvcc" else (
            "ptx" if fmt == "ptx" else "cubin")
    return data


def enable_cuda_codegen(target=None, compiler: str = "auto", fmt: str = "fatbin") -> dict:
    """Make every later CUDA build in this process embed real device code; returns the status.

    ``target``: a cuda target (or spec, see :func:`cuda_target`) whose arch is the default
    when a build has no ``with target:`` scope. ``compiler``: ``"nvcc"``, ``"nvrtc"`` (needs
    ``cuda-bindings``) or ``"auto"`` (nvcc if found, else NVRTC). ``fmt``: ``"fatbin"``
    (default: SASS + PTX), ``"cubin"`` or ``"ptx"`` (nvcc; NVRTC makes cubin or PTX).
    Idempotent; raises :class:`CudaUnavailable` when neither compiler or the runtime library
    can be used. Process-wide: without a driver it loads the build-only driver stub.
    """
    import tvm_ffi

    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, not {fmt!r}")
    if compiler not in ("auto", "nvcc", "nvrtc"):
        raise ValueError(f"compiler must be 'auto', 'nvcc' or 'nvrtc', not {compiler!r}")
    with _LOCK:
        nvcc = find_nvcc()
        if compiler == "auto":
            compiler = "nvcc" if nvcc else ("nvrtc" if _have_nvrtc() else None)
            if compiler is None:
                raise CudaUnavailable("neither nvcc nor NVRTC (pip package cuda-bindings) is available")
        elif compiler == "nvcc" and nvcc is None:
            raise CudaUnavailable("nvcc not found (set CWM_NVCC or put it on PATH)")
        elif compiler == "nvrtc" and not _have_nvrtc():
            raise CudaUnavailable("NVRTC needs the cuda-bindings package")
        _ensure_runtime()
        _STATE.update(compiler=compiler, nvcc=nvcc, fmt=fmt)
        if target is not None:
            _STATE["arch"] = target_arch(cuda_target(target)) or _STATE["arch"]
        tvm_ffi.register_global_func("tvm_callback_cuda_compile", _compile_callback, override=True)
    return cuda_codegen_status()


def cuda_codegen_status() -> dict:
    """What :func:`enable_cuda_codegen` set up (``enabled`` False before it ran)."""
    with _LOCK:
        status = {k: _STATE[k] for k in ("runtime", "compiler", "nvcc", "fmt", "arch", "compiles", "compile_s")}
    status["enabled"] = status["compiler"] is not None
    return status


def last_binary_format() -> str | None:
    """The format the compile callback produced last (``"fatbin"``, ``"cubin"``, ``"ptx"``), or None."""
    with _LOCK:
        return _STATE["last_format"]


def cuda_target(spec="cuda"):
    """A cuda ``Target`` with an arch: ``"cuda"`` (-> :data:`~cwm.target_spec.DEFAULT_CUDA_TAG`,
    sm_89), a tag such as ``"nvidia/nvidia-h100"``, a dict or a ``Target``."""
    import tvm

    from cwm.target_spec import resolve_target

    if isinstance(spec, str) and spec not in ("cuda", "llvm"):
        target = tvm.target.Target(spec)
    else:
        target = resolve_target(spec)
    if target.kind.name != "cuda":
        raise ValueError(f"not a cuda target: {target}")
    if target_arch(target) is None:
        raise ValueError(f"cuda target without an arch (sm_XX): {target}; use a tag or add 'arch'")
    return target
