"""The compiled-model directory: :func:`export` writes it, :func:`load` checks and reads it.

Layout::

    out/
      manifest.json               what is here, versions, target, signature, sha256 of every file
      model.so                    the Relax VM executable (``export_library``)
      params.safetensors          the weights (absent when the model has none); no pickle anywhere
      tuning/database_workload.json        MetaSchedule JSON database with the records used
      tuning/database_tuning_record.json   (absent when nothing was tuned)

``load`` refuses (``ArtifactError``, saying what and why) a directory whose files do not
match their recorded sha256, that was written by another TVM version or an incompatible cwm
format, or whose target cannot run here (a cuda model without a CUDA device, an llvm model
for another CPU architecture). A different ``mcpu`` of the same architecture is only a
warning: the code may still run, or may stop on an unsupported instruction.
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import warnings

from cwm.compile.errors import ArtifactError
from cwm.compile.specs import TensorSpec
from cwm.dataset.store import sha256_file as sha256_of  # the one streaming sha256 helper

FORMAT = "cwm-compiled-model"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
LIBRARY = "model.so"
PARAMS = "params.safetensors"
TUNING_DIR = "tuning"

_ARCH_ALIASES = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}


def _arch(name: str) -> str:
    name = (name or "").lower()
    return _ARCH_ALIASES.get(name, name)


def versions() -> dict:
    """The versions an artifact records and :func:`load` compares."""
    import tvm

    import cwm

    try:
        import tvm_ffi

        ffi = getattr(tvm_ffi, "__version__", "")
    except ImportError:  # pragma: no cover
        ffi = ""
    return {"cwm": cwm.__version__, "tvm": tvm.__version__, "tvm_ffi": ffi,
            "python": platform.python_version()}


def _host(target) -> dict:
    host = {"machine": _arch(platform.machine()), "system": platform.system()}
    if target.kind.name == "llvm":
        import tvm

        host["cpu"] = str(tvm.target.codegen.llvm_get_system_cpu())
    return host


def export(model, path) -> str:
    """Write ``model`` (a :class:`~cwm.compile.compiled_model.CompiledModel`) into the folder ``path``."""
    path = os.fspath(path)
    os.makedirs(path, exist_ok=True)
    old = os.path.join(path, MANIFEST)
    if os.path.exists(old):
        os.remove(old)  # the manifest goes last: a half-written folder never looks complete
    library = os.path.join(path, LIBRARY)
    if model.library_path is not None and os.path.abspath(model.library_path) != os.path.abspath(library):
        shutil.copyfile(model.library_path, library)
    elif model.library_path is None:
        model.executable.export_library(library)
    files = [LIBRARY]
    params_path = os.path.join(path, PARAMS)
    if model.params:
        from safetensors.numpy import save_file

        save_file({k: _contiguous(v) for k, v in model.params.items()}, params_path)
        files.append(PARAMS)
    elif os.path.exists(params_path):
        os.remove(params_path)
    tuning = os.path.join(path, TUNING_DIR)
    sources = [os.path.abspath(f) for f in model.database_files]
    if os.path.isdir(tuning) and not any(os.path.dirname(s) == os.path.abspath(tuning) for s in sources):
        shutil.rmtree(tuning)
    for source in sources:
        os.makedirs(tuning, exist_ok=True)
        target = os.path.join(tuning, os.path.basename(source))
        if os.path.abspath(target) != source:
            shutil.copyfile(source, target)
        files.append(f"{TUNING_DIR}/{os.path.basename(source)}")
    manifest = {
        "format": FORMAT, "format_version": FORMAT_VERSION,
        "versions": versions(),
        "target": {"kind": model.target.kind.name, "config": json.loads(str(model.target))},
        "host": _host(model.target),
        "frontend": model.frontend,
        "inputs": [s.to_json() for s in model.inputs],
        "outputs": [s.to_json() for s in model.outputs],
        "params": {"mode": model.param_mode,
                   "tensors": [TensorSpec(k, tuple(v.shape), str(v.dtype)).to_json() for k, v in model.params.items()]},
        "pipeline": model.pipeline,
        "report": model.report,
        "files": {name: {"sha256": sha256_of(os.path.join(path, name)),
                         "bytes": os.path.getsize(os.path.join(path, name))} for name in files},
    }
    tmp = f"{old}.tmp"
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=2, default=_json_default)
    os.replace(tmp, old)
    return path


def _contiguous(array):
    import numpy as np

    return np.ascontiguousarray(array)


def _json_default(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


def read_manifest(path) -> dict:
    """The manifest of the artifact folder ``path``; ``ArtifactError`` when missing or unreadable."""
    manifest_path = os.path.join(os.fspath(path), MANIFEST)
    if not os.path.isfile(manifest_path):
        raise ArtifactError(f"{path}: no {MANIFEST}; not a cwm compiled-model folder (CompiledModel.export "
                            "writes one)")
    try:
        with open(manifest_path) as f:
            manifest = json.load(f)
    except ValueError as error:
        raise ArtifactError(f"{manifest_path} is corrupted: not valid JSON ({error})") from None
    if manifest.get("format") != FORMAT:
        raise ArtifactError(f"{manifest_path}: format {manifest.get('format')!r}, expected {FORMAT!r}")
    if int(manifest.get("format_version", 0)) != FORMAT_VERSION:
        raise ArtifactError(f"{manifest_path}: artifact format version {manifest.get('format_version')}, this cwm "
                            f"reads version {FORMAT_VERSION}: recompile the model with this cwm")
    return manifest


def verify_files(path, manifest) -> None:
    """Every file of the manifest exists with its recorded size and sha256."""
    files = manifest.get("files", {})
    if LIBRARY not in files:
        raise ArtifactError(f"{path}: the manifest lists no {LIBRARY}")
    for name, info in files.items():
        full = os.path.join(os.fspath(path), name)
        if not os.path.isfile(full):
            raise ArtifactError(f"{path}: {name} is missing (listed in {MANIFEST})")
        size = os.path.getsize(full)
        if size != info.get("bytes", size):
            raise ArtifactError(f"{path}: {name} is corrupted: {size} bytes, the manifest records {info['bytes']}")
        digest = sha256_of(full)
        if digest != info.get("sha256"):
            raise ArtifactError(f"{path}: {name} is corrupted: sha256 {digest[:16]}..., the manifest records "
                                f"{str(info.get('sha256'))[:16]}...")


def verify_versions(path, manifest) -> None:
    """Same TVM version (the library's ABI), same cwm major.minor."""
    recorded, here = manifest.get("versions", {}), versions()
    if recorded.get("tvm") != here["tvm"]:
        raise ArtifactError(f"{path} was built with TVM {recorded.get('tvm')}, this is TVM {here['tvm']}: recompile "
                            "the model here, or cwm.load(..., check_versions=False) to try it anyway")
    if recorded.get("cwm", "").split(".")[:2] != here["cwm"].split(".")[:2]:
        raise ArtifactError(f"{path} was written by cwm {recorded.get('cwm')}, this is cwm {here['cwm']}: recompile "
                            "the model here, or cwm.load(..., check_versions=False) to try it anyway")


def verify_target(path, manifest) -> None:
    """The artifact's target can run on this machine (see the module docstring)."""
    import tvm

    kind = manifest.get("target", {}).get("kind")
    if kind == "llvm":
        built_on = _arch(manifest.get("host", {}).get("machine", ""))
        triple = manifest.get("target", {}).get("config", {}).get("mtriple") or ""
        arch = _arch(triple.split("-")[0]) if triple else built_on
        here = _arch(platform.machine())
        if arch and arch != here:
            raise ArtifactError(f"{path} holds {arch} code (target llvm) and this machine is {here}: "
                                "compile the model for this machine")
        cpu = manifest.get("target", {}).get("config", {}).get("mcpu")
        this_cpu = str(tvm.target.codegen.llvm_get_system_cpu())
        if cpu and cpu != this_cpu:
            warnings.warn(f"{path} was compiled for CPU {cpu!r}, this one is {this_cpu!r}: it may run slower "
                          "or stop on an unsupported instruction", RuntimeWarning, stacklevel=3)
    elif kind == "cuda":
        if not tvm.runtime.device("cuda", 0).exist:
            raise ArtifactError(f"{path} was compiled for cuda and this machine has no usable CUDA device "
                                f"(tvm.cuda(0).exist is False)")
    else:
        raise ArtifactError(f"{path}: unknown target kind {kind!r} (cwm builds llvm and cuda)")


def load(path, check_versions: bool = True, check_target: bool = True):
    """The :class:`~cwm.compile.compiled_model.CompiledModel` in the folder ``path``, verified first."""
    import tvm

    from cwm.compile.compiled_model import CompiledModel

    path = os.fspath(path)
    manifest = read_manifest(path)
    verify_files(path, manifest)
    if check_versions:
        verify_versions(path, manifest)
    if check_target:
        verify_target(path, manifest)
    library = os.path.join(path, LIBRARY)
    try:
        executable = tvm.runtime.load_module(library)
    except Exception as error:  # noqa: BLE001 - TVM raises its own error types
        raise ArtifactError(f"{library} could not be loaded: {error}") from error
    params = {}
    tensors = manifest.get("params", {}).get("tensors", [])
    if tensors:
        from safetensors.numpy import load_file

        stored = load_file(os.path.join(path, PARAMS))
        missing = [t["name"] for t in tensors if t["name"] not in stored]
        if missing:
            raise ArtifactError(f"{path}: {PARAMS} lacks weight(s) {missing}")
        params = {t["name"]: stored[t["name"]] for t in tensors}  # main's order, from the manifest
    target = tvm.target.Target(manifest["target"]["config"])
    database = [os.path.join(path, name) for name in manifest.get("files", {}) if name.startswith(TUNING_DIR + "/")]
    return CompiledModel(executable, target, [TensorSpec.from_json(s) for s in manifest["inputs"]],
                         [TensorSpec.from_json(s) for s in manifest["outputs"]], params,
                         manifest.get("params", {}).get("mode", "none"), manifest.get("report", {}),
                         manifest.get("pipeline", ""), library, database, manifest.get("frontend", ""))
