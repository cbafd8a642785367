"""bench/search.py: the statistics helpers on synthetic numbers, task selection, and resuming
from the checkpoint with a fake tuning function (no TVM tuning, fast)."""
from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def search():
    spec = importlib.util.spec_from_file_location("bench_search", BENCH / "search.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------ helpers
def test_geomean_and_curves(search):
    assert search.geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert search.geomean([None, 4.0, math.inf]) == pytest.approx(4.0)
    assert search.geomean([]) is None
    assert search.best_so_far([5.0, None, 7.0, 3.0, 4.0]) == [5.0, 5.0, 5.0, 3.0, 3.0]
    assert search.best_so_far([None, None, 2.0]) == [None, None, 2.0]
    assert search.median_curve([[3.0, 2.0, 1.0], [5.0, 4.0], [None, 6.0]]) == [4.0, 4.0, 1.0]


def test_trials_to_reach(search):
    curve = search.best_so_far([10.0, 9.0, None, 7.0, 5.0, 5.0])
    assert search.trials_to_reach(curve, 7.0) == 4       # reached at the 4th trial (1-based)
    assert search.trials_to_reach(curve, 10.0) == 1
    assert search.trials_to_reach(curve, 4.9) is None    # never
    assert search.trials_to_reach(curve, None) is None
    assert search.trials_to_reach([None, None], 1.0) is None


def test_speedups_geomean_and_seed_spread(search):
    seeds = [0, 1]
    table = {  # latencies per seed; ratio = baseline / cwm
        "a": {"cwm": [10.0, 10.0], "xgb": [20.0, 20.0], "random": [40.0, 40.0]},
        "b": {"cwm": [10.0, 30.0], "xgb": [10.0, 10.0], "random": [None, 80.0]},
    }
    geo, spread = search.speedups(table, seeds, methods=("cwm", "xgb", "random"))
    # a: 20/10 = 2; b: mean xgb 10 / mean cwm 20 = 0.5 -> geomean 1
    assert geo["cwm_vs_xgb"] == pytest.approx(1.0)
    assert "cwm_vs_xgb_pretrained" not in geo
    # per seed: seed 0 -> sqrt(2 * 1) ; seed 1 -> sqrt(2 * 1/3)
    s = spread["cwm_vs_xgb"]
    assert s["per_seed"]["0"] == pytest.approx(math.sqrt(2.0))
    assert s["per_seed"]["1"] == pytest.approx(math.sqrt(2.0 / 3.0))
    assert s["min"] == pytest.approx(math.sqrt(2.0 / 3.0)) and s["max"] == pytest.approx(math.sqrt(2.0))
    assert s["n_tasks"] == 2
    # random: a 4; b mean(80)/mean(10, 30) = 4 -> 4; seed 0 has only task a
    assert geo["cwm_vs_random"] == pytest.approx(4.0)
    assert spread["cwm_vs_random"]["per_seed"] == {"0": pytest.approx(4.0), "1": pytest.approx(math.sqrt(4 * 80 / 30))}


def test_gap_to_best_run_is_the_ceiling_of_the_speedups(search):
    import search_stats  # bench/ is on the path once bench/search.py is loaded

    table = {  # latencies per seed
        "a": {"cwm": [10.0, 30.0], "xgb": [40.0, 40.0]},   # fastest run 10
        "b": {"cwm": [50.0, 50.0], "xgb": [25.0, None]},   # fastest run 25
    }
    gaps = search_stats.gap_to_best_run(table, methods=("cwm", "xgb"))
    # cwm: a 20 / 10 = 2, b 50 / 25 = 2 -> 2; xgb: a 40 / 10 = 4, b 25 / 25 = 1 -> 2
    assert gaps["cwm"] == pytest.approx(2.0) and gaps["xgb"] == pytest.approx(2.0)
    geo, _ = search.speedups(table, [0, 1], methods=("cwm", "xgb"))
    # the speedup over a baseline is the baseline's gap over the subject's (same tasks)
    assert geo["cwm_vs_xgb"] == pytest.approx(gaps["xgb"] / gaps["cwm"])
    # a method whose every run is the fastest of all sits at 1.0; a method with no runs has no gap
    assert search_stats.gap_to_best_run({"a": {"cwm": [5.0], "xgb": [9.0]}}, ("cwm", "random"))["cwm"] == 1.0
    assert search_stats.gap_to_best_run({"a": {"cwm": [5.0]}}, ("cwm", "random"))["random"] is None


def test_op_class_and_round_robin_selection(search):
    assert search.op_class("fused_conv2d5_add4", 'T.sblock("conv2d_nchw")') == "conv2d"
    assert search.op_class("fused_conv2d17_add13", 'T.sblock("group_conv2d_nchw")') == "depthwise_conv2d"
    assert search.op_class("fused_matmul_add3") == "matmul"
    assert search.op_class("layer_norm1") == "norm"
    assert search.op_class("mean") == "other"
    cands = [{"key": f"c{i}", "op": "conv2d", "records": 200, "flop": i} for i in range(5)]
    cands += [{"key": "d0", "op": "depthwise_conv2d", "records": 200, "flop": 1},
              {"key": "m0", "op": "matmul", "records": 180, "flop": 9},
              {"key": "m1", "op": "matmul", "records": 200, "flop": 1},
              {"key": "n0", "op": "norm", "records": 200, "flop": 1}]
    keys = [t["key"] for t in search.pick_round_robin(cands, 8)]
    # round 1: largest conv (flop 4), d0, m1 (more records), n0; round 2: c3, m0; then conv2d only
    assert keys == ["c4", "d0", "m1", "n0", "c3", "m0", "c2", "c1"]
    assert keys == [t["key"] for t in search.pick_round_robin(list(reversed(cands)), 8)]  # order-independent


def test_plan_runs_order_and_dedup(search):
    tasks = [{"key": "t1"}, {"key": "t2"}]
    specs = search.plan_runs(tasks, ["cwm", "xgb"], [0, 1], 8, tasks[:1], xgb_long_trials=16, max_cwm_trials=8)
    ids = [search.run_id(s) for s in specs]
    assert ids[:4] == ["t1|cwm|0|8", "t1|xgb|0|8", "t2|cwm|0|8", "t2|xgb|0|8"]  # seed-major
    assert len(ids) == len(set(ids)) == 8 + 1  # cwm at 8 trials for sample efficiency == main run
    assert ids[-1] == "t1|xgb|0|16"


# ------------------------------------------------------------------ resume with a fake tuner
TASKS = [{"key": "k1", "name": "fused_conv2d_a", "op": "conv2d", "records": 200, "flop": 10},
         {"key": "k2", "name": "fused_matmul_b", "op": "matmul", "records": 200, "flop": 5}]
SPEED = {"cwm": 1.0, "xgb": 1.5, "xgb_pretrained": 1.2, "random": 2.0}


class FakeTuner:
    """Latencies fall with the trial index; a method's factor scales them; may fail on demand."""

    def __init__(self, fail_on=()):
        self.calls, self.fail_on = [], set(fail_on)

    def __call__(self, workload, *, method, seed, trials, work_dir):
        self.calls.append((workload, method, seed, trials))
        if (workload, method, seed, trials) in self.fail_on:
            raise RuntimeError("simulated crash")
        lat = [SPEED[method] * (100.0 + seed) * (1 + 1.0 / (i + 1)) for i in range(trials)]
        lat[1] = None  # one failed candidate
        records = [{"trace": json.dumps([method, seed, i]), "latency_us": x} for i, x in enumerate(lat)]
        best = min((r for r in records if r["latency_us"] is not None), key=lambda r: r["latency_us"])
        return SimpleNamespace(best_us=best["latency_us"], best_trace=best["trace"], records=records,
                               wall={"total_s": 0.1 * trials, "search_s": 0.05 * trials, "cost_model_s": 0.01 * trials,
                                     "build_s": 0.02 * trials, "run_s": 0.02 * trials})


def fake_remeasure(workload, candidates, repeats, min_repeat_ms):
    fake_remeasure.calls.append(sorted(candidates))
    # "re-measured" latency: what the trace says, without the trial-index term
    return {cid: {"median_us": SPEED[json.loads(trace)[0]] * 100.0} for cid, trace in candidates.items()}


def _main(search, tmp_path, tuner, *extra):
    argv = ["--tasks", "2", "--trials", "8", "--seeds", "0,1", "--sample-efficiency-tasks", "1",
            "--xgb-long-trials", "16", "--max-cwm-trials", "12", "--out", str(tmp_path / "search.json"),
            "--work-root", str(tmp_path / "wd"), *extra]
    return search.main(argv, tune_fn=tuner, remeasure_fn=fake_remeasure,
                       select_fn=lambda data, n, min_records: TASKS[:n], workload_fn=lambda key: key,
                       model={"model_dir": "m", "prior_sha256": "abc"})


def test_resume_skips_finished_runs(search, tmp_path):
    fake_remeasure.calls = []
    ckpt = tmp_path / "search_runs.jsonl"
    # first session: cut off after 5 runs
    first = FakeTuner()
    assert _main(search, tmp_path, first, "--max-runs", "5") == 1  # incomplete, no --partial: no report
    assert len(first.calls) == 5 and not (tmp_path / "search.json").exists()
    # a kill mid-write leaves a torn last line: ignored, then cut off before the next append
    with open(ckpt, "a") as f:
        f.write('{"kind": "run", "task": "k2", "meth')
    # second session: one run crashes (retried next time), the rest are done
    crash = ("k2", "random", 1, 8)
    second = FakeTuner(fail_on={crash})
    assert _main(search, tmp_path, second) == 1
    planned = 2 * 4 * 2 + 2  # main runs + xgb@16 and cwm@12 on the first task
    assert len(second.calls) == planned - 5
    assert not set(first.calls) & set(second.calls)
    # third session: only the crashed run is left
    third = FakeTuner()
    assert _main(search, tmp_path, third) == 0
    assert third.calls == [crash]
    lines = [json.loads(line) for line in ckpt.read_text().splitlines()]
    runs = [r for r in lines if r["kind"] == "run"]
    assert len(runs) == planned and len({search.run_id(r) for r in runs}) == planned
    assert sum(r["kind"] == "plan" for r in lines) == 1

    report = json.loads((tmp_path / "search.json").read_text())
    assert report["trials"] == 8 and report["seeds"] == [0, 1] and report["partial"] is False
    assert set(report["tasks"]) == {"fused_conv2d_a/k1", "fused_matmul_b/k2"}
    row = report["tasks"]["fused_conv2d_a/k1"]
    assert set(row) == {"cwm", "xgb", "xgb_pretrained", "random"} and row["xgb"] == [150.0, 150.0]
    assert report["geomean_speedup"] == {"cwm_vs_xgb": pytest.approx(1.5), "cwm_vs_xgb_pretrained": pytest.approx(1.2),
                                         "cwm_vs_random": pytest.approx(2.0)}
    assert report["geomean_speedup_spread"]["cwm_vs_xgb"]["min"] == pytest.approx(1.5)
    se = report["sample_efficiency"]["fused_conv2d_a/k1"]
    # xgb@16 best (seed 0): 1.5 * 100 * (1 + 1/16) = 159.375; the cwm@12 curve is 100 * (1 + 1/(i+1)), trial 2 failed
    assert se["xgb_640_best_us"] == pytest.approx(159.375)
    assert se["cwm_trials_to_reach"] == 3  # trial 3: 100 * 4/3 = 133 <= 159.4 (trial 2 failed)
    assert set(report["wall_per_trial_s"]["cwm"]) >= {"total_s_per_trial", "search_s_per_trial", "runs"}
    assert report["wall_per_trial_s"]["cwm"]["total_s_per_trial"] == pytest.approx(0.1)
    assert {"machine", "date", "geomean_speedup", "sample_efficiency"} <= set(report)
    assert (tmp_path / "search_curves.png").stat().st_size > 1000

    # a fourth start does no tuning and reuses the checkpointed re-measurements
    n_remeasure = len(fake_remeasure.calls)
    fourth = FakeTuner()
    assert _main(search, tmp_path, fourth) == 0
    assert fourth.calls == [] and len(fake_remeasure.calls) == n_remeasure


def test_partial_report_and_pinned_tasks(search, tmp_path):
    fake_remeasure.calls = []
    tuner = FakeTuner()
    assert _main(search, tmp_path, tuner, "--max-runs", "4", "--partial") == 0
    report = json.loads((tmp_path / "search.json").read_text())
    assert report["partial"] is True and len(report["runs"]["missing"]) == 18 - 4
    # seed 0 of the first task is complete: every method has one value and one missing seed
    assert report["tasks"]["fused_conv2d_a/k1"]["cwm"] == [100.0, None]
    assert report["geomean_speedup"]["cwm_vs_xgb"] == pytest.approx(1.5)
    assert report["sample_efficiency"]["fused_conv2d_a/k1"]["cwm_trials_to_reach"] is None
    # the tasks are pinned by the checkpoint: a different selection later does not change them
    other = [{"key": "zz", "name": "other", "op": "other", "records": 300, "flop": 1}] + TASKS
    out = search.main(["--tasks", "2", "--trials", "8", "--seeds", "0,1", "--sample-efficiency-tasks", "1",
                       "--xgb-long-trials", "16", "--max-cwm-trials", "12", "--out", str(tmp_path / "search.json"),
                       "--work-root", str(tmp_path / "wd"), "--report-only", "--partial"],
                      tune_fn=tuner, remeasure_fn=fake_remeasure, select_fn=lambda d, n, m: other[:n],
                      workload_fn=lambda key: key, model={"model_dir": "m", "prior_sha256": "abc"})
    assert out == 0 and len(tuner.calls) == 4
    tasks = json.loads((tmp_path / "search.json").read_text())["tasks"]
    assert set(tasks) == {"fused_conv2d_a/k1", "fused_matmul_b/k2"}
    # a different CWM model is refused
    with pytest.raises(SystemExit, match="differs"):
        search.main(["--tasks", "2", "--out", str(tmp_path / "search.json"), "--report-only", "--partial"],
                    tune_fn=tuner, remeasure_fn=fake_remeasure, select_fn=lambda d, n, m: TASKS,
                    workload_fn=lambda key: key, model={"model_dir": "m2", "prior_sha256": "other"})


def test_report_renderer(search, tmp_path):
    """bench/report.py renders a search.json (here a partial one from the fake tuner)."""
    fake_remeasure.calls = []
    _main(search, tmp_path, FakeTuner(), "--partial", "--max-runs", "18")
    spec = importlib.util.spec_from_file_location("bench_report", BENCH / "report.py")
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    text = "\n".join(report.search_table(json.loads((tmp_path / "search.json").read_text())))
    assert "fused_conv2d_a" in text and "1.50" in text and "sample efficiency" in text.lower()
    assert "fastest run of any method" in text


# ------------------------------------------------------------------ search profiles (issue #12, deliverable 6)
def test_profiled_methods_are_compared_to_baselines_and_to_their_plain_method(search):
    methods = ("cwm", "cwm@wide", "xgb_pretrained", "xgb_pretrained@wide")
    assert search.split_method("cwm@wide") == ("cwm", "wide") and search.split_method("xgb") == ("xgb", None)
    assert search.unknown_methods(["cwm@wide", "xgb", "cwm@nope", "foo@wide"], {"wide": {}}) == ["cwm@nope", "foo@wide"]
    table = {"a": {"cwm": [10.0], "cwm@wide": [5.0], "xgb_pretrained": [20.0], "xgb_pretrained@wide": [10.0]}}
    geo, _ = search.speedups(table, [0], methods=methods)
    assert geo == {"cwm_vs_xgb_pretrained": pytest.approx(2.0), "cwm_vs_xgb_pretrained@wide": pytest.approx(1.0),
                   "cwm@wide_vs_xgb_pretrained": pytest.approx(4.0),
                   "cwm@wide_vs_xgb_pretrained@wide": pytest.approx(2.0),
                   "cwm@wide_vs_cwm": pytest.approx(2.0), "xgb_pretrained@wide_vs_xgb_pretrained": pytest.approx(2.0)}


def test_parse_args_takes_profiles_and_rejects_unknown_ones(search, capsys):
    args = search.parse_args(["--methods", "cwm,cwm@wide,xgb_pretrained@wide"])
    assert args.method_list == ["cwm", "cwm@wide", "xgb_pretrained@wide"]
    with pytest.raises(SystemExit):
        search.parse_args(["--methods", "cwm@nope"])
    assert "search profile" in capsys.readouterr().err


def test_default_tuner_passes_the_profile_settings(search, monkeypatch):
    import cwm
    from cwm.tuning.settings import FastSettings, search_settings

    calls = []
    monkeypatch.setattr(cwm, "tune", lambda workload, **kw: calls.append(kw))
    tuner = search.DefaultTuner("model", "data", "wd")
    tuner("w", method="cwm@wide", seed=0, trials=8, work_dir="x")
    tuner("w", method="cwm", seed=0, trials=8, work_dir="x")
    assert calls[0]["cost_model"] == "cwm" and calls[0]["model_dir"] == "model"
    wide = calls[0]["settings"]
    assert (wide.population_size, wide.genetic_num_iters, wide.init_min_unmeasured) == (512, 4, 50)
    # only the search knobs change: measurement and builder stay FastSettings'
    assert (wide.num_trials_per_iter, wide.min_repeat_ms) == (FastSettings().num_trials_per_iter,
                                                               FastSettings().min_repeat_ms)
    assert "settings" not in calls[1]
    assert search_settings("fast") == FastSettings()
    with pytest.raises(ValueError, match="unknown search profile"):
        search_settings("nope")


class RetunedTuner(FakeTuner):
    """The same runs tuned again to other programs (another model, the same run ids)."""

    def __call__(self, workload, *, method, seed, trials, work_dir):
        out = super().__call__(workload, method=method, seed=seed, trials=trials, work_dir=work_dir)
        out.best_trace = json.dumps([*json.loads(out.best_trace), "retuned"])
        return out


def test_a_copied_checkpoint_re_measures_runs_tuned_again(search, tmp_path):
    """A checkpoint copied without CWM's runs keeps the old re-measurements, keyed by run ids
    that the re-tuned runs share: they must not stand for the new programs (they once did, and a
    report repeated the old search's figures)."""
    fake_remeasure.calls = []
    assert _main(search, tmp_path, FakeTuner()) == 0
    ckpt = tmp_path / "search_runs.jsonl"
    lines = [json.loads(line) for line in ckpt.read_text().splitlines()]
    ckpt.write_text("".join(json.dumps(r) + "\n" for r in lines if r.get("method") != "cwm"))
    before = len(fake_remeasure.calls)
    again = RetunedTuner()
    assert _main(search, tmp_path, again) == 0
    assert {c[1] for c in again.calls} == {"cwm"}
    assert len(fake_remeasure.calls) == before + 2  # both tasks re-measured with the new programs
    runs = [json.loads(line) for line in ckpt.read_text().splitlines()]
    latest = [r for r in runs if r["kind"] == "remeasure"][-2:]
    assert all(len(r["traces"]) == len(r["candidates"]) for r in latest)
    # and a fifth start reuses those
    assert _main(search, tmp_path, FakeTuner()) == 0 and len(fake_remeasure.calls) == before + 2
