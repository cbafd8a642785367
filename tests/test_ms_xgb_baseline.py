"""Baseline (b): MetaSchedule's XGBModel trained offline on recorded traces (no hardware)."""
from __future__ import annotations

import copy

import numpy as np
import pytest

pytest.importorskip("xgboost")

from cwm.actions import featurize_batch  # noqa: E402
from cwm.dataset.loader import Trajectory  # noqa: E402
from cwm.model.baselines.ms_xgb import MsXgbBaseline  # noqa: E402
from cwm.model.metrics import pairwise_accuracy  # noqa: E402

SEEN, OTHER, UNSEEN = "matmul_256", "batch_matmul_12x128x128x64", "layer_norm_128x768"


def _task(key, records, mod):
    trajs = [Trajectory(key, r, mod) for r in records]
    lat = np.array([t.latency if t.latency is not None else np.inf for t in trajs], np.float64)
    return {"key": key, "trajs": trajs, "lat": lat, "fb": featurize_batch([t.trace for t in trajs]),
            "weight": 1.0}


@pytest.fixture(scope="module")
def setup(trace_records, workload_mods):
    tuning = [r for r in trace_records if r["source"] == "tuning"]
    tasks = {n: _task(n, [r for r in tuning if r["workload"] == n], workload_mods[n])
             for n in (SEEN, OTHER, UNSEEN)}
    target = tuning[0]["target"]  # the JSON text of an llvm target dict
    return tasks, workload_mods.__getitem__, target


@pytest.fixture(scope="module")
def fitted(setup):
    tasks, workload_of, target = setup
    return MsXgbBaseline(target, seed=0, num_threads=1).fit([tasks[SEEN]], workload_of)


def test_scores_unseen_workload(setup):
    tasks, workload_of, target = setup
    model = MsXgbBaseline(target, seed=0, num_threads=1).fit([tasks[SEEN], tasks[OTHER]], workload_of)
    assert model.stats["train_tasks"] == 2 and model.stats["train_groups"] == 2
    # the final booster saw every training candidate (the forced last retrain)
    assert model.stats["train_samples"] == len(tasks[SEEN]["trajs"]) + len(tasks[OTHER]["trajs"])
    s = model.score(tasks[UNSEEN], workload_of)
    assert s.shape == (len(tasks[UNSEEN]["trajs"]),) and s.dtype == np.float64
    assert np.isfinite(s).all()


def test_learns_seen_workload(setup, fitted):
    tasks, workload_of, _ = setup
    s = fitted.score(tasks[SEEN], workload_of)
    assert np.isfinite(s).all()
    # XGBModel.predict is a normalized score (min_cost / cost): higher = faster
    assert pairwise_accuracy(tasks[SEEN]["lat"], s) > 0.65


def test_deterministic(setup, fitted):
    tasks, workload_of, target = setup
    again = MsXgbBaseline(target, seed=0, num_threads=1).fit([tasks[SEEN]], workload_of)
    for key in (SEEN, UNSEEN):
        np.testing.assert_array_equal(fitted.score(tasks[key], workload_of), again.score(tasks[key], workload_of))


def test_failures_and_broken_traces(setup, fitted):
    tasks, workload_of, target = setup
    task = tasks[OTHER]
    recs = [copy.deepcopy(t.record) for t in task["trajs"][:12]]
    recs[0].update(run_secs=None, run_error="RuntimeError: boom")  # runner failure: kept, cost 1e10
    recs[1].update(build_error="BuildError: boom")  # build failure: left out, as UpdateCostModel does
    bad = _task(OTHER, recs, task["trajs"][0].workload)
    model = MsXgbBaseline(target, seed=0, num_threads=1).fit([bad], workload_of)
    assert model.stats["train_failed_runs"] == 1 and model.stats["skipped_build_errors"] == 1
    assert model.stats["train_samples"] == 11

    broken = copy.deepcopy(task["trajs"][0].record)
    broken["trace"] = '[[["GetSBlock",[],["no_such_block","main"],["b0"]]],[]]'
    scored = _task(OTHER, [broken] + [copy.deepcopy(t.record) for t in task["trajs"][1:6]], task["trajs"][0].workload)
    s = fitted.score(scored, workload_of)
    assert s.shape == (6,) and np.isfinite(s).all()
    assert s[0] < s[1:].min() and fitted.stats["replay_failures"] >= 1
