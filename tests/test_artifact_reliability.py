"""Artifact reliability and trust (issue 13): atomic export, refusal of a foreign folder, the pinned
manifest hash (``cwm.load(dir, expect_sha256=...)``), no leftover temporary work dirs, and a
truncated ``model.so`` refused before it is mapped (it used to kill the process with SIGBUS)."""
from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import cwm
from cwm.compile import artifact
from cwm.compile.errors import ArtifactError, CompileError
from tests.compile_helpers import tiny_onnx  # noqa: F401


@pytest.fixture(scope="module")
def compiled(tiny_onnx, tmp_path_factory):
    """The tiny CNN with default schedules (no tuning: seconds)."""
    return cwm.compile(tiny_onnx, pipeline="no-tune", work_dir=tmp_path_factory.mktemp("wd"))


@pytest.fixture(scope="module")
def exported(compiled, tmp_path_factory):
    return compiled.export(tmp_path_factory.mktemp("artifact") / "out")


@pytest.fixture()
def x():
    from cwm.frontends import tiny_cnn

    return tiny_cnn.example_input(0)


def _snapshot(folder) -> dict:
    out = {}
    for root, _, files in os.walk(folder):
        for name in files:
            full = os.path.join(root, name)
            out[os.path.relpath(full, folder)] = open(full, "rb").read()
    return out


class _FailingExecutable:
    """Stands for a cross-compiled (e.g. aarch64) executable whose export_library fails here."""

    def export_library(self, path):
        with open(path, "wb") as f:
            f.write(b"half a library")
        raise RuntimeError("cross compiler aarch64-linux-gnu-g++ not found")


# ----------------------------------------------------------------------------------- finding 2
def test_failed_export_leaves_the_old_artifact_intact(compiled, tmp_path, x):
    out = compiled.export(tmp_path / "out")
    before = _snapshot(out)
    broken = copy.copy(compiled)
    broken.executable, broken.library_path = _FailingExecutable(), None
    with pytest.raises(ArtifactError, match="could not write model.so.*aarch64"):
        broken.export(out)
    assert _snapshot(out) == before
    assert os.listdir(tmp_path) == ["out"]  # no temporary sibling left behind
    np.testing.assert_array_equal(cwm.load(out)(x), compiled(x))


def test_export_failing_after_the_library_leaves_the_old_artifact_intact(compiled, tmp_path, monkeypatch):
    out = compiled.export(tmp_path / "out")
    before = _snapshot(out)

    def fail():
        raise OSError("disk full")

    monkeypatch.setattr(artifact, "versions", fail)
    with pytest.raises(OSError, match="disk full"):
        compiled.export(out)
    monkeypatch.undo()
    assert _snapshot(out) == before and os.listdir(tmp_path) == ["out"]
    cwm.load(out)


def test_export_refuses_a_folder_that_is_not_an_artifact(compiled, tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me")
    with pytest.raises(ArtifactError, match="not empty and is not a cwm compiled-model folder"):
        compiled.export(folder)
    assert os.listdir(folder) == ["notes.txt"] and (folder / "notes.txt").read_text() == "keep me"
    (tmp_path / "file").write_text("x")
    with pytest.raises(ArtifactError, match="not a folder"):
        compiled.export(tmp_path / "file")
    (tmp_path / "empty").mkdir()
    compiled.export(tmp_path / "empty")  # an empty folder is fine
    cwm.load(tmp_path / "empty")


def test_export_replaces_an_artifact_even_its_own_folder(compiled, exported, tmp_path, x):
    out = tmp_path / "out"
    shutil.copytree(exported, out)
    (out / "stale.txt").write_text("from an older export")
    loaded = cwm.load(out)
    loaded.export(out)  # the model's own library is the source of the copy
    assert "stale.txt" not in os.listdir(out)
    loaded.export(out)  # and again: the model now points at the new folder's files
    np.testing.assert_array_equal(cwm.load(out)(x), compiled(x))
    assert sorted(os.listdir(tmp_path)) == ["out"]


# ----------------------------------------------------------------------------------- finding 6
def test_pinned_manifest_hash(compiled, exported, tmp_path):
    pinned = hashlib.sha256(open(os.path.join(exported, "manifest.json"), "rb").read()).hexdigest()
    assert compiled.artifact_sha256 == pinned == artifact.artifact_sha256(exported)
    model = cwm.load(exported, expect_sha256=pinned)
    assert model.artifact_sha256 == pinned
    cwm.load(exported, expect_sha256="sha256:" + pinned.upper())
    with pytest.raises(ArtifactError, match="manifest.json has sha256 .*expected"):
        cwm.load(exported, expect_sha256="0" * 64)
    with pytest.raises(ValueError, match="64 hex digits"):
        cwm.load(exported, expect_sha256="abc")
    # a consistent tampering (file changed, manifest re-hashed) passes the manifest check, not the pin
    folder = tmp_path / "tampered"
    shutil.copytree(exported, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["report"]["note"] = "changed by someone"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    cwm.load(folder)
    with pytest.raises(ArtifactError, match="expected " + pinned):
        cwm.load(folder, expect_sha256=pinned)


def test_cli_prints_the_hash_to_pin(tiny_onnx, tmp_path, capsys):
    from cwm.compile.cli import main

    out = tmp_path / "out"
    assert main([tiny_onnx, "-o", str(out), "--pipeline", "no-tune", "--no-baseline", "--no-progress",
                 "--work-dir", str(tmp_path / "wd")]) == 0
    pinned = artifact.artifact_sha256(out)
    assert f"expect_sha256={pinned!r}" in capsys.readouterr().out
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    assert main([tiny_onnx, "-o", str(foreign), "--pipeline", "no-tune", "--no-progress"]) == 2  # before compiling
    assert "is not empty and is not a cwm compiled-model folder" in capsys.readouterr().err


# ---------------------------------------------------------------------------- finding 11: tmp
@pytest.fixture()
def private_tmp(tmp_path, monkeypatch):
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def test_compile_without_work_dir_removes_its_temporary_folder(tiny_onnx, private_tmp, tmp_path, x):
    model = cwm.compile(tiny_onnx, pipeline="cwm-import,cwm-partition,cwm-tune{trials=0},cwm-apply-db,cwm-build",
                        cost_model="random", measure_baseline=False)
    assert os.listdir(private_tmp) == []
    assert model.report["work_dir"] is None
    out = model.export(tmp_path / "out")  # the tuning database was kept for the artifact
    assert sorted(os.listdir(os.path.join(out, "tuning"))) == ["database_tuning_record.json",
                                                               "database_workload.json"]
    cwm.load(out)(x)


def test_failed_compile_without_work_dir_removes_its_temporary_folder(tiny_onnx, private_tmp, tmp_path):
    with pytest.raises(CompileError, match="no tuning database"):
        cwm.compile(tiny_onnx, pipeline="from-db")
    assert os.listdir(private_tmp) == []
    with pytest.raises(CompileError, match="no tuning database"):
        cwm.compile.run_pipeline(tiny_onnx, pipeline="from-db")
    assert os.listdir(private_tmp) == []
    work_dir = tmp_path / "mine"  # the user's own work_dir is kept, failure or not
    with pytest.raises(CompileError):
        cwm.compile(tiny_onnx, pipeline="from-db", work_dir=work_dir)
    assert work_dir.is_dir()


# ---------------------------------------------------------------------- finding 11: truncation
def _rehash(folder):
    manifest = json.loads((folder / "manifest.json").read_text())
    for name, info in manifest["files"].items():
        data = (folder / name).read_bytes()
        info.update(sha256=hashlib.sha256(data).hexdigest(), bytes=len(data))
    (folder / "manifest.json").write_text(json.dumps(manifest))


def test_truncated_library_is_refused_not_a_sigbus(exported, tmp_path):
    folder = tmp_path / "truncated"
    shutil.copytree(exported, folder)
    data = (folder / "model.so").read_bytes()
    (folder / "model.so").write_bytes(data[:len(data) // 2])
    _rehash(folder)
    code = f"import cwm\ncwm.load({str(folder)!r})"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, (result.returncode, result.stderr[-2000:])  # -7 was SIGBUS
    assert f"model.so is truncated ({len(data) // 2} bytes, ELF headers need" in result.stderr
    with pytest.raises(ArtifactError, match=r"model.so is truncated \(\d+ bytes, ELF headers need \d+\)"):
        cwm.load(folder)


@pytest.mark.parametrize("cut", [0, 10, 63, 64 + 56 * 2, -1])
def test_elf_extent_check(exported, tmp_path, cut):
    data = open(os.path.join(exported, "model.so"), "rb").read()
    need = artifact.elf_extent(data)
    assert len(data) >= need > len(data) // 2  # the section header table is near the end
    path = tmp_path / "lib.so"
    path.write_bytes(data[:cut])
    with pytest.raises(ArtifactError, match=f"lib.so is truncated \\({len(data[:cut])} bytes"):
        artifact.check_library(str(path))
    path.write_bytes(b"MZ not an elf file at all" * 4)
    with pytest.raises(ArtifactError, match="not an ELF"):
        artifact.check_library(str(path))
    path.write_bytes(data)
    artifact.check_library(str(path))


def test_elf_extent_of_a_32_bit_big_endian_header():
    header = bytearray(52)
    header[:6] = b"\x7fELF\x01\x02"  # 32-bit, big-endian
    struct.pack_into(">IIIHHHHHH", header, 0x1C, 0, 1000, 0, 52, 32, 0, 40, 3, 0)  # phoff shoff flags ... shnum
    assert artifact.elf_extent(bytes(header)) == 1000 + 40 * 3
