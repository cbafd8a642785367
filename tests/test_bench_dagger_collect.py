"""bench/dagger_collect.py and its offline table: the order tasks are collected in, and how the
result is shown (no tuning here)."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))


def test_tasks_are_taken_in_turn_over_folds_heaviest_first():
    from dagger_collect import interleaved

    def task(key, network, flop):
        return {"key": key, "networks": [network], "flop": flop}

    tasks = [task("a1", "a", 1), task("a2", "a", 9), task("a3", "a", 5), task("b1", "b", 2), task("c1", "c", None)]
    # a collection stopped after three tasks has one of each fold, each fold's heaviest first
    assert [t["key"] for t in interleaved(tasks)] == ["a2", "b1", "c1", "a3", "a1"]


def test_the_offline_table_shows_each_ranker_on_each_set():
    from report import dagger_offline_table

    def metrics(top1):
        return {"top1": top1, "top1_task_mean": 0.5, "top5": 0.9, "pairwise_acc": 0.75, "pairwise_clear": 0.8,
                "spread": 1.234}

    sets = {"zoo": metrics(0.8), "dataset_dagger": metrics(0.6), "dataset_control": metrics(0.7)}
    entry = {"pooled": sets, "tasks": {"zoo": 10, "dataset_dagger": 9, "dataset_control": 8}}
    table = dagger_offline_table({
        "networks": ["a", "b"], "clear_ratio": 1.1, "machine": "a host", "date": "2026-12-06",
        "extra_roots": {
            "dataset_dagger": {"finished_tasks": 9, "records": 432, "cpu_model": "a CPU",
                               "collect_config": {"trials": 48, "source": "cwm_search"}},
            "dataset_control": {"finished_tasks": 8, "records": 384, "cpu_model": "a CPU",
                                "collect_config": {"trials": 48, "source": "search"}}},
        "results": {"shipped_roots": entry, "with_dataset_dagger": entry, "with_dataset_control": entry}})
    rows = [line for line in table if line.startswith("| ")][1:]
    assert len(rows) == 9  # three rankers, each on three sets
    assert [c.strip() for c in rows[1].strip("|").split("|")] == [
        "shipped roots", "dataset_dagger", "9", "0.600", "0.500", "0.900", "0.7500", "0.8000", "1.23"]
    assert "432 records of 48-trial CWM-guided searches measured on a CPU" in table[0]
    assert "384 records of 48-trial `XGBModel`-guided searches" in table[0]
    assert "at least 10 % apart" in table[0]


def test_clear_pairs_and_spread():
    import numpy as np
    from dagger_offline import clear_pairwise, spread

    lat = np.array([1.0, 1.05, 2.0, np.inf])
    # pairs at least 10 % apart: (2.0, 1.0) and (2.0, 1.05); the failed candidate is left out
    assert clear_pairwise(lat, np.array([3.0, 0.0, 1.0, 9.0])) == 0.5
    assert clear_pairwise(lat, np.array([3.0, 2.0, 1.0, 0.0])) == 1.0
    assert np.isnan(clear_pairwise(np.array([1.0, 1.05]), np.array([1.0, 0.0])))
    assert spread(lat) == 1.05
