"""``python -m cwm demo`` end to end, with 4 trials per task (~15 s on 2 cores)."""
import json
import os
import subprocess
import sys

import cwm

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(cwm.__file__)))


def test_demo_cli_tunes_exports_and_matches_onnxruntime(tmp_path):
    out_dir = tmp_path / "demo"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([PYTHON_DIR, os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "cwm", "demo", "--trials", "4", "--runs", "20",
                           "--out", str(out_dir)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (out_dir / "tiny_cnn_tuned.so").stat().st_size > 0
    assert (out_dir / "tiny_cnn.onnx").exists()
    summary = json.loads((out_dir / "demo_summary.json").read_text())
    assert summary["ok"] and summary["max_abs_err_vs_onnxruntime"] < 1e-4
    assert len(summary["tasks"]) >= 2 and summary["records"] >= len(summary["tasks"])
    assert summary["scheduled_functions"] >= 1
    assert summary["tuned_us"] > 0 and summary["untuned_us"] > 0 and summary["onnxruntime_us"] > 0
    assert "latency tuned" in proc.stdout and "tiny_cnn_tuned.so" in proc.stdout


def test_cli_rejects_unknown_command():
    from cwm import cli

    try:
        cli.main(["no-such-command"])
    except SystemExit as exit_:
        assert exit_.code == 2
    else:
        raise AssertionError("expected argparse to exit")
