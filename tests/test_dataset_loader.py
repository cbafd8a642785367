"""The loader on a small real collection: trajectories round-trip and replay."""
from __future__ import annotations

import pytest

from cwm.dataset.loader import DatasetLoader


@pytest.fixture(scope="module")
def small_dataset(tmp_path_factory):
    from cwm import workloads
    from cwm.tuning.collect import CollectConfig, collect
    from cwm.dataset.store import DatasetStore, register_task
    from cwm.dataset.zoo_tasks import write_split

    root = tmp_path_factory.mktemp("ds")
    store = DatasetStore(root)
    register_task(store, "softmax", workloads.softmax(16, 64), {"net_a": 1})
    register_task(store, "matmul", workloads.matmul(32), {"heldout_net": 2})
    collect(store, store.task_keys(), cfg=CollectConfig(trials=8, random_samples=4), progress=False)
    write_split(root, heldout=("heldout_net",))
    return root


def test_trajectories_round_trip(small_dataset):
    import tvm_ffi

    loader = DatasetLoader(small_dataset)
    trajs = list(loader)
    assert len(trajs) == 24
    assert {t.record["source"] for t in trajs} == {"random", "search"}
    for t in trajs[::5]:
        states = t.states()
        assert len(states) == len(t.actions) + 1
        assert tvm_ffi.structural_equal(states[0], loader.workload(t.task))
        assert int(tvm_ffi.structural_hash(states[-1])) == t.record["final_hash"]
        assert "T.prim_func" in t.initial_text and t.final_text != t.initial_text
        if t.latencies:
            assert len(t.latencies) >= 3 and t.latency > 0


def test_split_and_stats(small_dataset):
    from cwm.dataset.stats import dataset_stats

    loader = DatasetLoader(small_dataset)
    assert len(loader.task_keys("test")) == 1 and len(loader.task_keys("train")) == 1
    with pytest.raises(ValueError):
        loader.task_keys("validation")
    stats = dataset_stats(small_dataset)
    assert stats == {"tasks": 2, "finished_tasks": 2, "records": 24, "networks": ["heldout_net", "net_a"],
                     "heldout_tasks": 1}
    manifest = loader.store.manifest()
    assert manifest["records"] == 24 and manifest["format_version"] == 1 and manifest["tvm_version"]
    assert all(len(s["sha256"]) == 64 for s in manifest["shards"].values())


def test_verify_round_trips_every_shard_and_names_a_tampered_one(small_dataset, tmp_path):
    import gzip
    import shutil

    from cwm.dataset.verify import verify

    report = verify(small_dataset, replay_per_task=-1, log=lambda *_: None)
    assert report["problems"] == [] and report["records"] == 24 and report["replayed"] == 24
    copy = tmp_path / "ds"
    shutil.copytree(small_dataset, copy)
    shard = next((copy / "shards").glob("*.jsonl.gz"))
    lines = gzip.decompress(shard.read_bytes()).decode().splitlines(keepends=True)
    shard.write_bytes(gzip.compress("".join(lines[:-1]).encode()))  # a record lost, still valid gzip
    problems = verify(copy, replay_per_task=0, log=lambda *_: None)["problems"]
    assert any(shard.name in p and "sha256" in p for p in problems)
    assert any(shard.name in p and "records" in p for p in problems)
