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


def _displacements(tasks, scale: float):
    """Each task with ``steps`` = ``scale`` × its rolled-out ``ẑ_t - z_0`` under a random TransH."""
    from cwm.model.baselines.sequence_model import step_states
    from cwm.model.transition import TransH, TransitionConfig, numpy_weights

    torch.manual_seed(3)
    transh = TransH(TransitionConfig())
    with torch.no_grad():
        transh.out.weight.normal_(0, 0.1)  # a non-zero translation, as after training
    weights, z0 = numpy_weights(transh), np.random.default_rng(3).standard_normal(128).astype(np.float32)
    z0 /= np.linalg.norm(z0)
    return [dict(t, steps=scale * step_states(z0, t["fb"], weights, TransitionConfig())) for t in tasks], \
        (weights, z0)


def test_step_states_end_at_the_native_rollout(tasks):
    """The last step's displacement is the native core's ``ẑ_T - z_0`` (float32 states: 1e-5);
    the absolute states are the displacements plus ``z_0``, the start states ``z_0`` itself."""
    from cwm import native
    from cwm.model.baselines.sequence_model import step_states
    from cwm.model.transition import TransitionConfig

    with_steps, (weights, z0) = _displacements(tasks[:2], 1.0)
    for t in with_steps:
        fb = t["fb"]
        core = native.transition_core(weights, TransitionConfig())
        zt = core.rollout(np.ascontiguousarray(np.repeat(z0[None], len(fb.lengths), 0)), fb.ints, fb.numbers)
        np.testing.assert_allclose(t["steps"][:, -1] + z0, zt, rtol=0, atol=1e-5)
        assert t["steps"].shape == (*fb.ints.shape[:2], 128)
        absolute = step_states(z0, fb, weights, TransitionConfig(), "absolute")
        np.testing.assert_allclose(absolute, t["steps"] + z0, rtol=0, atol=1e-6)
        np.testing.assert_array_equal(step_states(z0, fb, weights, TransitionConfig(), "start"),
                                      np.broadcast_to(z0, absolute.shape))
    with pytest.raises(ValueError, match="unknown state input"):
        step_states(z0, fb, weights, TransitionConfig(), "final")


def test_state_reading_head_without_a_transition_is_the_plain_head(model, tasks):
    """With ``ẑ_t = z_0`` (no transition) the state read adds zero: the same bits as the plain
    head (its weights are drawn aside and get no gradient); with the rollout it scores otherwise."""
    still, _ = _displacements(tasks, 0.0)
    ablated = SequenceBaseline(seed=0, epochs=EPOCHS, time_budget_s=300, state_input="displacement").fit(still)
    for t, s in zip(tasks, still):
        np.testing.assert_array_equal(ablated.score(s), model.score(t))
    rolled, _ = _displacements(tasks, 1.0)
    reading = SequenceBaseline(seed=0, epochs=EPOCHS, time_budget_s=300, state_input="displacement").fit(rolled)
    assert any(not np.array_equal(reading.score(r), model.score(t)) for r, t in zip(rolled, tasks))
    with pytest.raises(ValueError, match="steps"):
        reading.score(tasks[0])  # no rolled-out states given
    from cwm.model.sequence_head import numpy_weights

    with pytest.raises(ValueError, match="reads the state"):
        numpy_weights(reading)  # the native core scores the action-only head alone
