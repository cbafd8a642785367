"""`cwm compile` / `cwm run` / `cwm bench` smoke tests (in-process, through cwm.cli.main)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from cwm.cli import main
from tests.compile_helpers import assert_close, onnxruntime_output, tiny_onnx  # noqa: F401


def test_compile_run_bench(tiny_onnx, tmp_path, capsys):
    from cwm.frontends import tiny_cnn

    out, work_dir = tmp_path / "out", tmp_path / "wd"
    status = main(["compile", tiny_onnx, "--target", "llvm", "-o", str(out), "--trials", "2", "--cost-model", "xgb",
                   "--work-dir", str(work_dir), "--runs", "3", "--no-progress", "--dump-ir", str(tmp_path / "ir")])
    text = capsys.readouterr().out
    assert status == 0, text
    for needle in ("| tasks ", "| trials ", "measured now", "| latency before tuning", "| latency after tuning",
                   "fused_conv2d_add_relu", "| compile time"):
        assert needle in text, text
    assert (out / "manifest.json").is_file() and (tmp_path / "ir" / "000_cwm-import.py").is_file()

    x = tiny_cnn.example_input(1)
    np.save(tmp_path / "x.npy", x)
    assert main(["run", str(out), "--input", str(tmp_path / "x.npy"), "--output", str(tmp_path / "y.npy")]) == 0
    assert "y: float32[1, 10]" in capsys.readouterr().out
    assert_close(np.load(tmp_path / "y.npy"), onnxruntime_output(tiny_onnx, x))
    assert main(["run", str(out), "--input", f"x={tmp_path / 'x.npy'}"]) == 0
    capsys.readouterr()

    np.save(tmp_path / "bad.npy", np.zeros((1, 3, 8, 8), "float32"))
    assert main(["run", str(out), "--input", str(tmp_path / "bad.npy")]) == 2
    assert "has shape (1, 3, 8, 8), the model expects (1, 3, 32, 32)" in capsys.readouterr().err

    assert main(["bench", str(out), "--runs", "3", "--number", "2"]) == 0
    text = capsys.readouterr().out
    assert "| median latency" in text and " us " in text

    # same work dir again: nothing measured, summary says so
    assert main(["compile", tiny_onnx, "-o", str(tmp_path / "out2"), "--trials", "2", "--cost-model", "xgb",
                 "--work-dir", str(work_dir), "--no-baseline", "--no-progress"]) == 0
    assert "0 measured now" in capsys.readouterr().out


def test_cli_errors_and_help(tiny_onnx, tmp_path, capsys):
    assert main(["compile", tiny_onnx, "-o", str(tmp_path / "o"), "--pipeline", "cwm-import,cwm-fuse"]) == 2
    assert "unknown pass 'cwm-fuse'" in capsys.readouterr().err
    assert main(["bench", str(tmp_path)]) == 2
    assert "no manifest.json" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["compile", "--help"])
    assert info.value.code == 0
    assert "--cost-model" in capsys.readouterr().out
    done = subprocess.run([sys.executable, "-m", "cwm", "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and all(f"    {c} " in done.stdout for c in ("compile", "run", "bench"))
