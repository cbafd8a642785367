"""``tools/vm_call_profile.py``: every call of a compiled model timed inside the running network."""
from __future__ import annotations

import importlib.util
import os

import cwm
from tests.compile_helpers import tiny_onnx  # noqa: F401

TOOL = os.path.join(os.path.dirname(__file__), "..", "tools", "vm_call_profile.py")


def test_profile_lists_the_kernels_of_a_compiled_model(tiny_onnx, tmp_path, capsys):
    out = cwm.compile(tiny_onnx, pipeline="no-tune", work_dir=tmp_path / "wd").export(tmp_path / "artifact")
    spec = importlib.util.spec_from_file_location("vm_call_profile", TOOL)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert tool.main([str(out), "--runs", "2", "--threads", "1"]) == 0
    text = capsys.readouterr().out
    first, _header, *rows = text.strip().splitlines()
    assert "calls a run" in first and rows
    assert any("fused_conv2d_add_relu" in row for row in rows)
    assert all(float(row.split()[1]) >= 0 for row in rows)
