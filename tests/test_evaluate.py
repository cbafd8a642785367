"""``cwm eval`` on the tiny dataset: every model is scored, and the encoder-state cache makes a
second run read the final programs' states back instead of encoding them again."""
from __future__ import annotations

import numpy as np
import pytest


def test_eval_scores_every_model_and_resumes_from_the_state_cache(tiny_dataset, tiny_model_dir, tmp_path,
                                                                  monkeypatch):
    from cwm.model import state_cache
    from cwm.model.evaluate import evaluate

    cache = tmp_path / "states"
    first = evaluate(tiny_dataset, tiny_model_dir, state_cache=cache, log=lambda *_: None)
    assert set(first["models"]) == {"cwm", "no_transition", "static_final", "ms_xgb", "sequence_only", "random"}
    assert first["test_tasks"] == 1
    for name, m in first["models"].items():
        assert 0.0 <= m["pairwise_acc"] <= 1.0 and 0.0 < m["top1"] <= 1.0, name
    assert len(list(cache.glob("*-final-*.npy"))) >= 2  # the training tasks' and the test task's states

    def no_encoding(*_args, **_kwargs):
        raise AssertionError("the cache should have answered")

    monkeypatch.setattr(state_cache, "encode_texts", no_encoding)
    from cwm.model import evaluate as evaluate_module

    # A resumed run reads the states back, yet the snapshot's scoring time still counts the
    # encoding a real scoring would do (timed apart, here replaced by a known second).
    monkeypatch.setattr(evaluate_module, "encoding_us_per_program", lambda *_a, **_k: 1e6)
    again = evaluate(tiny_dataset, tiny_model_dir, state_cache=cache, log=lambda *_: None)
    assert again["models"]["static_final"]["score_us_per_candidate"] >= 1e6
    assert again["models"]["no_transition"]["score_us_per_candidate"] < 1e6
    for name in ("cwm", "no_transition", "static_final", "random"):  # deterministic given the same states
        assert {k: v for k, v in again["models"][name].items() if k != "score_us_per_candidate"} == \
            {k: v for k, v in first["models"][name].items() if k != "score_us_per_candidate"}, name


def test_state_cache_key_follows_the_texts(tmp_path):
    """A task whose records changed (other final programs) is encoded again, not read back."""
    from types import SimpleNamespace

    from cwm.model import state_cache

    calls = []

    class Encoder:
        def encode(self, texts):
            import torch

            calls.append(list(texts))
            return torch.tensor([[float(len(t))] for t in texts])

    model = SimpleNamespace(encoder=Encoder())
    trajs = [SimpleNamespace(initial_text="a", final_text=t) for t in ("xx", "yyy")]
    first = state_cache.encoded_states(model, trajs, "final", "k", "fp", tmp_path)
    assert np.array_equal(state_cache.encoded_states(model, trajs, "final", "k", "fp", tmp_path), first)
    assert len(calls) == 1
    trajs.append(SimpleNamespace(initial_text="a", final_text="zzzz"))
    assert state_cache.encoded_states(model, trajs, "final", "k", "fp", tmp_path).shape == (3, 1)
    assert len(calls) == 2
    with pytest.raises(ValueError, match="initial"):
        state_cache.encoded_states(model, trajs, "middle")


def test_states_encoded_elsewhere_fill_the_cache(tiny_dataset, tiny_model_dir, tmp_path, monkeypatch):
    """``tools/encode_states_elsewhere.py``: export -> encode (here on the CPU, as a GPU would) ->
    import gives the cache files ``cwm eval`` reads, so its ``static_final`` row encodes nothing;
    a bundle whose check states disagree with the encoder, or another encoder, writes nothing."""
    import gzip
    import json
    import shutil

    from cwm.model import state_cache
    from cwm.model.evaluate import evaluate

    from tests.tool_modules import tool as tool_module

    tool = tool_module("encode_states_elsewhere")
    cache, bundle, archive = tmp_path / "states", tmp_path / "texts.jsonl.gz", tmp_path / "states.npz"
    tool.main(["export", "--data", str(tiny_dataset), "--model", str(tiny_model_dir), "--out", str(bundle),
               "--state-cache", str(cache), "--check-states", "3"])
    tool.main(["encode", str(bundle), "--model", str(tiny_model_dir), "--out", str(archive), "--device", "cpu",
               "--batch-windows", "7"])
    tool.main(["import", str(archive), "--state-cache", str(cache)])
    assert len(list(cache.glob("*-final-*.npy"))) >= 2

    def no_encoding(*_args, **_kwargs):
        raise AssertionError("the imported states should have answered")

    monkeypatch.setattr(state_cache, "encode_texts", no_encoding)
    result = evaluate(tiny_dataset, tiny_model_dir, state_cache=cache, log=lambda *_: None)
    assert 0.0 <= result["models"]["static_final"]["pairwise_acc"] <= 1.0
    # everything cached: a second export has nothing left to encode
    tool.main(["export", "--data", str(tiny_dataset), "--model", str(tiny_model_dir), "--out", str(bundle),
               "--state-cache", str(cache), "--check-states", "3"])
    with gzip.open(bundle, "rt") as f:
        assert len(f.readlines()) == 1  # the header alone

    # check states from another host that disagree: nothing is written
    shutil.rmtree(cache)
    tool.main(["export", "--data", str(tiny_dataset), "--model", str(tiny_model_dir), "--out", str(bundle),
               "--state-cache", str(cache), "--check-states", "3"])
    with gzip.open(bundle, "rt") as f:
        header, *entries = [json.loads(line) for line in f]
    header["check"]["states"] = [[v + 1.0 for v in row] for row in header["check"]["states"]]
    with gzip.open(bundle, "wt") as f:
        f.write("\n".join(json.dumps(x) for x in (header, *entries)) + "\n")
    archive.unlink()
    with pytest.raises(SystemExit, match="differ"):
        tool.main(["encode", str(bundle), "--model", str(tiny_model_dir), "--out", str(archive), "--device", "cpu"])
    assert not archive.exists()
    header["encoder_fingerprint"] = "0" * 12
    with gzip.open(bundle, "wt") as f:
        f.write("\n".join(json.dumps(x) for x in (header, *entries)) + "\n")
    with pytest.raises(SystemExit, match="not the one"):
        tool.main(["encode", str(bundle), "--model", str(tiny_model_dir), "--out", str(archive), "--device", "cpu"])
