"""The workload generator and the unmeasured-trajectory corpus (issue #12): seeded, resumable,
and never a held-out task."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

DATASET = Path(__file__).resolve().parents[1] / "data" / "dataset"


def test_generator_is_seeded_distinct_and_excludes():
    from cwm.corpus.generator import FAMILIES, generate
    from cwm.workload_key import task_key

    first = [(w.name, task_key(w.mod)) for w in generate(22, seed=3)]
    assert first == [(w.name, task_key(w.mod)) for w in generate(22, seed=3)]
    assert len({k for _, k in first}) == 22
    assert {w.family for w in generate(22, seed=3)} == set(FAMILIES)
    banned = {first[0][1], first[5][1]}
    again = [task_key(w.mod) for w in generate(22, seed=3, exclude=banned)]
    assert not banned & set(again) and len(set(again)) == 22


def test_no_generated_workload_is_a_heldout_task():
    """The check the corpus build makes, here on the committed dataset's held-out split."""
    from cwm.corpus.generator import generate, heldout_keys
    from cwm.workload_key import task_key

    held = heldout_keys(DATASET)
    assert len(held) > 30
    assert not held & {task_key(w.mod) for w in generate(110, seed=0)}


def test_build_is_resumable_and_reproducible(tmp_path, tiny_dataset):
    from cwm.corpus.build import build_corpus, corpus_stats

    a, b = tmp_path / "a", tmp_path / "b"
    build_corpus(a, 3, 8, seed=1, dataset=tiny_dataset, log=lambda *_: None)
    shards = sorted((a / "shards").glob("*.npz"))
    assert len(shards) == 3
    shards[1].unlink()  # an interrupted run: one shard missing, and a torn temporary left behind
    (a / "shards" / (shards[2].name + ".tmp.npz")).write_bytes(b"torn")
    again = build_corpus(a, 3, 8, seed=1, dataset=tiny_dataset, log=lambda *_: None)
    assert again["shards_written"] == 1
    build_corpus(b, 3, 8, seed=1, dataset=tiny_dataset, part=(0, 2), log=lambda *_: None)
    build_corpus(b, 3, 8, seed=1, dataset=tiny_dataset, part=(1, 2), log=lambda *_: None)
    for pa in sorted((a / "shards").glob("*-*.npz")):
        if pa.name.endswith(".tmp.npz"):
            continue
        with np.load(pa) as x, np.load(b / "shards" / pa.name) as y:
            assert list(x["traces"]) == list(y["traces"])  # two workers = one run, same seed
            np.testing.assert_array_equal(x["store"], y["store"])  # float16 of the same extraction
            assert x["prefix"].shape[1] == 3 and (x["prefix"][:, -1] >= x["prefix"][:, 0]).all()
            assert np.isfinite(x["store"][:, -1]).all()  # the final state always has features
    stats = corpus_stats(a)
    assert stats["shards"] == 3 and stats["trajectories"] == sum(stats["by_family"].values()) > 0


def test_blocks_give_fused_network_tasks(tmp_path, tiny_dataset):
    """Network blocks go through torch.export -> Relax -> FuseOps, so their tasks are fused like
    the zoo's; a corpus with blocks stores each workload, and rebuilds the same keys."""
    import tvm

    from cwm.corpus.blocks import generate_blocks
    from cwm.corpus.build import build_corpus
    from cwm.workload_key import task_key

    made = list(generate_blocks(6, seed=0))
    assert len({task_key(w.mod) for w in made}) == 6
    assert any(w.params["task"].startswith("fused_") for w in made)
    assert [task_key(w.mod) for w in generate_blocks(6, seed=0)] == [task_key(w.mod) for w in made]
    build_corpus(tmp_path, 1, 4, seed=0, dataset=tiny_dataset, blocks=2, log=lambda *_: None)
    shards = sorted((tmp_path / "shards").glob("*.npz"))
    assert len(shards) == 3
    with np.load(shards[-1], allow_pickle=False) as f:
        assert task_key(tvm.ir.load_json(str(f["workload"]))) == shards[-1].stem.split("-", 1)[1]


def test_a_second_part_excludes_the_first_corpus(tmp_path, tiny_dataset):
    from cwm.corpus.build import build_corpus, corpus_keys

    first, second = tmp_path / "first", tmp_path / "second"
    build_corpus(first, 4, 4, seed=0, dataset=tiny_dataset, log=lambda *_: None)
    # the same seed would draw the same workloads: excluding the first corpus forces new ones
    build_corpus(second, 4, 4, seed=0, dataset=tiny_dataset, exclude_corpora=[first], log=lambda *_: None)
    a, b = corpus_keys(first), corpus_keys(second)
    assert len(a) == len(b) == 4 and not a & b
    manifest = json.loads((second / "manifest.json").read_text())
    assert manifest["excluded_corpora"] == [str(first)]
