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
        return {"top1": top1, "top1_task_mean": 0.5, "top5": 0.9, "pairwise_acc": 0.75}

    entry = {"pooled": {"zoo": metrics(0.8), "cwm_search": metrics(0.6)}, "tasks": {"zoo": 10, "cwm_search": 9}}
    table = dagger_offline_table({
        "networks": ["a", "b"], "extra_root": "data/x", "machine": "a host", "date": "2026-12-06",
        "extra_manifest": {"finished_tasks": 9, "records": 432, "cpu_model": "a CPU", "collect_config": {"trials": 48}},
        "results": {"shipped_roots": entry, "with_cwm_search": entry}})
    rows = [line for line in table if line.startswith("| ")][1:]
    assert len(rows) == 4
    assert [c.strip() for c in rows[1].strip("|").split("|")] == [
        "shipped roots", "cwm_search", "9", "0.600", "0.500", "0.900", "0.7500"]
    assert "432 records of 48-trial CWM-guided searches measured on a CPU" in table[0]
