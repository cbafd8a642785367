"""``cwm dataset tasks --from-corpus``: generated workloads registered as measured tasks (issue #12)."""
from __future__ import annotations

import json

import pytest

PARAMS = [("dense", {"m": 16, "n": 32, "k": 64}), ("dense", {"m": 32, "n": 32, "k": 64}),
          ("softmax", {"rows": 8, "cols": 64}), ("layer_norm", {"rows": 8, "cols": 64})]


def _corpus(tmp_path, entries=None):
    from cwm.corpus.generator import build
    from cwm.workload_key import task_key

    listing = []
    for i, (family, params) in enumerate(entries or PARAMS):
        listing.append({"index": i, "key": task_key(build(family, params)), "name": f"{family}_{i}",
                        "family": family, "params": params})
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "manifest.json").write_text(json.dumps({"listing": listing}))
    return root, listing


def test_sample_is_seeded_and_stratified():
    from cwm.corpus.tasks import corpus_sample

    listing = [{"family": f, "name": f"{f}{i}"} for f in ("a", "b", "c") for i in range(5)]
    one, again, other = corpus_sample(listing, 6, 0), corpus_sample(listing, 6, 0), corpus_sample(listing, 6, 1)
    assert one == again and one != other
    assert sorted(e["family"] for e in one) == ["a", "a", "b", "b", "c", "c"]
    assert len(corpus_sample(listing, 100, 0)) == 15  # no more than the listing has


def test_register_puts_every_task_in_training_and_is_idempotent(tmp_path):
    from cwm.corpus.tasks import register_corpus_tasks
    from cwm.dataset.store import DatasetStore

    corpus, listing = _corpus(tmp_path)
    root = tmp_path / "breadth"
    table = register_corpus_tasks(root, corpus, count=10, seed=0)
    assert "| dense | 2 |" in table and "| softmax | 1 |" in table
    split = json.loads((root / "split.json").read_text())
    assert sorted(split["train_tasks"]) == sorted(e["key"] for e in listing) and split["test_tasks"] == []
    task = DatasetStore(root).get_task(listing[0]["key"])
    assert task["networks"] == {"corpus/dense": 1} and task["family"] == "dense"
    register_corpus_tasks(root, corpus, count=10, seed=0)
    assert len(DatasetStore(root).task_keys()) == len(listing)


def test_heldout_keys_are_skipped(tmp_path):
    from cwm.corpus.generator import build
    from cwm.corpus.tasks import register_corpus_tasks
    from cwm.dataset.store import DatasetStore, register_task

    corpus, listing = _corpus(tmp_path)
    heldout = tmp_path / "zoo"
    heldout.mkdir()
    (heldout / "split.json").write_text(json.dumps({"test_tasks": [listing[2]["key"]], "train_tasks": []}))
    register_task(DatasetStore(heldout), "held", build(*PARAMS[2]), {"mobilenet_v2": 1})
    table = register_corpus_tasks(tmp_path / "breadth", corpus, count=10, seed=0, heldout_dataset=heldout)
    assert "skipped as held-out: 1" in table
    assert listing[2]["key"] not in DatasetStore(tmp_path / "breadth").task_keys()


def test_a_listing_from_other_generator_code_is_an_error(tmp_path):
    from cwm.corpus.tasks import register_corpus_tasks
    from cwm.dataset.store import DatasetError

    corpus, listing = _corpus(tmp_path)
    listing[0]["key"] = "0" * 16
    (corpus / "manifest.json").write_text(json.dumps({"listing": listing}))
    with pytest.raises(DatasetError, match="other generator code"):
        register_corpus_tasks(tmp_path / "breadth", corpus, count=10, seed=0)
