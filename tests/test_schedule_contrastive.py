"""The schedule-discriminating encoder recipe (cwm.model.schedule_contrastive), on a tiny encoder."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

TINY = dict(hidden=32, layers=1, heads=2, intermediate=64, window=34, stride=24, out_dim=16, batch_windows=64)


@pytest.fixture(scope="module")
def items():
    """Three workloads, three schedules each (untiled and two tilings), with made-up features."""
    from cwm import workloads
    from cwm.model.augment import tile_outer

    out = []
    for gi, name in enumerate(sorted(workloads.WORKLOADS)[:3]):
        mod = workloads.get(name)
        for si, text in enumerate([mod.script(), tile_outer(mod, 16).script(), tile_outer(mod, 4).script()]):
            out.append({"group": name, "text": text, "features": [gi, si * 10.0, -si, 0.0]})
    return out


def _encoder(items):
    from cwm.model.encoder import EncoderConfig, StateEncoder
    from cwm.model.tokenizer import TirTokenizer

    torch.manual_seed(0)
    return StateEncoder(TirTokenizer.train([it["text"] for it in items], vocab_size=300), EncoderConfig(**TINY))


def _config(**kw):
    from cwm.model.schedule_contrastive import ScheduleContrastiveConfig

    return ScheduleContrastiveConfig(**{"groups_per_batch": 2, "schedules_per_group": 2, "max_steps": 4,
                                        "holdout_groups": 0.0, "checkpoint_every": 2, "log_every": 0, **kw})


def test_aux_loss_matches_numpy():
    from cwm.model.schedule_contrastive import aux_loss

    rng = np.random.default_rng(0)
    pred, target = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    groups = [0, 0, 1, 1, 1]
    dp, dt = pred.copy(), target.copy()
    for g in (0, 1):
        m = np.array(groups) == g
        dp[m] -= pred[m].mean(0)
        dt[m] -= target[m].mean(0)
    expected = np.mean((pred - target) ** 2) + np.mean((dp - dt) ** 2)
    got = aux_loss(torch.from_numpy(pred), torch.from_numpy(target), groups).item()
    assert got == pytest.approx(expected, rel=1e-12)  # float64 both ways: only summation order differs


def test_scaler_and_split():
    from cwm.model.schedule_contrastive import FeatureScaler, split_items

    rows = np.array([[1.0, 5.0, 0.0], [3.0, 5.0, -2.0], [7.0, 5.0, np.nan]])
    y = FeatureScaler(rows)(rows)
    assert np.all(y[:, 1] == 0)  # a constant column carries nothing
    assert np.isfinite(y).all() and y[2, 2] == 0  # a missing value is the mean
    assert abs(y[:2, 0].mean() + y[2, 0] / 2) < 1  # standardized
    items = [{"group": f"g{i % 10}", "text": "", "features": []} for i in range(40)]
    fit, held = split_items(items, 0.2, 0)
    assert len(held) == 2 and not set(fit) & set(held)  # whole groups are held out
    assert sum(map(len, fit.values())) + sum(map(len, held.values())) == 40


def test_training_moves_the_head_and_resumes_to_the_same_bits(items, tmp_path):
    from cwm.model.schedule_contrastive import train_schedule_encoder

    enc, head, metrics = train_schedule_encoder(_encoder(items), items, _config(), log=lambda *_: None)
    assert metrics["steps"] == 4 and metrics["stopped_by"] == "steps"
    assert all(np.isfinite(metrics["loss"]))
    assert metrics["after"]["fit"]["mse"] != metrics["before"]["fit"]["mse"]

    ckpt = tmp_path / "ckpt.pt"
    train_schedule_encoder(_encoder(items), items, _config(max_steps=2), checkpoint=ckpt, log=lambda *_: None)
    assert ckpt.is_file()
    resumed, head2, m2 = train_schedule_encoder(_encoder(items), items, _config(), checkpoint=ckpt,
                                                log=lambda *_: None)
    assert m2["steps"] == 4
    for (name, a), (_, b) in zip(enc.state_dict().items(), resumed.state_dict().items()):
        assert torch.equal(a, b), name  # same seed, same data, same machine: identical weights
    assert torch.equal(head[1].weight, head2[1].weight)


def test_too_few_groups_is_an_error(items):
    from cwm.model.schedule_contrastive import train_schedule_encoder

    with pytest.raises(ValueError, match="2 groups"):
        train_schedule_encoder(_encoder(items), items[:3], _config(), log=lambda *_: None)


def test_training_names_its_device_and_hands_back_cpu_modules(items):
    from cwm.model.schedule_contrastive import train_schedule_encoder

    enc, head, metrics = train_schedule_encoder(_encoder(items), items, _config(max_steps=1, device="cpu"),
                                                log=lambda *_: None)
    assert metrics["device"] == "cpu"
    assert {p.device.type for p in [*enc.parameters(), *head.parameters()]} == {"cpu"}  # ready to save
    with pytest.raises(RuntimeError):  # a device torch does not know fails before any step
        train_schedule_encoder(_encoder(items), items, _config(device="no-such-device"), log=lambda *_: None)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU: run it on a lent device machine")
def test_training_on_a_gpu_resumes_from_its_checkpoint_and_hands_back_cpu_modules(items, tmp_path):
    from cwm.model.schedule_contrastive import train_schedule_encoder

    ckpt = tmp_path / "ckpt.pt"
    train_schedule_encoder(_encoder(items), items, _config(max_steps=2, device="cuda"), checkpoint=ckpt,
                           log=lambda *_: None)
    enc, head, metrics = train_schedule_encoder(_encoder(items), items, _config(device="cuda"), checkpoint=ckpt,
                                                log=lambda *_: None)
    assert metrics["steps"] == 4 and all(np.isfinite(metrics["loss"])) and metrics["device"].startswith("cuda")
    assert {p.device.type for p in [*enc.parameters(), *head.parameters()]} == {"cpu"}
    # the GPU's checkpoint is read back on a CPU (map_location): a run may move between machines
    _, _, m_cpu = train_schedule_encoder(_encoder(items), items, _config(max_steps=4), checkpoint=ckpt,
                                         log=lambda *_: None)
    assert m_cpu["steps"] == 4 and m_cpu["device"] == "cpu"
