"""Shared fixtures: the recorded real traces in tests/data/traces.jsonl.gz."""
from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

import cwm  # noqa: F401  (installs the TVMScript speed fix before any test parses TIR)

DATA = Path(__file__).parent / "data"

# Tests never read or write the machine's shared tuning database (~/.cache/cwm/tuning): records of
# one test (or of the user's compiles) would make another's tuning a reuse. The tests of the shared
# database pass their own folder (tests/test_shared_database.py).
os.environ["CWM_TUNING_CACHE"] = "off"


def load_trace_records() -> list[dict]:
    with gzip.open(DATA / "traces.jsonl.gz", "rt") as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="session")
def trace_records():
    return load_trace_records()


@pytest.fixture(scope="session")
def workload_mods(trace_records):
    from cwm import workloads

    return {name: workloads.get(name) for name in sorted({r["workload"] for r in trace_records})}


@pytest.fixture(scope="session")
def tiny_dataset(tmp_path_factory, trace_records):
    """A dataset made of the recorded llvm tuning traces (6 workloads), no new measurement.

    ``softmax`` is the held-out (test) task; the others form the training split.
    """
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


def tiny_train_config(seed: int = 0):
    """A world-model training config small enough for a test (seconds, not minutes)."""
    from cwm.model.ranker import RankerConfig
    from cwm.model.rollout_training import RolloutConfig
    from cwm.model.train import TrainConfig
    from cwm.model.transition import TransitionConfig

    return TrainConfig(seed=seed, states_per_task=4, encoder_steps=3, encoder_time_s=60, encoder_eval=False,
                       rollout_trajectories=12,
                       rollout=RolloutConfig(epochs=2, steps_per_trajectory=2),
                       transition=TransitionConfig(dim=128, hidden=32, hash_buckets=64),
                       ranker=RankerConfig(n_estimators=10))


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, tiny_dataset):
    """A tiny world model trained on :func:`tiny_dataset` (shared by the cost-model and tuning tests)."""
    from cwm.model.train import train_world_model

    out = tmp_path_factory.mktemp("tiny_model") / "model"
    train_world_model(tiny_dataset, out, tiny_train_config(), log=lambda *_: None)
    return out
