"""Inspect built CUDA code: does a library, artifact or module hold real GPU code (fatbin/cubin/PTX)?

:func:`has_device_code` is what :meth:`cwm.targets.cuda.CudaBuild.export_library` and the tests
use to tell real device code from the CUDA C source a plain ``tvm.compile`` leaves without a
driver (docs/cuda.md, "has_device_code"). Pure Python; TVM only to export a module given as one.
Importable as ``cwm.targets.cuda.has_device_code`` too.
"""
from __future__ import annotations

import contextlib
import os
import re
import struct
import tempfile

FATBIN_MAGIC = 0xBA55ED50
EM_CUDA = 190  # ELF e_machine of a cubin


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
