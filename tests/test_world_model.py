"""The world model end to end on a tiny dataset: train -> save -> load -> identical scores; same seed, same model."""
from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="module")
def tiny_dataset(tmp_path_factory, trace_records):
    """A dataset made of the recorded llvm tuning traces (6 workloads), no new measurement."""
    from cwm import workloads
    from cwm.dataset.store import DatasetStore, register_task
    from cwm.dataset.zoo_tasks import write_split

    root = tmp_path_factory.mktemp("tiny")
    store = DatasetStore(root)
    for name in sorted({r["workload"] for r in trace_records}):
        key = register_task(store, name, workloads.get(name), {"heldout_net" if "softmax" in name else "net": 1})
        rows = [{"id": i, "task": key, "source": "search", "trace": r["trace"], "run_secs": r["run_secs"],
                 "build_error": r["build_error"], "run_error": r["run_error"], "final_hash": r["final_hash"]}
                for i, r in enumerate(x for x in trace_records if x["workload"] == name and x["source"] == "tuning")]
        store.append(key, rows[:12])
        store.finish(key)
    store.write_manifest({"target": {"kind": "llvm", "num-cores": 2}})
    write_split(root, heldout=("heldout_net",))
    return root


def _cfg(seed=0):
    from cwm.model.encoder import EncoderConfig  # noqa: F401  (the encoder config comes from TrainConfig)
    from cwm.model.ranker import RankerConfig
    from cwm.model.rollout_training import RolloutConfig
    from cwm.model.train import TrainConfig
    from cwm.model.transition import TransitionConfig

    return TrainConfig(seed=seed, states_per_task=4, encoder_steps=3, encoder_time_s=60, encoder_eval=False,
                       rollout_trajectories=12,
                       rollout=RolloutConfig(epochs=2, steps_per_trajectory=2),
                       transition=TransitionConfig(dim=128, hidden=32, hash_buckets=64),
                       ranker=RankerConfig(n_estimators=10))


def test_train_save_load_identical_scores_and_determinism(tiny_dataset, tmp_path):
    from cwm.dataset.loader import DatasetLoader
    from cwm.model.train import train_world_model
    from cwm.model.world_model import WorldModel

    train_world_model(tiny_dataset, tmp_path / "a", _cfg(), log=lambda *_: None)
    train_world_model(tiny_dataset, tmp_path / "b", _cfg(), log=lambda *_: None)
    loader = DatasetLoader(tiny_dataset)
    (test_key,) = loader.task_keys("test")
    traces = [t.trace for t in loader.trajectories(test_key)]
    target = {"kind": "llvm", "num-cores": 2}
    a, b = WorldModel.load(tmp_path / "a"), WorldModel.load(tmp_path / "b")
    sa = a.score(loader.workload(test_key), traces, target)
    assert sa.shape == (len(traces),) and np.isfinite(sa).all() and np.unique(sa).size > 1
    assert np.array_equal(sa, b.score(loader.workload(test_key), traces, target))  # same seed, same model
    again = WorldModel.load(tmp_path / "a")
    assert np.array_equal(sa, again.score(loader.workload(test_key), traces, target))  # save -> load
    manifest = (tmp_path / "a" / "manifest.json").read_text()
    assert "training_data" in manifest and "metrics" in manifest


def test_load_rejects_non_model_dirs(tmp_path):
    from cwm.model.world_model import WorldModel

    with pytest.raises(FileNotFoundError, match="not a CWM model directory"):
        WorldModel.load(tmp_path)
