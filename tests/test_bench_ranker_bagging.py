"""bench/ranker_bagging.py refuses a tree list it cannot compare before it loads anything."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))


@pytest.mark.parametrize("trees", ["4", "4,0"])
def test_needs_two_tree_counts_of_at_least_one(trees, tmp_path):
    from ranker_bagging import main

    with pytest.raises(SystemExit, match="at least two counts"):
        main(["--trees", trees, "--out", str(tmp_path / "out.json")])
    assert not (tmp_path / "out.json").exists()


def test_report_table_averages_the_seeds_and_reads_the_replay_at_8_16_24():
    from report import ranker_bagging_table

    def seed(top1, pairwise):
        return {"top1": top1, "top1_task_mean": 0.5, "pairwise_acc": pairwise}

    result = {"tasks": 63, "fit_only_tasks": 257, "machine": "a host", "date": "2026-12-05",
              "network": {"pt4": {"fit_only_tasks": 257, "ranker_seed_0": seed(0.2, 0.78),
                                  "ranker_seed_1": seed(0.4, 0.79)}},
              "replay": {"pt4": {"mean_best_ratio": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]}}}
    rows = [line for line in ranker_bagging_table(result) if line.startswith("| 4 |")]
    assert rows == ["| 4 | 0.300 | 0.500 | 0.7850 | 0.7800, 0.7900 | 0.200 / 0.400 / 0.600 |"]
