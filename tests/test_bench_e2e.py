"""bench/e2e.py: geomean/schema helpers, interleaved timing, resume from the checkpoint with fake
compile and timing functions (no TVM tuning, no torch), tuning time summed over sessions, and the
README renderer of bench/report.py."""
from __future__ import annotations

import importlib
import importlib.util
import json
import math
import time
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _load(name, file):
    spec = importlib.util.spec_from_file_location(name, BENCH / file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def e2e():
    return _load("bench_e2e", "e2e.py")


@pytest.fixture(scope="module")
def report():
    return _load("bench_report", "report.py")


@pytest.fixture()
def no_onnx_export(e2e, monkeypatch):
    """The measure job (bench/e2e_measure.py, imported by bench/e2e.py) gets onnxruntime's ONNX
    path without exporting the network."""
    measure = importlib.import_module("e2e_measure")  # bench/ is on sys.path once e2e.py is loaded
    monkeypatch.setattr(measure, "network_onnx", lambda net, cache: str(Path(cache) / f"{net}.onnx"))


# ------------------------------------------------------------------ helpers
def test_geomean_speedups(e2e):
    nets = {"a": {"cwm_ms": 1.0, "torch_eager_ms": 2.0, "torch_compile_ms": None, "onnxruntime_ms": 4.0,
                  "tvm_ms_xgb_ms": 1.0},
            "b": {"cwm_ms": 2.0, "torch_eager_ms": 16.0, "torch_compile_ms": 1.0, "onnxruntime_ms": 1.0,
                  "tvm_ms_xgb_ms": 2.0},
            "c": {"cwm_ms": None, "torch_eager_ms": 5.0}}  # no cwm latency: in no ratio
    geo, count = e2e.geomean_speedups(nets)
    assert set(geo) == {"vs_torch_eager", "vs_torch_compile", "vs_onnxruntime", "vs_tvm_ms_xgb", "vs_tvm_relax_pipeline"}
    assert geo["vs_torch_eager"] == pytest.approx(4.0)  # sqrt(2 * 8)
    assert geo["vs_torch_compile"] == pytest.approx(0.5) and count["vs_torch_compile"] == 1
    assert geo["vs_onnxruntime"] == pytest.approx(math.sqrt(4.0 * 0.5))
    assert geo["vs_tvm_ms_xgb"] == pytest.approx(1.0) and count["vs_tvm_ms_xgb"] == 2
    assert e2e.geomean([]) is None and e2e.geomean([None, 0.0, math.inf, 9.0]) == pytest.approx(9.0)


def test_sample_stats_and_calibrate(e2e):
    s = e2e.sample_stats([0.003, 0.001, 0.002, 0.004, 0.005], number=7)
    assert s["median_ms"] == pytest.approx(3.0) and s["min_ms"] == pytest.approx(1.0)
    assert s["runs"] == 5 and s["number"] == 7 and s["q1_ms"] <= s["median_ms"] <= s["q3_ms"]
    ticks = iter(range(100))
    clock = lambda: next(ticks) * 1e-3  # noqa: E731 - every call takes 1 ms of fake time
    assert e2e.calibrate(lambda: None, 0.010, clock=clock) == 10
    assert e2e.calibrate(lambda: None, 0.0001, clock=clock) == 1


def test_warm_up_calls_and_seconds(e2e):
    calls = []
    ticks = iter(range(1000))
    clock = lambda: next(ticks) * 0.1  # noqa: E731
    assert e2e.warm_up(lambda: calls.append(1), 3, 0.0, clock=clock) == 3
    assert e2e.warm_up(lambda: calls.append(1), 1, 1.0, clock=clock) >= 5  # time-bound: more than 1 call


def test_interleaved_rotates_and_counts(e2e):
    calls = []
    fns = {m: (lambda m=m: calls.append(m)) for m in ("a", "b", "c")}
    now = [0.0]

    def clock():
        now[0] += 0.5
        return now[0]

    samples = e2e.interleaved(fns, runs=3, numbers={"a": 2}, gap_s=0.01, clock=clock, sleep=lambda s: None)
    assert calls == ["a", "a", "b", "c", "b", "c", "a", "a", "c", "a", "a", "b"]  # each round starts one later
    assert {m: len(v) for m, v in samples.items()} == {"a": 3, "b": 3, "c": 3}
    assert samples["a"][0] == pytest.approx(0.25) and samples["b"][0] == pytest.approx(0.5)  # per call


def test_session_log_sums_interrupted_sessions(e2e, tmp_path):
    log = e2e.SessionLog(str(tmp_path))
    log.start()
    log.beat(10.0, 16)
    log.beat(25.5, 32)  # killed here: the session counts up to its last committed batch
    again = e2e.SessionLog(str(tmp_path))
    assert again.total_s() == pytest.approx(25.5) and not again.sessions[0]["complete"]
    again.start()
    again.finish(4.5, 8)
    assert e2e.SessionLog(str(tmp_path)).total_s() == pytest.approx(30.0)
    assert [s["complete"] for s in e2e.SessionLog(str(tmp_path)).sessions] == [False, True]


def test_tvm_pipeline_resume_budget_and_beat(e2e, tmp_path):
    """TVM's pipeline resumes by tuning the rest of the budget; only complete record lines count,
    and the beat thread stores the session's time while the pipeline runs."""
    tvm_pipeline = importlib.import_module("e2e_tvm_pipeline")
    tuning = tmp_path / "tuning"
    assert tvm_pipeline.count_records(str(tuning)) == 0  # no database yet
    tuning.mkdir()
    (tuning / "database_tuning_record.json").write_bytes(b'[0, []]\n[0, []]\n[0, [tor')
    assert tvm_pipeline.count_records(str(tuning)) == 2
    assert tvm_pipeline.remaining_budget(64 * 3, 2) == 190
    assert tvm_pipeline.remaining_budget(64, 70) == 0  # nothing left: the pipeline skips tuning
    log = e2e.SessionLog(str(tmp_path))
    log.start()
    with tvm_pipeline.TuningBeat(log, str(tuning), done_before=2, every_s=0.01):
        with open(tuning / "database_tuning_record.json", "ab") as f:
            f.write(b'n]]\n')  # one more complete line after the resume
        deadline = 200
        while log.sessions[-1]["records"] != 1 and deadline:
            time.sleep(0.01)
            deadline -= 1
    stored = e2e.SessionLog(str(tmp_path)).sessions[-1]
    assert stored["records"] == 1 and stored["tune_s"] > 0 and not stored["complete"]


# ------------------------------------------------------------------ resume with fakes
SPEED = {"cwm": 1.0, "tvm_ms_xgb": 1.25, "torch_eager": 2.0, "torch_compile": 1.5, "onnxruntime": 1.6}
BASE_MS = {"resnet18": 10.0, "gpt2": 40.0}


class FakeCompile:
    """Writes an 'artifact' file; fails on demand, after committing some tuning time (a kill)."""

    def __init__(self, fail_on=()):
        self.calls, self.fail_on = [], set(fail_on)

    def __call__(self, net, method, *, trials, work_dir, session, model_dir, onnx_cache):
        self.calls.append((net, method))
        session.beat(3.0, 4)
        if (net, method) in self.fail_on:
            raise RuntimeError("simulated kill during tuning")
        session.finish(5.0, 8)
        artifact = Path(work_dir) / "artifact"
        artifact.mkdir(parents=True, exist_ok=True)
        (artifact / "model.so").write_text(f"{net} {method} {model_dir}")
        return {"tasks": 3, "task_names": ["t0", "t1", "t2"], "new_records": 8, "reused_records": 0,
                "session_tune_s": 5.0, "compile_s": 6.0, "artifact": str(artifact)}


class FakeMeasure:
    def __init__(self):
        self.calls = []

    def __call__(self, net, methods, *, artifacts, runs, warmup, threads, min_sample_ms, gap_ms, warmup_s):
        self.calls.append((net, tuple(methods)))
        for m in ("cwm", "tvm_ms_xgb"):
            if m in methods:
                assert Path(artifacts[m], "model.so").read_text().startswith(f"{net} {m}")
        results = {m: e2e_stats(BASE_MS[net] * SPEED[m], runs) for m in methods}
        errors = {}
        if "torch_compile" in methods and net == "gpt2":
            results["torch_compile"] = None
            errors["torch_compile"] = "BackendCompilerFailed: simulated"
        return {"results": results, "max_rel_err": {m: 1e-6 for m in methods if m != "torch_eager"},
                "errors": errors, "setup_s": {m: 0.1 for m in methods}, "threads": threads}


def e2e_stats(ms, runs):
    return {"median_ms": ms, "q1_ms": ms, "q3_ms": ms, "min_ms": ms, "runs": runs, "number": 1,
            "samples_ms": [ms] * runs}


MODEL = {"model_dir": "/m", "prior_sha256": "abc", "fixture": False}


def _main(e2e, tmp_path, compile_fn, measure_fn, *extra, model=MODEL):
    argv = ["--networks", "resnet18,gpt2", "--trials", "4", "--out", str(tmp_path / "e2e.json"),
            "--work-root", str(tmp_path / "wd"), "--onnx-cache", str(tmp_path / "onnx"), "--threads", "2", *extra]
    return e2e.main(argv, compile_fn=compile_fn, measure_fn=measure_fn, model=model)


def test_resume_and_report(e2e, tmp_path, no_onnx_export):
    ckpt = tmp_path / "e2e_runs.jsonl"
    # session 1: resnet18 compiles + measure, then gpt2's cwm compile is "killed" mid-tuning
    comp, meas = FakeCompile(fail_on={("gpt2", "cwm")}), FakeMeasure()
    assert _main(e2e, tmp_path, comp, meas) == 1  # incomplete, no --partial: no JSON
    assert comp.calls == [("resnet18", "cwm"), ("resnet18", "tvm_ms_xgb"), ("gpt2", "cwm"), ("gpt2", "tvm_ms_xgb")]
    assert meas.calls == [("resnet18", tuple(e2e.DEFAULT_METHODS))]  # gpt2 waits for its cwm compile
    assert not (tmp_path / "e2e.json").exists()
    # a kill mid-write leaves a torn last line: ignored, then cut off before the next append
    with open(ckpt, "a") as f:
        f.write('{"kind": "compile", "net": "gp')
    # --partial report of what exists
    assert _main(e2e, tmp_path, FakeCompile(), FakeMeasure(), "--report-only", "--partial") == 0
    part = json.loads((tmp_path / "e2e.json").read_text())
    assert part["partial"] is True and part["missing"] == ["gpt2"]
    assert part["networks"]["gpt2"]["measured"] is False and part["networks"]["gpt2"]["cwm_ms"] is None
    # session 2: only what is missing runs; gpt2/cwm's tuning time adds both sessions (3 s + 5 s)
    comp2, meas2 = FakeCompile(), FakeMeasure()
    assert _main(e2e, tmp_path, comp2, meas2) == 0
    assert comp2.calls == [("gpt2", "cwm")] and meas2.calls == [("gpt2", tuple(e2e.DEFAULT_METHODS))]
    r = json.loads((tmp_path / "e2e.json").read_text())
    assert r["partial"] is False and r["missing"] == [] and r["trials_per_task"] == 4
    for key in ("networks", "geomean_speedup", "trials_per_task", "machine", "date"):
        assert key in r
    g = r["networks"]["gpt2"]
    assert set(e2e.DEFAULT_METHODS) <= {k[:-3] for k in g if k.endswith("_ms")}
    assert g["tuning_s"] == pytest.approx(8.0) and g["tuning_sessions"]["cwm"] == 2
    assert g["tvm_ms_xgb_tuning_s"] == pytest.approx(5.0) and g["tasks"] == 3
    assert g["torch_compile_ms"] is None and "simulated" in g["errors"]["torch_compile"]
    assert r["networks"]["resnet18"]["tuning_s"] == pytest.approx(5.0)
    assert r["networks"]["resnet18"]["max_rel_err"]["cwm"] == pytest.approx(1e-6)
    geo = r["geomean_speedup"]
    assert geo["vs_torch_eager"] == pytest.approx(2.0) and geo["vs_tvm_ms_xgb"] == pytest.approx(1.25)
    assert geo["vs_torch_compile"] == pytest.approx(1.5) and r["geomean_networks"]["vs_torch_compile"] == 1
    assert r["model"]["prior_sha256"] == "abc"
    # session 3: everything is there, nothing runs
    comp3, meas3 = FakeCompile(), FakeMeasure()
    assert _main(e2e, tmp_path, comp3, meas3) == 0 and not comp3.calls and not meas3.calls
    # asking for more rounds re-measures (interleaved, all methods), but compiles nothing
    assert _main(e2e, tmp_path, comp3, meas3, "--runs", "30") == 0
    assert not comp3.calls and [c[0] for c in meas3.calls] == ["resnet18", "gpt2"]
    # the work folders are lost (work_dirs/ does not outlive a session): a finished timing needs
    # nothing, but a new timing recompiles first, keeping the checkpointed sessions' tuning time
    import shutil
    shutil.rmtree(tmp_path / "wd")
    comp4, meas4 = FakeCompile(), FakeMeasure()
    assert _main(e2e, tmp_path, comp4, meas4) == 0 and not comp4.calls and not meas4.calls
    assert _main(e2e, tmp_path, comp4, meas4, "--networks", "resnet18", "--runs", "40") == 0
    assert comp4.calls == [("resnet18", "cwm"), ("resnet18", "tvm_ms_xgb")] and len(meas4.calls) == 1
    r = json.loads((tmp_path / "e2e.json").read_text())
    assert r["networks"]["resnet18"]["tuning_s"] == pytest.approx(10.0)  # 5 s before + 5 s now
    assert r["networks"]["resnet18"]["tuning_sessions"]["cwm"] == 2
    # a different CWM model refuses to resume unless allowed
    with pytest.raises(SystemExit, match="differs"):
        _main(e2e, tmp_path, comp3, meas3, model={**MODEL, "prior_sha256": "other"})


def test_methods_subset_and_max_jobs(e2e, tmp_path, no_onnx_export):
    comp, meas = FakeCompile(), FakeMeasure()
    assert _main(e2e, tmp_path, comp, meas, "--methods", "torch_eager,onnxruntime", "--max-jobs", "1",
                 model=None) == 1
    assert not comp.calls and meas.calls == [("resnet18", ("torch_eager", "onnxruntime"))]
    assert _main(e2e, tmp_path, comp, meas, "--methods", "onnxruntime,torch_eager", model=None) == 0
    r = json.loads((tmp_path / "e2e.json").read_text())
    assert r["networks"]["gpt2"]["cwm_ms"] is None and r["geomean_speedup"]["vs_torch_eager"] is None
    with pytest.raises(SystemExit):
        e2e.parse_args(["--methods", "cwm,tflite"])


def test_a_checkpoint_of_another_host_is_not_resumed(e2e, tmp_path, no_onnx_export, monkeypatch):
    """Latencies of two CPUs do not go in one table: a run on another host stops with a clear
    error (unless --allow-host-change), and a report written anywhere names the host it measured on."""
    import sys

    def on_host(name):  # every module that names the machine (the check, the compile and measure lines)
        for module in (e2e, sys.modules["e2e_compile"], sys.modules["e2e_measure"]):
            monkeypatch.setattr(module, "machine", lambda: name)

    on_host("AMD EPYC, 2 cores")
    assert _main(e2e, tmp_path, FakeCompile(), FakeMeasure(), "--networks", "resnet18") == 0
    lines = [json.loads(x) for x in (tmp_path / "e2e_runs.jsonl").read_text().splitlines()]
    assert {r["machine"] for r in lines} == {"AMD EPYC, 2 cores"}  # compile and measure lines
    on_host("Intel Xeon, 2 cores")
    comp, meas = FakeCompile(), FakeMeasure()
    with pytest.raises(SystemExit, match="measured on .*AMD EPYC.*this machine is 'Intel Xeon"):
        _main(e2e, tmp_path, comp, meas)
    assert not comp.calls and not meas.calls
    # the report, written on the Intel host, names the AMD host the results come from
    assert _main(e2e, tmp_path, comp, meas, "--networks", "resnet18", "--report-only") == 0
    r = json.loads((tmp_path / "e2e.json").read_text())
    assert r["machine"] == "AMD EPYC, 2 cores" and r["networks"]["resnet18"]["machine"] == "AMD EPYC, 2 cores"
    assert r["date"] == lines[-1]["date"][:10]
    # allowed: gpt2 runs here, and the report names both hosts
    assert _main(e2e, tmp_path, comp, meas, "--allow-host-change") == 0
    assert comp.calls == [("gpt2", "cwm"), ("gpt2", "tvm_ms_xgb")]
    r = json.loads((tmp_path / "e2e.json").read_text())
    assert r["machine"] == "AMD EPYC, 2 cores + Intel Xeon, 2 cores"


# ------------------------------------------------------------------ README renderer
def test_e2e_table(report):
    r = {"networks": {"resnet18": {"cwm_ms": 5.0, "torch_eager_ms": 10.0, "torch_compile_ms": None,
                                   "onnxruntime_ms": 6.0, "tvm_ms_xgb_ms": 5.5, "tuning_s": 600.0,
                                   "tvm_ms_xgb_tuning_s": 500.0, "tasks": 19,
                                   "max_rel_err": {"cwm": 1e-6, "tvm_ms_xgb": 2e-6},
                                   "errors": {"torch_compile": "BackendCompilerFailed: x"}}},
         "geomean_speedup": {"vs_torch_eager": 2.0, "vs_torch_compile": None, "vs_onnxruntime": 1.2,
                             "vs_tvm_ms_xgb": 1.1},
         "trials_per_task": 16, "threads": 2, "runs": 20, "machine": "CPU, 2 cores", "date": "2026-12-01",
         "partial": True}
    lines = report.e2e_table(r)
    text = "\n".join(lines)
    assert "PARTIAL" in text and "16 trials × tasks" in text
    assert "vs PyTorch eager **2.00×**" in text and "vs torch.compile n/a" in text
    row = next(line for line in lines if line.startswith("| resnet18"))
    assert "| 19 |" in row and "5.00" in row and "failed" in row and "600" in row and "1.0e-06" in row
    assert ("e2e.json", report.e2e_table) in report.TABLES


def test_measurement_of_another_timing_protocol_is_redone(e2e, tmp_path):
    path = tmp_path / "e2e_runs.jsonl"
    old = {"kind": "measure", "net": "resnet18", "methods": list(e2e.METHODS), "trials": 16, "runs": 20}
    path.write_text(json.dumps(old) + "\n" + json.dumps({**old, "net": "gpt2", "timing": e2e.TIMING_PROTOCOL}) + "\n")
    ckpt = e2e.Checkpoint(str(path))
    assert ckpt.measure_for("resnet18", e2e.METHODS, 16, 20) is None  # all methods in one process: redone
    assert ckpt.measure_for("gpt2", e2e.METHODS, 16, 20) is not None
    assert ckpt.measure_for("gpt2", e2e.METHODS, 16, 30) is None  # more rounds asked for


def test_ablation_methods_are_opt_in_and_reported(e2e, tmp_path, no_onnx_export):
    """cwm_unpacked / cwm_gradient run only when asked for; they are compiled with the cwm model, and
    the report has their ratio to cwm and the per-method tuning seconds and budgets."""
    assert "cwm_unpacked" not in e2e.DEFAULT_METHODS and "cwm_gradient" not in e2e.DEFAULT_METHODS
    from e2e_networks import COMPILED, PACK_WEIGHTS, TASK_SCHEDULER

    assert COMPILED["cwm_unpacked"] == COMPILED["cwm_gradient"] == "cwm"
    assert PACK_WEIGHTS == {"cwm_unpacked": False} and TASK_SCHEDULER["cwm_gradient"] == "gradient"
    SPEED.update(cwm_unpacked=1.5, cwm_gradient=0.9)
    comp = FakeCompile()
    calls = []

    def compile_fn(net, method, *, model_dir, **kwargs):
        calls.append((net, method, model_dir))
        out = comp(net, method, model_dir=model_dir, **kwargs)
        return {**out, "budget_total": 12, "weights_packed": 0 if method == "cwm_unpacked" else 2}

    assert _main(e2e, tmp_path, compile_fn, FakeMeasure(), "--methods", "cwm,cwm_unpacked,cwm_gradient") == 0
    assert {(m, d) for _, m, d in calls} == {("cwm", "/m"), ("cwm_unpacked", "/m"), ("cwm_gradient", "/m")}
    r = json.loads((tmp_path / "e2e.json").read_text())
    assert r["geomean_speedup"]["vs_cwm_unpacked"] == pytest.approx(1.5)
    assert r["geomean_speedup"]["vs_cwm_gradient"] == pytest.approx(0.9)
    row = r["networks"]["resnet18"]
    assert row["weights_packed"] == {"cwm": 2, "cwm_unpacked": 0, "cwm_gradient": 2}
    assert row["budget_total"]["cwm"] == 12 and set(row["tuning_s_by_method"]) == {"cwm", "cwm_unpacked", "cwm_gradient"}


def test_stash_carries_tuning_to_a_later_session_on_the_same_host(tmp_path, monkeypatch):
    """bench/e2e_stash.py: the databases and tuning sessions travel, artifacts do not, and a
    stash is only restored on the machine that measured it, never over an existing file."""
    stash_mod = _load("bench_e2e_stash", "e2e_stash.py")
    root = tmp_path / "wd"
    files = {"resnet50/cwm/t256/tuning/database_tuning_record.json": "r1\nr2\n",
             "resnet50/cwm/t256/tuning/database_workload.json": "w1\n",
             "resnet50/cwm/t256/tuning_sessions.json": '{"sessions": []}',
             "shared_tuning/cwm-t256/0123abcd/database_tuning_record.json": "s1\n",
             "shared_tuning/cwm-t256/0123abcd/target.json": "{}",
             "resnet50/cwm/t256/artifact/model.so": "binary",
             "resnet50/cwm/t256/tuning/logs/task.log": "log"}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    monkeypatch.setattr(stash_mod, "machine", lambda: "AMD EPYC, 2 cores")
    tar = tmp_path / "stash.tar.gz"
    meta = stash_mod.save(str(root), str(tar))
    assert meta["files"] == sorted(k for k in files if "artifact" not in k and "logs" not in k)
    new_root = tmp_path / "later"
    (new_root / "resnet50/cwm/t256").mkdir(parents=True)
    (new_root / "resnet50/cwm/t256/tuning_sessions.json").write_text("newer")
    monkeypatch.setattr(stash_mod, "machine", lambda: "Intel Xeon, 2 cores")
    with pytest.raises(SystemExit, match="tuned on 'AMD EPYC"):
        stash_mod.restore(str(new_root), str(tar))
    monkeypatch.setattr(stash_mod, "machine", lambda: "AMD EPYC, 2 cores")
    written = stash_mod.restore(str(new_root), str(tar))
    assert sorted(written) == sorted(set(meta["files"]) - {"resnet50/cwm/t256/tuning_sessions.json"})
    assert (new_root / "resnet50/cwm/t256/tuning_sessions.json").read_text() == "newer"  # kept
    assert (new_root / "resnet50/cwm/t256/tuning/database_tuning_record.json").read_text() == "r1\nr2\n"
    assert not (new_root / "resnet50/cwm/t256/artifact").exists()
