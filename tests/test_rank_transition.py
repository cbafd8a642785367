"""The transition fine-tuned with a ranking loss (cwm.model.rank_transition), on recorded traces."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from cwm.actions import featurize_batch  # noqa: E402
from cwm.model.metrics import pairwise_accuracy  # noqa: E402
from cwm.model.rank_transition import (RankTransitionConfig, rollouts, save_transition,  # noqa: E402
                                       train_rank_transition)
from cwm.model.transition import TransH, TransitionConfig  # noqa: E402

TCFG = TransitionConfig(dim=16, hidden=16, hash_buckets=64)
CFG = RankTransitionConfig(epochs=25, lr=3e-3, threads=1, time_budget_s=600)  # the epoch limit ends training


@pytest.fixture(scope="module")
def tasks(trace_records):
    recs = [r for r in trace_records if r["source"] == "tuning"]
    rng = np.random.default_rng(0)
    out = []
    for w in sorted({r["workload"] for r in recs}):
        rs = [r for r in recs if r["workload"] == w]
        lat = np.array([float(np.median(r["run_secs"])) if r["run_secs"] else np.inf for r in rs])
        z0 = rng.normal(size=TCFG.dim).astype(np.float32)
        out.append({"lat": lat, "fb": featurize_batch([r["trace"] for r in rs]), "z0": z0 / np.linalg.norm(z0)})
    return out


@pytest.fixture(scope="module")
def start():
    torch.manual_seed(0)
    return TransH(TCFG).eval()


@pytest.fixture(scope="module")
def trained(start, tasks):
    return train_rank_transition(start, tasks, CFG)


def _axis_accuracy(transition, tasks, axis=0):
    return np.mean([pairwise_accuracy(t["lat"], (z - t["z0"])[:, axis]) for t, z in zip(tasks, rollouts(transition, tasks))])


def test_the_axis_learns_the_training_tasks_ranking(start, trained, tasks):
    model, history = trained
    assert len(history) == CFG.epochs and history[-1] < history[0]
    before, after = _axis_accuracy(start, tasks), _axis_accuracy(model, tasks)
    # six tasks of ~20 candidates: the fitted axis must order them clearly better than the start
    assert after > max(before, 0.5) + 0.1, (before, after)


def test_the_start_is_left_alone_and_training_is_deterministic(start, trained, tasks):
    ref = {k: v.clone() for k, v in start.state_dict().items()}
    again, _ = train_rank_transition(start, tasks, CFG)
    for k, v in start.state_dict().items():
        assert torch.equal(v, ref[k]), k
    for a, b in zip(rollouts(trained[0], tasks), rollouts(again, tasks)):
        np.testing.assert_array_equal(a, b)


def test_native_rollouts_are_the_torch_model(trained, tasks):
    from cwm.model.transition import tensors

    model, _ = trained
    for t, native_z in zip(tasks, rollouts(model, tasks)):
        z0 = torch.from_numpy(np.repeat(t["z0"][None], len(t["lat"]), 0))
        with torch.no_grad():
            ref = model(z0, *tensors(t["fb"], TCFG)).numpy()
        # float32 in both, ~40 normalised steps: round-off, not a different function
        np.testing.assert_allclose(native_z, ref, atol=1e-4)


def test_bad_config_and_data_are_refused(start, tasks):
    with pytest.raises(ValueError, match="readout"):
        train_rank_transition(start, tasks, RankTransitionConfig(readout="mlp"))
    with pytest.raises(ValueError, match="axis"):
        train_rank_transition(start, tasks, RankTransitionConfig(axis=TCFG.dim))
    one = [dict(tasks[0], lat=np.full(len(tasks[0]["lat"]), np.inf))]
    with pytest.raises(ValueError, match="no task"):
        train_rank_transition(start, one, CFG)


def test_saved_transition_loads_into_the_same_form(trained, tmp_path):
    import json

    from safetensors.torch import load_file

    model, _ = trained
    save_transition(model, tmp_path, {"rank_transition": CFG.to_dict()})
    assert json.loads((tmp_path / "transition.json").read_text())["transition"] == TCFG.to_dict()
    fresh = TransH(TCFG)
    fresh.load_state_dict(load_file(str(tmp_path / "transition.safetensors")))
    for k, v in model.state_dict().items():
        assert torch.equal(fresh.state_dict()[k], v), k


def test_cross_fit_rows_come_from_transitions_that_never_saw_the_task(start, tasks):
    import dataclasses

    from cwm.model.rank_transition import fit_with_ranker_rows, task_parts

    parts = task_parts(len(tasks), 3, 0)
    assert sorted(np.concatenate(parts).tolist()) == list(range(len(tasks)))
    cfg = dataclasses.replace(CFG, epochs=3, cross_fit=3)
    model, _, rows = fit_with_ranker_rows(start, tasks, cfg)
    full = rollouts(model, tasks)
    for part in parts:  # each part's rows are the rollouts of a transition trained on the other parts
        inner, _ = train_rank_transition(start, [t for i, t in enumerate(tasks) if i not in set(part.tolist())], cfg)
        for i, z in zip(part, rollouts(inner, [tasks[i] for i in part])):
            np.testing.assert_array_equal(rows[i], z)
            assert not np.array_equal(rows[i], full[i])
    _, _, own = fit_with_ranker_rows(start, tasks, dataclasses.replace(cfg, cross_fit=0))
    for a, b in zip(own, full):
        np.testing.assert_array_equal(a, b)
