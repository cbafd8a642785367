"""bench/parent_temperature.py: the fold of a task and the summary (no tuning here)."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))


def test_network_of_takes_the_first_network_and_skips_tasks_without_one():
    from parent_temperature import network_of

    tasks = [{"key": "a", "networks": ["resnet18", "resnet50"]}, {"key": "b", "networks": []}]
    assert network_of(tasks) == {"a": "resnet18"}


def test_summary_pairs_each_temperature_with_the_baseline_of_the_same_task_and_seed():
    from parent_temperature import summary

    def row(task, seed, temp, curve):
        return {"task": task, "seed": seed, "temperature": temp, "curve": curve, "wall_s": 1.0}

    flat = [None] * 31
    rows = [row("a", 0, 1.0, flat + [100.0] * 33),
            row("a", 0, 2.0, flat + [200.0] + [50.0] * 32),      # at 32: 2.0; at 64: 0.5
            row("a", 1, 2.0, flat + [10.0] * 33),                # no baseline of seed 1: not paired
            row("b", 0, 1.0, flat + [10.0] * 33),
            row("b", 0, 2.0, flat + [10.1] * 33)]                # within 2 %: neither
    out = summary(rows, [1.0, 2.0])
    t2 = out["temperatures"]["2"]
    at_64 = {k: v for k, v in t2["at_64"].items() if k != "task_bootstrap_90"}
    assert at_64 == {"pairs": 2, "geomean_best_over_baseline": pytest.approx(math.sqrt(0.5 * 1.01)),
                     "faster": 1, "slower": 0}
    low, high = t2["at_64"]["task_bootstrap_90"]  # two tasks, one pair each: between their ratios
    assert 0.5 - 1e-12 <= low <= high <= 1.01 + 1e-12
    assert t2["at_32"]["geomean_best_over_baseline"] == pytest.approx(math.sqrt(2.0 * 1.01))
    assert (t2["at_32"]["faster"], t2["at_32"]["slower"]) == (0, 1)
    assert out["temperatures"]["1"]["at_64"]["geomean_best_over_baseline"] == pytest.approx(1.0)


def test_task_bootstrap_interval_holds_the_geomean_and_needs_two_tasks():
    from parent_temperature import task_bootstrap

    assert task_bootstrap([[0.5, 0.5]]) is None
    low, high = task_bootstrap([[0.5, 0.5], [2.0, 2.0], [1.0, 1.0]])
    assert 0.5 <= low <= 1.0 <= high <= 2.0  # each draw's geomean lies between the extreme tasks
    assert task_bootstrap([[0.9], [0.9]]) == pytest.approx([0.9, 0.9])


def test_report_table_leaves_the_baseline_out_and_prints_each_interval():
    from parent_temperature import summary
    from report import parent_temperature_table

    def row(task, seed, temp, best):
        return {"task": task, "seed": seed, "temperature": temp, "curve": [best] * 64, "wall_s": 1.0}

    rows = [row(t, 0, temp, best) for t, pairs in (("a", ((1.0, 100.0), (2.0, 90.0))),
                                                   ("b", ((1.0, 10.0), (2.0, 11.0))))
            for temp, best in pairs]
    result = {**summary(rows, [1.0, 2.0]), "machine": "a host", "date": "2026-12-05"}
    lines = [line for line in parent_temperature_table(result) if line.startswith("| 2 |")]
    assert len(lines) == 1 and not any(line.startswith("| 1 |") for line in parent_temperature_table(result))
    cells = [c.strip() for c in lines[0].strip("|").split("|")]
    assert cells[1] == "2" and cells[2] == f"{math.sqrt(0.9 * 1.1):.3f}" and cells[4] == "1 / 1"
    assert cells[3] == "0.900-1.100"  # two tasks, one pair each: the interval spans their ratios
