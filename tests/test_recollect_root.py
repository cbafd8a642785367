"""tools/recollect_root.py: a re-collection root starts with the source's usable tasks and split."""
from __future__ import annotations

import json
import shutil

import pytest

from tests.tool_modules import tool


def test_a_recollection_root_takes_the_usable_tasks_cheapest_first(tiny_dataset, tmp_path):
    from cwm.dataset.loader import DatasetLoader
    from cwm.dataset.store import DatasetError, DatasetStore

    source, recollect = DatasetLoader(tiny_dataset), tool("recollect_root")
    walls = {key: 10.0 * (i % 3) + i for i, key in enumerate(source.task_keys())}
    copy = tmp_path / "source"
    shutil.copytree(tiny_dataset, copy)
    for key, wall in walls.items():
        DatasetStore(copy).put_task(key, {**source.store.get_task(key), "collect_wall_s": wall})
    usable = [k for k in source.task_keys()
              if sum(t.latency is not None for t in source.trajectories(k)) >= 2]
    keys = recollect.start_recollection(copy, tmp_path / "again")
    assert keys == sorted(usable, key=walls.get)  # cheapest first
    again = DatasetLoader(tmp_path / "again")
    assert again.task_keys() == sorted(usable)
    assert again.task_keys("test") == [k for k in source.task_keys("test") if k in usable]  # held out stays held out
    assert again.task_keys("train") == [k for k in source.task_keys("train") if k in usable]
    for key in usable:  # the workload and networks, not the source's collection time
        meta = again.store.get_task(key)
        assert meta == {k: v for k, v in source.store.get_task(key).items() if k != "collect_wall_s"}
        assert not again.store.is_finished(key)
    assert json.loads((tmp_path / "again" / "split.json").read_text())["train_tasks"] == again.task_keys("train")

    DatasetStore(tmp_path / "again").write_manifest({})
    with pytest.raises(DatasetError, match="already holds a collection"):
        recollect.start_recollection(copy, tmp_path / "again")
