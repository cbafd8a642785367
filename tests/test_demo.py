"""``python -m cwm demo`` end to end: the tiny CNN compiled with the CWM cost model (here the small
committed scorer fixture model, 2 trials per task), exported, reloaded in a fresh process and
checked against onnxruntime (~30-45 s on a loaded 2-core box)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import cwm

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(cwm.__file__)))
FIXTURE_MODEL = Path(__file__).parent / "data" / "scorer_fixture" / "model"
SUMMARY_KEYS = {
    "cost_model", "model_dir", "target", "tasks", "trials_per_task", "records", "reused_records",
    "task_details", "scheduled_functions", "tune_s", "compile_s", "pass_seconds", "cost_model_s",
    "cost_model_stats", "artifact", "library", "max_abs_err_vs_onnxruntime", "ok", "runs",
    "untuned_us", "tuned_us", "onnxruntime_us", "torch_us", "total_s",
}


def test_demo_cli_compiles_with_cwm_exports_reloads_and_matches_onnxruntime(tmp_path):
    out_dir = tmp_path / "demo"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([PYTHON_DIR, os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "cwm", "demo", "--trials", "2", "--runs", "20",
                           "--model-dir", str(FIXTURE_MODEL), "--no-progress", "--out", str(out_dir)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((out_dir / "demo_summary.json").read_text())
    assert SUMMARY_KEYS <= set(summary), SUMMARY_KEYS - set(summary)
    assert summary["cost_model"] == "cwm" and Path(summary["model_dir"]) == FIXTURE_MODEL.resolve()
    assert summary["ok"] and summary["max_abs_err_vs_onnxruntime"] < 1e-4
    assert len(summary["tasks"]) >= 2 and summary["records"] >= len(summary["tasks"])
    assert summary["reused_records"] == 0  # work/ starts afresh: every record comes from this cost model
    assert summary["scheduled_functions"] >= 1
    stats = summary["cost_model_stats"]  # CWMCostModel really guided the search
    # every record but each task's untuned candidate (its first trial, measured without the cost model)
    untuned = sum(1 for t in summary["task_details"] if t.get("untuned_us") is not None)
    assert untuned >= 1 and stats["predict_calls"] >= 1 and stats["measured"] + untuned == summary["records"]
    for key in ("untuned_us", "tuned_us", "onnxruntime_us", "torch_us"):
        assert summary[key] > 0, key
    assert summary["pass_seconds"]["cwm-tune"] > 0

    artifact = out_dir / "model"
    assert Path(summary["artifact"]) == artifact and (artifact / "model.so").stat().st_size > 0
    assert (out_dir / "tiny_cnn.onnx").exists()
    model = cwm.load(artifact)  # the artifact reloads here too, and gives what the fresh process got
    x = np.load(out_dir / "input.npy")
    np.testing.assert_allclose(model(x), np.load(out_dir / "output_reloaded.npy"), rtol=1e-5, atol=1e-6)

    for text in ("TVM, untuned build", "TVM, tuned (cwm), reloaded", "onnxruntime", "PyTorch eager",
                 "speedup vs untuned", str(artifact)):
        assert text in proc.stdout, text


def test_demo_without_a_world_model_says_how_to_get_one(tmp_path, monkeypatch, capsys):
    import cwm.model
    from cwm import demo

    monkeypatch.setattr(cwm.model, "DEFAULT_MODEL_DIR", tmp_path / "no_default_model")
    assert demo.main(["--out", str(tmp_path / "out")]) == 2
    message = capsys.readouterr().err
    assert "shipped CWM world model is missing" in message
    assert "cwm train" in message and "--model-dir" in message and "--cost-model xgb" in message
    assert demo.main(["--model-dir", str(tmp_path / "nowhere"), "--out", str(tmp_path / "out")]) == 2
    assert "no CWM world model at --model-dir" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # nothing was done


def test_cli_rejects_unknown_command():
    from cwm import cli

    try:
        cli.main(["no-such-command"])
    except SystemExit as exit_:
        assert exit_.code == 2
    else:
        raise AssertionError("expected argparse to exit")
