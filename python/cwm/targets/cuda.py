"""Build CUDA modules that load and run: real GPU code (fatbin/cubin/PTX) inside, not CUDA source.

Why a plain ``tvm.compile`` for cuda gives a module holding only CUDA C source here, and how
:func:`enable_cuda_codegen` fixes it (TVM's CUDA runtime library, the build-only driver stub,
the nvcc/NVRTC compile hook), is the toolchain's part: :mod:`cwm.cuda_toolchain` (docs/cuda.md).
Its public names (:func:`enable_cuda_codegen`, :func:`cuda_codegen_status`, :func:`cuda_target`,
:func:`target_arch`, :func:`find_nvcc`, :class:`CudaUnavailable`) are importable from here too.

The steps of a CUDA build, one function each; the cuda pipelines of ``cwm.compile`` run them as
passes (docs/compile.md, "What a CUDA compile runs"):

* :func:`gpu_library_dispatch` (``cwm-gpu-dispatch``): sort/scan/top-k/sampling ops -> TVM's
  GPU kernels;
* :func:`apply_default_gpu_schedules` (``cwm-gpu-default-schedules``): DLight for every function
  without a schedule;
* :func:`build_device_code` (``cwm-build`` for cuda): ``tvm.compile`` with nvcc/NVRTC device code.

Unscheduled TIR cannot run on a GPU (no thread bindings), so every function needs a schedule:
a tuned one (``cwm-apply-db``), one it arrived with, or TVM's default GPU schedules (DLight:
``Matmul, GEMV, Reduction, GeneralReduction, Fallback``); :class:`CudaBuildInfo` says which.
:func:`build_cuda` is the one-call form for a TIR or Relax module outside ``cwm.compile``
(fused or not, with an optional database): the same functions, plus the fusion of
:func:`cwm.partition.fuse` for a module that is not fused yet. :func:`has_device_code`
(:mod:`cwm.targets.cuda_inspect`) inspects an exported library.
"""
from __future__ import annotations

import logging
import re
import time
from dataclasses import asdict, dataclass, field
from typing import Any

# the toolchain's names, re-exported: docs and callers use them as cwm.targets.cuda.<name>
from cwm.cuda_toolchain import (FORMATS, CudaUnavailable, cuda_codegen_status, cuda_target,  # noqa: F401
                                enable_cuda_codegen, find_nvcc, last_binary_format, target_arch)
from cwm.targets.cuda_inspect import EM_CUDA, FATBIN_MAGIC, has_device_code  # noqa: F401

log = logging.getLogger("cwm.targets.cuda")

#: schedule sources reported in :attr:`CudaBuildInfo.schedule_source`
DEFAULT_SCHEDULES = "default GPU schedules"
TUNED = "tuned with CWM"
PRE_SCHEDULED = "pre-scheduled (as given)"


# ----------------------------------------------------------------------------- results
@dataclass
class CudaBuildInfo:
    """How a CUDA module was built (:func:`build_device_code`, :func:`build_cuda`)."""

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


def schedule_source(tuned, default, pre) -> str:
    """One label when all functions share a source, else ``"label: k of n functions, ..."``."""
    groups = [(TUNED, tuned), (PRE_SCHEDULED, pre), (DEFAULT_SCHEDULES, default)]
    used = [(label, names) for label, names in groups if names]
    if not used:
        return "no TIR functions"
    if len(used) == 1:
        return used[0][0]
    total = sum(len(names) for _, names in used)
    return ", ".join(f"{label}: {len(names)} of {total} functions" for label, names in used)


# ----------------------------------------------------------------------------- schedules
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


def _is_relax(mod) -> bool:
    from tvm import relax

    return any(isinstance(f, relax.Function) for _, f in mod.functions_items())


def _dispatch(mod, target):
    import tvm
    from tvm import relax

    with target:
        return tvm.transform.Sequential([relax.backend.DispatchSampling(), relax.backend.DispatchSortScan()])(mod)


def gpu_library_dispatch(mod, target):
    """``cwm-gpu-dispatch``: TVM's cuda library dispatch on a fused Relax module.

    ``LegalizeOps`` leaves sort, argsort, top-k, cumsum/cumprod and sampling ops alone for GPU
    targets; ``DispatchSampling`` and ``DispatchSortScan`` (``library_dispatch_passes`` of
    ``tvm.relax.backend.cuda.pipeline``) turn them into TVM's GPU kernels, which arrive
    scheduled. ``DecomposeOpsForInference`` + ``LegalizeOps`` then legalize what is left (nothing,
    for the ops TVM 0.27 dispatches). A module without such ops passes through unchanged.
    """
    import tvm

    from cwm.partition import legalize_passes

    mod = _dispatch(mod, target)
    with target:
        return tvm.transform.Sequential(legalize_passes())(mod)


def default_gpu_schedules():
    """DLight's default GPU rules, as the cuda pipeline of TVM applies them."""
    from tvm.s_tir import dlight as dl

    return dl.ApplyDefaultSchedule(dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.Reduction(),
                                   dl.gpu.GeneralReduction(), dl.gpu.Fallback())


def mark_pre_scheduled(mod):
    """``(copy of mod, names)``: functions that arrive scheduled (``tirx.is_scheduled``, e.g. from
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


def apply_default_gpu_schedules(mod, target):
    """``cwm-gpu-default-schedules``: ``(mod, default, scheduled)``, every TIR function of ``mod``
    scheduled for the GPU.

    Functions that arrive scheduled (``scheduled``: a tuned schedule from ``cwm-apply-db``, a
    dispatched GPU kernel, anything binding threads) are kept; every other one gets TVM's default
    GPU schedule (``default``: DLight, :func:`default_gpu_schedules`). The input is not mutated.
    """
    mod, scheduled = mark_pre_scheduled(mod)
    with target:
        mod = default_gpu_schedules()(mod)
    default = sorted({gv.name_hint for gv, f in _prim_funcs(mod) if _is_marked(f)} - set(scheduled))
    return mod, default, scheduled


def unscheduled_functions(mod) -> list:
    """Names of the TIR functions of ``mod`` that have no GPU schedule (not marked, no thread bindings)."""
    return sorted(gv.name_hint for gv, f in _prim_funcs(mod) if not _is_marked(f) and not has_thread_bindings(f))


# ----------------------------------------------------------------------------- build
def _device_modules(executable):
    """The imported (device) modules of a built executable, recursively."""
    stack, out = list(executable.mod.imports), []
    while stack:
        module = stack.pop()
        out.append(module)
        stack.extend(module.imports)
    return out


def build_device_code(mod, target="cuda", *, compiler: str = "auto", fmt: str = "fatbin",
                      tuned=(), default=(), pre=()) -> CudaBuild:
    """``cwm-build`` for cuda: ``tvm.compile`` a scheduled TIR or Relax module with real device code.

    Enables the nvcc/NVRTC hook (:func:`enable_cuda_codegen` with ``compiler``/``fmt``), then
    builds: a Relax module with the rest of TVM's cuda pipeline (dataflow lowering and
    finalization, ``tvm.relax.backend.cuda.pipeline``; its dispatch, legalization, fusion and
    DLight steps are the passes before ``cwm-build``), a TIR module with ``tvm.compile``. Every
    TIR function must have its schedule already. Raises ``RuntimeError`` when the device module
    is the source-only fallback (the hook did not take). ``tuned``/``default``/``pre``: the
    function names per schedule source, for :class:`CudaBuildInfo`.
    """
    import tvm

    target = cuda_target(target)
    status = enable_cuda_codegen(target, compiler=compiler, fmt=fmt)
    start = time.perf_counter()
    compiles0, compile_s0 = status["compiles"], status["compile_s"]
    relax_mod = _is_relax(mod)
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
    tuned, default, pre = sorted(tuned), sorted(default), sorted(pre)
    info = CudaBuildInfo(kind="relax" if relax_mod else "tir", target=str(target), arch=target_arch(target),
                         compiler=status["compiler"], binary_format=last_binary_format() or fmt,
                         runtime=status["runtime"], schedule_source=schedule_source(tuned, default, pre),
                         tuned_functions=tuned, default_scheduled_functions=default, pre_scheduled_functions=pre,
                         device_compiles=status["compiles"] - compiles0,
                         compile_s=status["compile_s"] - compile_s0, build_s=time.perf_counter() - start)
    log.info("cuda build: %s module for %s, schedules: %s, %s via %s", info.kind, info.arch,
             info.schedule_source, info.binary_format, info.compiler)
    return CudaBuild(executable, info)


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


def build_cuda(mod, target="cuda", *, database=None, params=None, compiler: str = "auto", fmt: str = "fatbin",
               export_path: str | None = None, scheduled_by: str | None = None) -> CudaBuild:
    """Build ``mod`` (TIR PrimFunc/IRModule, or a Relax IRModule) for ``target`` with real device code.

    The one-call form of the cuda pipeline's steps for modules that did not come through
    ``cwm.compile`` (which runs them as passes instead). A Relax module without TIR functions is
    dispatched (TVM's cuda library dispatch) and fused with :func:`cwm.partition.fuse`
    (``cwm-partition``'s fusion, so tuned task names match); one that already holds TIR functions
    (fused, maybe tuned) goes through :func:`gpu_library_dispatch` only, never re-fused.
    ``params`` (name -> array) are bound into ``main`` first. Schedules: a function found in the
    MetaSchedule ``database`` (e.g. from ``cwm.tune``) gets its tuned schedule (Relax:
    ``cwm-apply-db``'s :func:`cwm.tuning.relax_model.apply_database`); functions that arrive
    scheduled are kept and counted as ``scheduled_by`` (default :data:`PRE_SCHEDULED`; pass
    :data:`TUNED` when you applied a CWM database yourself); every other function gets DLight
    (:func:`apply_default_gpu_schedules`). Then :func:`build_device_code` (``compiler``/``fmt``:
    see :func:`enable_cuda_codegen`). ``export_path``: also export there (checked with
    :func:`has_device_code`). Returns a :class:`CudaBuild`; its ``info.schedule_source`` says
    which schedules were used (also logged at INFO on ``cwm.targets.cuda``).
    """
    import tvm
    from tvm import relax, tirx

    start = time.perf_counter()
    target = cuda_target(target)
    enable_cuda_codegen(target, compiler=compiler, fmt=fmt)  # fail early when no device code can be made
    if isinstance(mod, tirx.PrimFunc):
        mod = tvm.IRModule({"main": mod})
    relax_mod = _is_relax(mod)
    if relax_mod:
        if params:
            mod = relax.transform.BindParams("main", params)(mod)
        if _prim_funcs(mod):  # already legalized/fused (maybe tuned): re-fusing could drop schedules
            mod = gpu_library_dispatch(mod, target)
        else:
            from cwm.partition import fuse

            mod = fuse(_dispatch(mod, target), target)
    mod, pre = mark_pre_scheduled(mod)
    tuned = []
    if database is not None and relax_mod:
        from cwm.tuning.relax_model import apply_database

        marked = {gv.name_hint for gv, f in _prim_funcs(mod) if _is_marked(f)}
        mod = apply_database(mod, target, database)
        tuned = sorted({gv.name_hint for gv, f in _prim_funcs(mod) if _is_marked(f)} - marked)
    elif database is not None:
        mod, tuned = _apply_tir_database(mod, target, database)
    mod, default, _scheduled = apply_default_gpu_schedules(mod, target)
    if scheduled_by == TUNED:
        tuned, pre = sorted(set(tuned) | set(pre)), []
    build = build_device_code(mod, target, compiler=compiler, fmt=fmt, tuned=tuned, default=default, pre=pre)
    build.info.build_s = time.perf_counter() - start
    if export_path is not None:
        build.export_library(export_path)
    return build
