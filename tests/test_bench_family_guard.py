"""The column-family benches refuse a model whose rows already hold the family they measure
(bench/tile_footprint.py, bench/loop_tiles.py): appended again, the variant would compare the
model with itself plus a copy of its own columns."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))


def test_a_family_the_model_takes_stops_the_bench():
    from common import require_family_absent

    require_family_absent(("compute_locations",), "tile_footprint", "bench/x.py")  # absent: goes on
    with pytest.raises(SystemExit, match="already takes the tile_footprint columns"):
        require_family_absent(("compute_locations", "tile_footprint"), "tile_footprint", "bench/x.py")


@pytest.mark.parametrize("bench", ["tile_footprint", "loop_tiles"])
def test_the_shipped_model_stops_both_benches_before_any_work(bench, monkeypatch):
    """The shipped model takes both families (its manifest), so each bench stops at its guard,
    before it reads a dataset."""
    import importlib

    module = importlib.import_module(bench)
    import within_task

    def no_dataset(*args, **kwargs):
        raise AssertionError("the bench read its dataset before its guard")

    monkeypatch.setattr(within_task, "zoo_tasks", no_dataset)
    monkeypatch.setattr(within_task, "zoo_tasks_and_priors", no_dataset)
    with pytest.raises(SystemExit, match=f"already takes the {bench} columns"):
        module.main([])
