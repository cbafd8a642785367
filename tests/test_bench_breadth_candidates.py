"""bench/breadth_candidates.py: which breadth rows each variant fits on (decision 69)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))


def _task(key: str, n: int, lat0: float) -> dict:
    return {"key": key, "lat": lat0 + np.arange(n, dtype=np.float64), "stats": np.zeros((n, 3), np.float32),
            "zt_hat": np.zeros((n, 2), np.float32), "z0": np.zeros(2, np.float32), "weight": 1.0}


def test_a_recollected_task_replaces_its_zen5_copy_and_only_it():
    from breadth_candidates import variants

    breadth = [_task("a", 32, 0.0), _task("b", 32, 100.0), _task("c", 32, 200.0)]
    zen4 = [_task("b", 64, 1000.0)]
    rows = variants(breadth, zen4)
    assert list(rows) == ["zen5_32", "zen4_64", "zen4_32"]
    assert rows["zen5_32"] is breadth
    by_key = {v: {t["key"]: t for t in rows[v]} for v in rows}
    for v in ("zen4_64", "zen4_32"):
        assert sorted(by_key[v]) == ["a", "b", "c"]  # each task once
        assert by_key[v]["a"] is breadth[0] and by_key[v]["c"] is breadth[2]  # the others as shipped
        assert by_key[v]["b"]["lat"].min() >= 1000.0  # the Zen 4 candidates, never mixed with Zen 5 ones
    assert len(by_key["zen4_64"]["b"]["lat"]) == 64
    cut = by_key["zen4_32"]["b"]
    assert len(cut["lat"]) == 32 and len(cut["stats"]) == 32 and len(cut["zt_hat"]) == 32  # rows cut alike
    assert len(np.unique(cut["lat"])) == 32 and set(cut["lat"]) <= set(zen4[0]["lat"])


def test_replay_row_pairs_against_the_base():
    from vector_alignment import replay_row

    curves = {"base": np.array([[0.5, 0.9], [0.7, 1.0]]), "new": np.array([[0.6, 0.9], [0.8, 1.0]])}
    assert replay_row(curves, "base", "base") == {"mean_best_ratio": [0.6, 0.95]}
    row = replay_row(curves, "new", "base")
    assert np.allclose(row["mean_best_ratio"], [0.7, 0.95])
    assert np.allclose([r[0] for r in row["vs_base"]], [0.1, 0.0])  # per round, the mean paired difference


def test_seed_line_reads_a_network_row_with_its_counts():
    """``network_row`` puts the breadth counts beside the per-seed metrics; the log line shows the
    seeds only (a run once died here after 13 minutes of fitting)."""
    from vector_alignment import seed_line

    metrics = {"top1": 0.5, "top1_task_mean": 0.25, "pairwise_acc": 0.78125}
    row = {"fit_only_tasks": 3, "fit_only_rows": 96, "seed_0": metrics, "seed_1": {**metrics, "top1": 0.75}}
    assert seed_line(row) == "0.500/0.250/0.7812 0.750/0.250/0.7812"
