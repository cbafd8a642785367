"""Build CUDA modules that load and run: real GPU code (fatbin/cubin/PTX) inside, not CUDA source.

Why a plain ``tvm.compile`` for cuda gives a module holding only CUDA C source here, and how
:func:`enable_cuda_codegen` fixes it (TVM's CUDA runtime library, the build-only driver stub,
the nvcc/NVRTC compile hook), is the toolchain's part: :mod:`cwm.cuda_toolchain` (docs/cuda.md).
Its public names (:func:`enable_cuda_codegen`, :func:`cuda_codegen_status`, :func:`cuda_target`,
:func:`target_arch`, :func:`find_nvcc`, :class:`CudaUnavailable`) are importable from here too.

:func:`build_cuda` builds a TIR or Relax module with it. Unscheduled TIR cannot run on a GPU
(no thread bindings), so every function gets a schedule: the best record of a MetaSchedule
``database`` when one is given ("tuned with CWM"), otherwise TVM's default GPU schedules
(DLight: ``Matmul, GEMV, Reduction, GeneralReduction, Fallback``); the returned
:class:`CudaBuildInfo` says which. :func:`has_device_code` inspects an exported library.
"""
from __future__ import annotations

import contextlib
import logging
import os
import re
import struct
import tempfile
import time
from dataclasses import asdict, dataclass, field
from typing import Any

# the toolchain's names, re-exported: docs and callers use them as cwm.targets.cuda.<name>
from cwm.cuda_toolchain import (FORMATS, CudaUnavailable, cuda_codegen_status, cuda_target,  # noqa: F401
                                enable_cuda_codegen, find_nvcc, last_binary_format, target_arch)

log = logging.getLogger("cwm.targets.cuda")

#: schedule sources reported in :attr:`CudaBuildInfo.schedule_source`
DEFAULT_SCHEDULES = "default GPU schedules"
TUNED = "tuned with CWM"
PRE_SCHEDULED = "pre-scheduled (as given)"

FATBIN_MAGIC = 0xBA55ED50
EM_CUDA = 190  # ELF e_machine of a cubin


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
    :func:`cwm.partition.fuse`, so tuned task names match); one that already holds TIR
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
        from cwm.partition import fuse
        from cwm.tuning.relax_model import apply_database

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
                         compiler=status["compiler"], binary_format=last_binary_format() or fmt,
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
