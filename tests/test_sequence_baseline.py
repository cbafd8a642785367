"""Baseline (e), the TLP-style sequence-only model, on the recorded tuning traces."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from cwm.actions import FeatureBatch, featurize_batch  # noqa: E402
from cwm.model.baselines.sequence_model import SequenceBaseline  # noqa: E402
from cwm.model.metrics import pairwise_accuracy  # noqa: E402

EPOCHS = 30  # ~5 s on one thread; the time budget is far away so the epoch limit ends training


@pytest.fixture(scope="module")
def tasks(trace_records):
    recs = [r for r in trace_records if r["source"] == "tuning"]
    out = []
    for w in sorted({r["workload"] for r in recs}):
        rs = [r for r in recs if r["workload"] == w]
        lat = np.array([float(np.median(r["run_secs"])) if r["run_secs"] else np.inf for r in rs])
        out.append({"key": w, "trajs": rs, "lat": lat, "fb": featurize_batch([r["trace"] for r in rs]),
                    "weight": 1.0})
    assert len(out) == 6
    return out


@pytest.fixture(scope="module")
def model(tasks):
    return SequenceBaseline(seed=0, epochs=EPOCHS, time_budget_s=300).fit(tasks)


def _pad(fb: FeatureBatch, t: int) -> FeatureBatch:
    b, t0, _ = fb.ints.shape
    ints = np.zeros((b, t, fb.ints.shape[2]), np.int32)
    nums = np.zeros((b, t, fb.numbers.shape[2]), np.float32)
    ints[:, :t0], nums[:, :t0] = fb.ints, fb.numbers
    return FeatureBatch(ints, nums, fb.lengths.copy(), fb.unknown.copy())


def test_scores_finite_and_ranking_learned(model, tasks):
    accs = []
    for t in tasks:
        s = model.score(t)
        assert s.shape == (len(t["lat"]),)
        assert np.isfinite(s).all()
        accs.append(pairwise_accuracy(t["lat"], s))
    assert model.steps > 0 and model.history[-1] < model.history[0]
    assert np.mean(accs) > 0.65, accs


def test_same_seed_same_scores(model, tasks):
    again = SequenceBaseline(seed=0, epochs=EPOCHS, time_budget_s=300).fit(tasks)
    for t in tasks:
        np.testing.assert_array_equal(model.score(t), again.score(t))


def test_scoring_after_each_epoch_changes_no_training(model, tasks):
    """Scoring between epochs (``bench/sequence_columns.py --checkpoints``) draws no random
    numbers: epoch k of a run is a k-epoch model, and the last epoch is the plain run's bits."""
    seen = {}

    def after_epoch(done, sequence):
        if done in (EPOCHS // 2, EPOCHS):
            seen[done] = [sequence.score(t) for t in tasks]

    watched = SequenceBaseline(seed=0, epochs=EPOCHS, time_budget_s=300).fit(tasks, after_epoch=after_epoch)
    half = SequenceBaseline(seed=0, epochs=EPOCHS // 2, time_budget_s=300).fit(tasks)
    for i, t in enumerate(tasks):
        np.testing.assert_array_equal(watched.score(t), model.score(t))
        np.testing.assert_array_equal(seen[EPOCHS][i], model.score(t))
        np.testing.assert_array_equal(seen[EPOCHS // 2][i], half.score(t))


def test_padding_does_not_matter(model, tasks):
    short = min(tasks, key=lambda t: t["fb"].ints.shape[1])
    long = max(tasks, key=lambda t: t["fb"].ints.shape[1])
    alone = model.score(short)
    # the same rows padded with extra <pad> steps
    padded = model.score({"lat": short["lat"], "fb": _pad(short["fb"], short["fb"].ints.shape[1] + 17)})
    np.testing.assert_allclose(padded, alone, rtol=0, atol=1e-5)
    # the same rows inside a batch with longer traces (padded to the longest)
    t = long["fb"].ints.shape[1]
    a, b = _pad(short["fb"], t), long["fb"]
    mixed = FeatureBatch(np.concatenate([b.ints, a.ints]), np.concatenate([b.numbers, a.numbers]),
                         np.concatenate([b.lengths, a.lengths]), np.concatenate([b.unknown, a.unknown]))
    both = model.score({"lat": np.concatenate([long["lat"], short["lat"]]), "fb": mixed})
    np.testing.assert_allclose(both[len(long["lat"]):], alone, rtol=0, atol=1e-5)
    np.testing.assert_allclose(both[:len(long["lat"])], model.score(long), rtol=0, atol=1e-5)


def test_transformer_encoder_padding(tasks):
    m = SequenceBaseline(seed=1, epochs=1, encoder="transformer", layers=2).fit(tasks[:2])
    t = tasks[0]
    s = m.score(t)
    assert s.shape == (len(t["lat"]),) and np.isfinite(s).all()
    padded = m.score({"lat": t["lat"], "fb": _pad(t["fb"], t["fb"].ints.shape[1] + 9)})
    np.testing.assert_allclose(padded, s, rtol=0, atol=1e-5)


def test_failed_candidates_and_errors(tasks):
    with pytest.raises(RuntimeError):
        SequenceBaseline().score(tasks[0])
    with pytest.raises(ValueError):
        SequenceBaseline().fit([{"lat": np.full(3, np.inf), "fb": tasks[0]["fb"]}])
    lat = tasks[0]["lat"].copy()
    lat[:5] = np.inf  # failed candidates train as slowest; scoring is unaffected by them
    m = SequenceBaseline(seed=0, epochs=2).fit([{"lat": lat, "fb": tasks[0]["fb"]}])
    assert np.isfinite(m.score(tasks[0])).all()
