"""bench/label_noise.py: the table from two measurements, the seeded subset, the checkpoint's
refusal of other candidates (no TVM measurement here: the passes are given)."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))


def test_a_label_is_the_median_of_its_run_seconds_as_the_datasets_and_a_failure_is_infinite():
    from label_noise import label_seconds

    assert label_seconds([1.0, 2.0, 3.0]) == 2.0
    assert label_seconds([1.0, 1.0, 4.0]) == 1.0  # the median, as Trajectory.latency, not the mean
    assert label_seconds(None) == math.inf
    assert label_seconds([]) == math.inf
    assert label_seconds([1.0, 0.0]) == math.inf


def test_the_subset_is_seeded_by_task_and_keeps_small_tasks_whole():
    from label_noise import subset

    idx = list(range(0, 200, 2))
    one = subset(idx, 10, "task-a", 0)
    assert one == subset(idx, 10, "task-a", 0) and len(one) == 10 and one == sorted(one)
    assert set(one) <= set(idx)
    assert one != subset(idx, 10, "task-b", 0)  # another task draws its own (100 choose 10: no tie)
    assert subset([5, 3, 9], 10, "task-a", 0) == [3, 5, 9]


def _task(a, b, label, cwm, weight=1.0):
    return {"a": a, "b": b, "label": label, "cwm": cwm, "weight": weight}


def test_two_identical_passes_read_a_perfect_ceiling_and_a_reversed_model_reads_zero():
    from label_noise import noise_table

    lat = [1.0, 2.0, 3.0, 4.0]
    out = noise_table([_task(lat, lat, lat, [-x for x in lat]), _task(lat, lat, lat, lat)])
    rows = out["rows"]
    assert rows["ceiling"]["pairwise_acc"] == 1.0 and rows["ceiling"]["top1"] == 1.0
    assert rows["dataset_label_on_a"]["pairwise_acc"] == 1.0
    # the first task's scores are right, the second's reversed: half the pairs of each
    assert rows["cwm_on_a"]["pairwise_acc"] == 0.5
    assert out["spread"] == {"candidates": 8, "tasks": 2, "median_abs_log_b_over_a": 0.0,
                             "p90_abs_log_b_over_a": 0.0, "median_log_b_over_a": 0.0}


def test_the_ceiling_counts_the_pairs_two_measurements_order_apart():
    from label_noise import noise_table

    a = [1.0, 2.0, 3.0, 4.0]
    b = [2.0, 1.0, 3.0, 4.0]  # the first pair swapped: 5 of 6 pairs agree
    rows = noise_table([_task(a, b, a, [0.0] * 4)])["rows"]
    assert rows["ceiling_a_on_b"]["pairwise_acc"] == pytest.approx(5 / 6, abs=1e-12)  # exact ratios of counts
    assert rows["ceiling"]["pairwise_acc"] == pytest.approx(5 / 6, abs=1e-12)
    # A's pick (the first) is B's second best: B's best 1.0 over its 2.0
    assert rows["ceiling_a_on_b"]["top1"] == 0.5


def test_a_candidate_failed_in_either_pass_leaves_every_row():
    from label_noise import noise_table

    a = [1.0, math.inf, 3.0, 4.0]
    b = [1.0, 2.0, 3.0, 4.0]
    out = noise_table([_task(a, b, b, [4.0, 3.0, 2.0, 1.0])])
    assert out["spread"]["candidates"] == 3
    assert out["rows"]["cwm_on_dataset_label"]["pairwise_acc"] == 1.0  # the three left are in order
    assert noise_table([_task([1.0, math.inf], [1.0, 2.0], [1.0, 2.0], [0.0, 0.0])])["spread"]["tasks"] == 0


def test_the_checkpoint_refuses_a_run_that_picks_other_candidates(tmp_path):
    from label_noise import NoiseCheckpoint, _measure_passes

    ckpt = NoiseCheckpoint(str(tmp_path / "runs.jsonl"))
    ckpt.append({"task": "t", "pass": "A", "indices": [0, 1], "run_secs": [[1.0], [2.0]]})
    reread = NoiseCheckpoint(str(tmp_path / "runs.jsonl"))
    assert reread.done[("t", "A")]["indices"] == [0, 1]
    with pytest.raises(SystemExit, match="other candidates"):
        _measure_passes({"t": ([], [0, 2])}, reread, None, None, None, "host", 0.0)


def test_the_passes_resume_where_the_checkpoint_stops(tmp_path, monkeypatch):
    import label_noise

    calls = []
    monkeypatch.setattr(label_noise, "measure", lambda workload, traces, b, r: calls.append(traces) or [[1.0]] * len(traces))

    class Loader:
        def workload(self, key):
            return key

    class Traj:
        def __init__(self, i):
            self.trace = f"trace{i}"

    ckpt = label_noise.NoiseCheckpoint(str(tmp_path / "runs.jsonl"))
    ckpt.append({"task": "t1", "pass": "A", "indices": [0, 1], "run_secs": [[1.0], [1.0]]})
    plan = {"t1": ([Traj(0), Traj(1)], [0, 1]), "t2": ([Traj(0), Traj(1)], [1])}
    label_noise._measure_passes(plan, ckpt, Loader(), None, None, "host", 0.0)
    assert calls == [["trace1"], ["trace0", "trace1"], ["trace1"]]  # t2 A, then t1 B and t2 B
    assert sorted(ckpt.done) == [("t1", "A"), ("t1", "B"), ("t2", "A"), ("t2", "B")]
    assert np.all([r["machine"] == "host" for k, r in ckpt.done.items() if k != ("t1", "A")])


def test_the_readme_table_names_the_rows_and_says_when_the_model_is_in_sample():
    import report
    from label_noise import noise_table

    lat = [1.0, 2.0, 3.0]
    table = noise_table([_task(lat, lat, lat, [3.0, 2.0, 1.0])])
    payload = {"split": "train", "data": "data/dataset", "candidates_per_task": 3, "protocol": {"repeat": 3,
               "min_repeat_ms": 10}, "labels_measured_on": "AMD EPYC", "machine": "m", "date": "d", **table}
    lines = report.label_noise_table(payload)
    assert "in sample" in lines[0] and "| pass A / pass B | the other pass | 1.000 | 1.000 | 1.000 | 1.000 |" in lines
    assert "in sample" not in report.label_noise_table(payload | {"split": "test"})[0]
    assert ("label_noise_xeon_m167.json", report.label_noise_table) in report.TABLES
