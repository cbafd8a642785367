"""The compiled-model directory: :func:`export` writes it, :func:`read` checks and reads it.

:func:`cwm.compile.compiled_model.load` (``cwm.load``) builds the ``CompiledModel`` from what
:func:`read` returns; this module never imports that class (it sits below it).

Layout::

    out/
      manifest.json               what is here, versions, target, signature, sha256 of every file
      model.so                    the Relax VM executable (``export_library``)
      params.safetensors          the weights (absent when the model has none); no pickle anywhere
      tuning/database_workload.json        MetaSchedule JSON database with the records used
      tuning/database_tuning_record.json   (absent when nothing was tuned)

``read`` (so ``load``) refuses (``ArtifactError``, saying what and why) a directory whose files
do not match their recorded sha256, that was written by another TVM version or an incompatible
cwm format, or whose target cannot run here (a cuda model without a CUDA device, an llvm model
for another CPU architecture). A different ``mcpu`` of the same architecture is only a
warning: the code may still run, or may stop on an unsupported instruction. A ``model.so``
shorter than its ELF headers say (a cut-short copy) is refused before it is mapped: loading it
would kill the process with SIGBUS.

``export`` is atomic: it writes a temporary sibling folder (``.NAME.tmp-*``), then moves the old
artifact aside, renames the new one into place and removes the old one; a failure leaves the old
artifact as it was. It refuses a non-empty folder that is not an artifact.

Trust (docs/trust.md): ``model.so`` is native code, and loading it runs it. The sha256 values in
the manifest catch accidents (a truncated copy, a flipped bit), not an attacker, who can re-hash.
``load(path, expect_sha256=...)`` pins the sha256 of ``manifest.json`` itself, which lists the
size and sha256 of every other file: a pinned hash fixes the whole artifact. It is
``CompiledModel.artifact_sha256`` after ``export`` or ``load``, and ``cwm compile`` prints it.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import secrets
import shutil
import sys
import warnings

from cwm.compile.elf_extent import elf_extent
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
    """The versions an artifact records and :func:`read` compares."""
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
    """Write ``model`` (a :class:`~cwm.compile.compiled_model.CompiledModel`) into the folder ``path``.

    Atomic: the artifact is written into a temporary sibling folder and renamed into place, so a
    failure leaves what was in ``path`` as it was. ``path`` must be new, empty, or hold a cwm
    artifact (which is replaced); anything else is refused with ``ArtifactError``. Sets
    ``model.artifact_sha256`` (the sha256 of the new ``manifest.json``, for ``load(expect_sha256=)``).
    """
    path = os.fspath(path)
    final = os.path.realpath(path)  # a symlink to a folder: replace the folder it points at
    _check_destination(path, final)
    parent, base = os.path.split(final)
    os.makedirs(parent, exist_ok=True)
    tmp = _new_sibling(parent, base, "tmp")
    try:
        manifest = _write(model, tmp, path)
        _replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    # files of ``model`` that lived in the replaced folder now live, identical, in the new one
    model.library_path = _moved(model.library_path, final)
    model.database_files = [_moved(f, final) for f in model.database_files]
    model.artifact_sha256 = hashlib.sha256(manifest).hexdigest()
    return path


def is_artifact(path) -> bool:
    """``path`` holds a cwm artifact: a ``manifest.json`` of this format, or only artifact file
    names (a folder an older, non-atomic export left half-written)."""
    try:
        with open(os.path.join(path, MANIFEST), "rb") as f:
            if json.loads(f.read()).get("format") == FORMAT:
                return True
    except (OSError, ValueError, AttributeError):
        pass
    names = set(os.listdir(path))
    return bool(names) and names <= {MANIFEST, f"{MANIFEST}.tmp", LIBRARY, PARAMS, TUNING_DIR}


def check_export_destination(path) -> None:
    """``ArtifactError`` when :func:`export` would refuse ``path`` (a file, or a non-empty folder
    that is not an artifact); lets a caller find out before a long compile."""
    _check_destination(os.fspath(path), os.path.realpath(os.fspath(path)))


def _check_destination(path, final) -> None:
    if os.path.lexists(final) and not os.path.isdir(final):
        raise ArtifactError(f"cannot export to {path}: it exists and is not a folder")
    if os.path.isdir(final) and os.listdir(final) and not is_artifact(final):
        raise ArtifactError(f"cannot export to {path}: the folder is not empty and is not a cwm compiled-model "
                            f"folder (no {MANIFEST}), so export will not replace it; choose a new or empty folder")


def _new_sibling(parent, base, kind) -> str:
    """A new empty folder ``parent/.BASE.KIND-PID-RANDOM`` (mode from the umask, unlike mkdtemp)."""
    while True:
        candidate = os.path.join(parent, f".{base}.{kind}-{os.getpid()}-{secrets.token_hex(4)}")
        try:
            os.mkdir(candidate)
            return candidate
        except FileExistsError:  # pragma: no cover - 32 random bits
            continue


def _replace(new, final) -> None:
    """Rename the folder ``new`` to ``final``; an existing ``final`` is moved aside first and
    removed after (put back when the rename fails)."""
    _fsync_tree(new)
    if not os.path.lexists(final):
        os.rename(new, final)
        return
    aside = _new_sibling(os.path.dirname(final), os.path.basename(final), "old")
    os.rmdir(aside)  # only its (unique) name is wanted
    os.rename(final, aside)
    try:
        os.rename(new, final)
    except BaseException:
        os.rename(aside, final)
        raise
    shutil.rmtree(aside, ignore_errors=True)


def _fsync_tree(folder) -> None:
    for root, _, names in os.walk(folder):
        for name in names:
            fd = os.open(os.path.join(root, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def _moved(file, final):
    if file is None:
        return None
    full = os.path.realpath(file)
    return full if not full.startswith(final + os.sep) else os.path.join(final, os.path.relpath(full, final))


def _write(model, folder, destination) -> bytes:
    """Write the artifact files of ``model`` into the (new, empty) ``folder``; the manifest's bytes."""
    library = os.path.join(folder, LIBRARY)
    if model.library_path is not None:
        shutil.copyfile(model.library_path, library)
    else:
        try:
            model.executable.export_library(library)
        except Exception as error:  # noqa: BLE001 - TVM (and the cross toolchain) raise their own types
            raise ArtifactError(f"could not write {LIBRARY} (target {model.target}): {error}; {destination} was "
                                "left as it was") from error
    files = [LIBRARY]
    if model.params:
        from safetensors.numpy import save_file

        save_file({k: _contiguous(v) for k, v in model.params.items()}, os.path.join(folder, PARAMS))
        files.append(PARAMS)
    tuning = os.path.join(folder, TUNING_DIR)
    for source in model.database_files:
        os.makedirs(tuning, exist_ok=True)
        shutil.copyfile(source, os.path.join(tuning, os.path.basename(source)))
        files.append(f"{TUNING_DIR}/{os.path.basename(source)}")
    for name, data in (getattr(model, "database_data", None) or {}).items():  # a compile whose work dir is gone
        if f"{TUNING_DIR}/{name}" not in files:
            os.makedirs(tuning, exist_ok=True)
            with open(os.path.join(tuning, name), "wb") as f:
                f.write(data)
            files.append(f"{TUNING_DIR}/{name}")
    manifest = {
        "format": FORMAT, "format_version": FORMAT_VERSION,
        "versions": versions(),
        "target": {"kind": model.target.kind.name, "config": json.loads(str(model.target))},
        "host": _host(model.target),
        "frontend": model.frontend,
        "inputs": [s.to_json() for s in model.inputs],
        "outputs": [s.to_json() for s in model.outputs],
        "params": {"mode": model.param_mode, "packed_functions": int(model.report.get("weights_packed", 0)),
                   "tensors": [TensorSpec(k, tuple(v.shape), str(v.dtype)).to_json() for k, v in model.params.items()]},
        "pipeline": model.pipeline,
        "report": model.report,
        "files": {name: {"sha256": sha256_of(os.path.join(folder, name)),
                         "bytes": os.path.getsize(os.path.join(folder, name))} for name in files},
    }
    data = json.dumps(manifest, indent=2, default=_json_default).encode()
    with open(os.path.join(folder, MANIFEST), "wb") as f:
        f.write(data)
    return data


def _contiguous(array):
    import numpy as np

    return np.asarray(array, order="C")  # keeps 0-d arrays 0-d (ascontiguousarray makes them 1-d)


def _json_default(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


def read_manifest(path) -> dict:
    """The manifest of the artifact folder ``path``; ``ArtifactError`` when missing or unreadable."""
    return _parse_manifest(path, _manifest_bytes(path))


def artifact_sha256(path) -> str:
    """The sha256 (hex) of ``path/manifest.json``: what ``load(path, expect_sha256=...)`` pins.

    The manifest lists the size and sha256 of every other file of the artifact, so this one hash
    fixes them all. Compute it where the artifact was built, not from a copy you were sent."""
    return hashlib.sha256(_manifest_bytes(path)).hexdigest()


def _manifest_bytes(path) -> bytes:
    manifest_path = os.path.join(os.fspath(path), MANIFEST)
    if not os.path.isfile(manifest_path):
        raise ArtifactError(f"{path}: no {MANIFEST}; not a cwm compiled-model folder (CompiledModel.export "
                            "writes one)")
    with open(manifest_path, "rb") as f:
        return f.read()


def _parse_manifest(path, data: bytes) -> dict:
    manifest_path = os.path.join(os.fspath(path), MANIFEST)
    try:
        manifest = json.loads(data)
    except ValueError as error:
        raise ArtifactError(f"{manifest_path} is corrupted: not valid JSON ({error})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
        raise ArtifactError(f"{manifest_path}: format {found!r}, expected {FORMAT!r}")
    if int(manifest.get("format_version", 0)) != FORMAT_VERSION:
        raise ArtifactError(f"{manifest_path}: artifact format version {manifest.get('format_version')}, this cwm "
                            f"reads version {FORMAT_VERSION}: recompile the model with this cwm")
    return manifest


def _expected_sha256(value) -> str:
    text = str(value).strip().lower()
    text = text[len("sha256:"):] if text.startswith("sha256:") else text
    if len(text) != 64 or any(c not in "0123456789abcdef" for c in text):
        raise ValueError(f"expect_sha256 must be 64 hex digits (the sha256 of manifest.json, e.g. "
                         f"CompiledModel.artifact_sha256 or the line cwm compile prints), not {value!r}")
    return text


def verify_pin(path, data: bytes, expect_sha256) -> str:
    """The sha256 of the manifest bytes ``data``; ``ArtifactError`` when it is not ``expect_sha256``."""
    digest = hashlib.sha256(data).hexdigest()
    if expect_sha256 is not None:
        expected = _expected_sha256(expect_sha256)
        if digest != expected:
            raise ArtifactError(f"{path}: {MANIFEST} has sha256 {digest}, expected {expected} (expect_sha256): "
                                "this is not the artifact that was pinned; its model.so was not loaded")
    return digest


def check_library(library) -> None:
    """``ArtifactError`` when the shared library ``library`` is shorter than its ELF headers say
    (mapping it would kill the process with SIGBUS), or, on Linux, is not an ELF file at all."""
    size = os.path.getsize(library)
    with open(library, "rb") as f:
        try:
            need = elf_extent(f)
        except ValueError:
            if sys.platform.startswith("linux"):
                raise ArtifactError(f"{library} is not an ELF shared library (it does not start with the ELF "
                                    "magic): re-export the model") from None
            return  # another platform's format (e.g. Mach-O): the loader checks it
    if size < need:
        raise ArtifactError(f"{library} is truncated ({size} bytes, ELF headers need {need}): the file was cut "
                            "short (an interrupted copy?); copy the artifact again or re-export it")


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


def read(path, check_versions: bool = True, check_target: bool = True, expect_sha256=None) -> dict:
    """The folder ``path``, verified first, as the keyword arguments of
    :class:`~cwm.compile.compiled_model.CompiledModel` plus ``artifact_sha256`` (what
    :func:`cwm.compile.compiled_model.load` builds the model from).

    ``expect_sha256``: the sha256 (hex) that ``manifest.json`` must have (see :func:`artifact_sha256`);
    a different one is refused before anything else is read. Loading runs the artifact's native
    code: load only artifacts you built or whose hash you pinned (docs/trust.md)."""
    import tvm

    path = os.fspath(path)
    data = _manifest_bytes(path)  # read once: the bytes that are pinned are the bytes that are used
    digest = verify_pin(path, data, expect_sha256)
    manifest = _parse_manifest(path, data)
    verify_files(path, manifest)
    if check_versions:
        verify_versions(path, manifest)
    if check_target:
        verify_target(path, manifest)
    from cwm.compile.weight_layout import PARAM_MODES

    mode = manifest.get("params", {}).get("mode", "none")
    if mode not in PARAM_MODES:
        raise ArtifactError(f"{path}: its weights are in mode {mode!r}, which this cwm does not know "
                            f"({', '.join(PARAM_MODES)}); it was written by a newer cwm: upgrade cwm or compile again")
    library = os.path.join(path, LIBRARY)
    check_library(library)
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
    return {"executable": executable, "target": target,
            "inputs": [TensorSpec.from_json(s) for s in manifest["inputs"]],
            "outputs": [TensorSpec.from_json(s) for s in manifest["outputs"]], "params": params,
            "param_mode": mode, "report": manifest.get("report", {}),
            "pipeline": manifest.get("pipeline", ""), "library_path": library, "database_files": database,
            "frontend": manifest.get("frontend", ""), "artifact_sha256": digest}
