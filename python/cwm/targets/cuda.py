"""Build CUDA modules that load and run: real GPU code (fatbin/cubin/PTX) inside, not CUDA source.

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

:func:`build_cuda` builds a TIR or Relax module with it. Unscheduled TIR cannot run on a GPU
(no thread bindings), so every function gets a schedule: the best record of a MetaSchedule
``database`` when one is given ("tuned with CWM"), otherwise TVM's default GPU schedules
(DLight: ``Matmul, GEMV, Reduction, GeneralReduction, Fallback``); the returned
:class:`CudaBuildInfo` says which. :func:`has_device_code` inspects an exported library.
"""
from __future__ import annotations

import contextlib
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
from dataclasses import asdict, dataclass, field
from typing import Any

log = logging.getLogger("cwm.targets.cuda")

#: schedule sources reported in :attr:`CudaBuildInfo.schedule_source`
DEFAULT_SCHEDULES = "default GPU schedules"
TUNED = "tuned with CWM"
PRE_SCHEDULED = "pre-scheduled (as given)"

#: output formats the compile callback can produce
FORMATS = ("fatbin", "cubin", "ptx")

FATBIN_MAGIC = 0xBA55ED50
EM_CUDA = 190  # ELF e_machine of a cubin
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


def cuda_target(spec="cuda"):
    """A cuda ``Target`` with an arch: ``"cuda"`` (-> :data:`~cwm.tuning.target.DEFAULT_CUDA_TAG`,
    sm_89), a tag such as ``"nvidia/nvidia-h100"``, a dict or a ``Target``."""
    import tvm

    from cwm.tuning.target import resolve_target

    if isinstance(spec, str) and spec not in ("cuda", "llvm"):
        target = tvm.target.Target(spec)
    else:
        target = resolve_target(spec)
    if target.kind.name != "cuda":
        raise ValueError(f"not a cuda target: {target}")
    if target_arch(target) is None:
        raise ValueError(f"cuda target without an arch (sm_XX): {target}; use a tag or add 'arch'")
    return target


def build_in_worker(mod, target) -> str:
    """``build_fn`` for :func:`~cwm.tuning.pooled_builder.PooledBuilder`: enable the codegen in
    the worker, then build + export like the default (a ``.tar`` MetaSchedule artifact)."""
    from cwm.tuning.pooled_builder import build_in_worker as default_build_in_worker

    if target.kind.name == "cuda":
        enable_cuda_codegen(target)
    return default_build_in_worker(mod, target)


# ----------------------------------------------------------------------------- build
@dataclass
class CudaBuildInfo:
    """How :func:`build_cuda` built a module."""

    kind: str                      # "tir" or "relax"
    target: str
    arch: str
    compiler: str                  # "nvcc" or "nvrtc"
    binary_format: str             # "fatbin", "cubin" or "ptx"
    runtime: str                   # "driver" or "stub" (build-only, no GPU here)
    schedule_source: str           # DEFAULT_SCHEDULES, TUNED, a mix of both, or PRE_SCHEDULED
    tuned_functions: list = field(default_factory=list)
    default_scheduled_functions: list = field(default_factory=list)
    pre_scheduled_functions: list = field(default_factory=list)
    device_compiles: int = 0       # calls of the compile callback (one per device module)
    compile_s: float = 0.0         # of which nvcc/NVRTC
    build_s: float = 0.0

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class CudaBuild:
    """A built CUDA module (``executable``: a ``tvm.runtime.Executable``) and how it was built."""

    executable: Any
    info: CudaBuildInfo

    def export_library(self, path: str) -> dict:
        """Export to ``path`` (``.so``) and check it holds device code; the :func:`has_device_code` report."""
        self.executable.export_library(str(path))
        report = has_device_code(str(path))
        if not report["has_device_code"]:
            raise RuntimeError(f"{path}: no GPU code in the exported library: {report}")
        return report


def _schedule_source(tuned, default, pre) -> str:
    """One label when all functions share a source, else ``"label: k of n functions, ..."``."""
    groups = [(TUNED, tuned), (PRE_SCHEDULED, pre), (DEFAULT_SCHEDULES, default)]
    used = [(label, names) for label, names in groups if names]
    if not used:
        return "no TIR functions"
    if len(used) == 1:
        return used[0][0]
    total = sum(len(names) for _, names in used)
    return ", ".join(f"{label}: {len(names)} of {total} functions" for label, names in used)


def _is_marked(func) -> bool:
    return func.attrs is not None and bool(func.attrs.get("tirx.is_scheduled", False))


def has_thread_bindings(func) -> bool:
    """True when the PrimFunc binds GPU threads (i.e. it was scheduled for a GPU already).

    TVM 0.27 has no Python statement visitor for TIR, so this reads the TVMScript text.
    """
    text = func.script()
    return bool(re.search(r'T\.thread_binding|T\.launch_thread|"(?:threadIdx|blockIdx)\.[xyz]"', text))


def _prim_funcs(mod):
    from tvm import tirx

    return [(gv, f) for gv, f in mod.functions_items() if isinstance(f, tirx.PrimFunc)]


def default_gpu_schedules():
    """DLight's default GPU rules, as the cuda pipeline of TVM applies them."""
    from tvm.s_tir import dlight as dl

    return dl.ApplyDefaultSchedule(dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.Reduction(),
                                   dl.gpu.GeneralReduction(), dl.gpu.Fallback())


def _mark_pre_scheduled(mod):
    """Functions that arrive scheduled (``tirx.is_scheduled``, e.g. from
    ``MetaScheduleApplyDatabase``, or binding threads) are marked so DLight leaves them alone."""
    pre = []
    mod = mod.clone()  # never mutate the caller's module
    for gv, func in _prim_funcs(mod):
        if _is_marked(func):
            pre.append(gv.name_hint)
        elif has_thread_bindings(func):
            mod[gv] = func.with_attr("tirx.is_scheduled", True)
            pre.append(gv.name_hint)
    return mod, sorted(pre)


def _apply_tir_database(mod, target, database):
    import tvm

    tuned = []
    mod = mod.clone()
    for gv, func in _prim_funcs(mod):
        if _is_marked(func):
            continue
        single = tvm.IRModule({"main": func})
        sch = database.query_schedule(single, target=target, workload_name="main")
        if sch is None:
            continue
        mod[gv] = sch.mod["main"].with_attr("tirx.is_scheduled", True)
        tuned.append(gv.name_hint)
    return mod, tuned


def _apply_default(mod, target):
    before = {gv.name_hint for gv, f in _prim_funcs(mod) if _is_marked(f)}
    with target:
        mod = default_gpu_schedules()(mod)
    after = {gv.name_hint for gv, f in _prim_funcs(mod) if _is_marked(f)}
    return mod, sorted(after - before)


def _device_modules(executable):
    """The imported (device) modules of a built executable, recursively."""
    stack, out = list(executable.mod.imports), []
    while stack:
        module = stack.pop()
        out.append(module)
        stack.extend(module.imports)
    return out


def _is_relax(mod) -> bool:
    from tvm import relax

    return any(isinstance(f, relax.Function) for _, f in mod.functions_items())


def build_cuda(mod, target="cuda", *, database=None, params=None, compiler: str = "auto", fmt: str = "fatbin",
               export_path: str | None = None, scheduled_by: str | None = None) -> CudaBuild:
    """Build ``mod`` (TIR PrimFunc/IRModule, or a Relax IRModule) for ``target`` with real device code.

    Schedules: a function found in the MetaSchedule ``database`` (e.g. from ``cwm.tune``)
    gets its tuned schedule; functions that arrive scheduled (``tirx.is_scheduled`` set, as
    ``MetaScheduleApplyDatabase`` does, or binding threads) are kept and counted as
    ``scheduled_by`` (default :data:`PRE_SCHEDULED`; pass :data:`TUNED` when you applied a CWM
    database yourself); every other function gets TVM's default GPU schedules (DLight). A Relax
    module without TIR functions is first legalized and fused (the passes of
    :func:`cwm.tuning.relax_model.fuse`, so tuned task names match); one that already holds TIR
    functions (fused, maybe tuned) is only legalized, never re-fused. ``params``
    (name -> array) are bound into ``main``. ``compiler``/``fmt``: see
    :func:`enable_cuda_codegen`. ``export_path``: also export there (checked with
    :func:`has_device_code`). Returns a :class:`CudaBuild`; its ``info.schedule_source`` says
    which schedules were used (also logged at INFO on ``cwm.targets.cuda``).
    """
    import tvm
    from tvm import relax, tirx

    target = cuda_target(target)
    status = enable_cuda_codegen(target, compiler=compiler, fmt=fmt)
    start = time.perf_counter()
    compiles0, compile_s0 = status["compiles"], status["compile_s"]
    if isinstance(mod, tirx.PrimFunc):
        mod = tvm.IRModule({"main": mod})
    relax_mod = _is_relax(mod)
    tuned = []
    if relax_mod:
        from cwm.tuning.relax_model import apply_database, fuse

        if params:
            mod = relax.transform.BindParams("main", params)(mod)
        with target:
            mod = tvm.transform.Sequential([relax.backend.DispatchSampling(),
                                            relax.backend.DispatchSortScan()])(mod)
        if _prim_funcs(mod):  # already legalized/fused (maybe tuned): re-fusing could drop schedules
            with target:
                mod = tvm.transform.Sequential([relax.transform.DecomposeOpsForInference(),
                                                relax.transform.LegalizeOps()])(mod)
        else:
            mod = fuse(mod, target)
        mod, pre = _mark_pre_scheduled(mod)
        if database is not None:
            before = {gv.name_hint for gv, f in _prim_funcs(mod) if _is_marked(f)}
            mod = apply_database(mod, target, database)
            tuned = sorted({gv.name_hint for gv, f in _prim_funcs(mod) if _is_marked(f)} - before)
    else:
        mod, pre = _mark_pre_scheduled(mod)
        if database is not None:
            mod, tuned = _apply_tir_database(mod, target, database)
    mod, default = _apply_default(mod, target)
    if scheduled_by == TUNED:
        tuned, pre = sorted(set(tuned) | set(pre)), []
    source = _schedule_source(tuned, default, pre)
    if relax_mod:
        from tvm.relax.backend.cuda import pipeline as relax_cuda

        @tvm.transform.module_pass(opt_level=0)
        def lower(m, _ctx):
            with target:
                return tvm.transform.Sequential(relax_cuda.dataflow_lower_passes(target)
                                                + relax_cuda.finalize_passes(target))(m)

        with target:
            executable = tvm.compile(mod, target=target, relax_pipeline=lower)
    else:
        with target:
            executable = tvm.compile(mod, target=target)
    stale = [m for m in _device_modules(executable) if m.kind == "cuda" and not m.is_runnable()]
    if stale:  # the fallback (source-only) module: the hook did not take
        raise RuntimeError("tvm.compile produced a source-only CUDA module despite the cwm codegen hook")
    status = cuda_codegen_status()
    info = CudaBuildInfo(kind="relax" if relax_mod else "tir", target=str(target), arch=target_arch(target),
                         compiler=status["compiler"], binary_format=_STATE["last_format"] or fmt,
                         runtime=status["runtime"], schedule_source=source, tuned_functions=tuned,
                         default_scheduled_functions=default, pre_scheduled_functions=pre,
                         device_compiles=status["compiles"] - compiles0,
                         compile_s=status["compile_s"] - compile_s0, build_s=time.perf_counter() - start)
    log.info("build_cuda: %s module for %s, schedules: %s, %s via %s", info.kind, info.arch, source,
             info.binary_format, info.compiler)
    build = CudaBuild(executable, info)
    if export_path is not None:
        build.export_library(export_path)
    return build


# ----------------------------------------------------------------------------- inspection
def _fatbin_entries(data: bytes, start: int) -> tuple[list, int]:
    """Entries of the fatbin at ``start``: ``[{kind, sm, compressed, size}]`` and its end offset."""
    _magic, _version, header, size = struct.unpack_from("<IHHQ", data, start)
    pos, end = start + header, min(len(data), start + header + size)
    entries = []
    while pos + 64 <= end:
        kind, _ver, entry_header, payload = struct.unpack_from("<HHIQ", data, pos)
        if kind not in (1, 2) or entry_header < 32 or payload <= 0:
            break
        sm, = struct.unpack_from("<I", data, pos + 28)
        body = data[pos + entry_header:pos + entry_header + 64]
        if kind == 2:  # ELF machine code
            compressed = body[:4] != b"\x7fELF"
        else:  # PTX text
            compressed = not (body.startswith(b"//") or b".version" in body)
        entries.append({"kind": "ptx" if kind == 1 else "elf", "sm": sm, "compressed": compressed,
                        "size": payload})
        pos += entry_header + payload
    return entries, end


def _cubin_sm(data: bytes, off: int) -> int | None:
    """``sm`` of the CUDA ELF at ``off`` (ELF64; arch in e_flags, encoding by ABI version)."""
    if data[off + 4] != 2:
        return None
    flags, = struct.unpack_from("<I", data, off + 48)
    abi = data[off + 8]
    return (flags >> 8) & 0xFF if abi >= 8 else flags & 0xFF


def _scan(data: bytes) -> dict:
    fatbins, covered = [], []
    magic = struct.pack("<I", FATBIN_MAGIC)
    for m in re.finditer(re.escape(magic), data):
        if any(a <= m.start() < b for a, b in covered):
            continue
        try:
            entries, end = _fatbin_entries(data, m.start())
        except struct.error:
            continue
        if entries:
            fatbins.append(entries)
            covered.append((m.start(), end))
    cubins = []
    for m in re.finditer(re.escape(b"\x7fELF"), data):
        off = m.start()
        if off + 64 > len(data) or any(a <= off < b for a, b in covered):
            continue
        machine, = struct.unpack_from("<H", data, off + 18)
        if machine == EM_CUDA:
            cubins.append(_cubin_sm(data, off))
    ptx_targets = [t.decode() for t in re.findall(rb"\.version\s+\d+\.\d+\s+\.target\s+(sm_\d+[a-z]?)", data)]
    cuda_source = bool(re.search(rb'extern\s+"C"\s+__global__', data))
    archs = {f"sm_{e['sm']}" for entries in fatbins for e in entries}
    archs |= {f"sm_{sm}" for sm in cubins if sm}
    archs |= set(ptx_targets)
    formats = (["fatbin"] if fatbins else []) + (["cubin"] if cubins else []) + (["ptx"] if ptx_targets else [])
    found = bool(fatbins or cubins or ptx_targets)
    return {"has_device_code": found, "formats": formats, "archs": sorted(archs),
            "fatbin_entries": [e for entries in fatbins for e in entries], "n_fatbins": len(fatbins),
            "n_cubins": len(cubins), "n_ptx": len(ptx_targets), "cuda_source": cuda_source,
            "source_only": cuda_source and not found}


def _unpack_archive(path: str, data: bytes) -> bytes:
    """The members of a (possibly gzipped) tar, concatenated (MetaSchedule artifacts are
    ``.tar`` files of objects, gzip-compressed); other files as they are."""
    import io
    import tarfile

    if not (data[:2] == b"\x1f\x8b" or path.endswith(".tar") or data[257:262] == b"ustar"):
        return data
    try:
        with tarfile.open(fileobj=io.BytesIO(data)) as archive:
            return b"".join(archive.extractfile(m).read() for m in archive.getmembers() if m.isfile())
    except (tarfile.TarError, OSError, EOFError):
        if data[:2] == b"\x1f\x8b":
            import gzip

            with contextlib.suppress(OSError, EOFError):
                return gzip.decompress(data)
        return data


def has_device_code(lib_or_path) -> dict:
    """Inspect an exported library (``.so``, a MetaSchedule ``.tar`` artifact (gzipped tar of
    objects), a raw fatbin/cubin/ptx file),
    raw ``bytes``, or a built module/executable (exported to a temporary ``.so`` first).

    Looks for fatbins (magic ``0xBA55ED50``; their entries: ELF machine code or PTX, per
    ``sm``), stand-alone CUDA ELF cubins (``e_machine`` 190) and plain PTX (``.version`` /
    ``.target sm_XX``). Returns ``{has_device_code, formats, archs, fatbin_entries, n_fatbins,
    n_cubins, n_ptx, cuda_source, source_only, path, size}``; ``source_only`` means the file
    holds CUDA C source and no GPU code (what a plain ``tvm.compile`` makes without a driver).
    """
    if isinstance(lib_or_path, (bytes, bytearray)):
        report = _scan(bytes(lib_or_path))
        report.update(path=None, size=len(lib_or_path))
        return report
    if isinstance(lib_or_path, (str, os.PathLike)):
        path = os.fspath(lib_or_path)
        with open(path, "rb") as f:
            data = f.read()
        report = _scan(_unpack_archive(path, data))
        report.update(path=path, size=len(data))
        return report
    if hasattr(lib_or_path, "export_library"):
        with tempfile.TemporaryDirectory(prefix="cwm_devcode_") as tmp:
            path = os.path.join(tmp, "lib.so")
            lib_or_path.export_library(path)
            report = has_device_code(path)
        report["path"] = None
        return report
    raise TypeError(f"has_device_code takes a path, bytes or a module, not {type(lib_or_path).__name__}")
