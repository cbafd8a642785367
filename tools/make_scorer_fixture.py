"""Regenerate tests/data/scorer_fixture/: the C++ scorer's parity fixture (ctest test_scorer).

* ``model/``: a TINY world model in the real ``WorldModel.save`` layout (encoder, TransH
  transition, XGBoost ranker), built directly rather than trained: a BPE tokenizer and a
  1-layer encoder at random init, TransH at random init with non-zero translations, and a
  20-tree LambdaRank ranker fitted on the recorded llvm tuning runs of
  tests/data/traces.jsonl.gz. Its scores mean nothing; it exists to pin the C++ scorer to
  the Python one.
* ``input.jsonl``: 3 tasks written by :func:`cwm.model.scorer_input.write_scorer_input`:
  20 llvm candidates of matmul_256 and of conv2d_64x56x56_3x3, and 16 sampled CUDA
  candidates of batch_matmul (a GPU target; 16 rows take the ranker's in-place path in
  Python). The CUDA task's traces are stored as JSON lists rather than JSON text, the other
  accepted form.
* ``expected.jsonl``: ``WorldModel.load(model).score(workload, traces, target)`` per task.
* ``../scorer_fixture_v3/``: the same encoder and transition with a ranker on model v3's
  features (no trace structure) saved as v3, and its ``expected.jsonl`` on the same
  ``input.jsonl``: older model directories keep scoring.
* ``../scorer_fixture_v6/``: ``model/`` plus a small sequence head (model v6,
  :mod:`cwm.model.sequence_head`: a 16-wide GRU trained 2 epochs on the recorded tuning runs),
  and its ``expected.jsonl`` on the same ``input.jsonl``.

Usage: ``python tools/make_scorer_fixture.py [--only-v6]`` (about a minute on a busy 2-core CPU;
``--only-v6`` rebuilds the v6 fixture from the existing ``model/`` and leaves the rest alone).
"""
from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import numpy as np

import cwm  # noqa: F401  (installs the TVMScript speed fix)

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "scorer_fixture"
OUT_V3 = ROOT / "tests" / "data" / "scorer_fixture_v3"
OUT_V6 = ROOT / "tests" / "data" / "scorer_fixture_v6"
TASKS = [("matmul_256", "tuning", 20), ("conv2d_64x56x56_3x3", "tuning", 20),
         ("batch_matmul_12x128x128x64", "sampled", 16)]
AS_LISTS = {"batch_matmul_12x128x128x64"}  # traces written as JSON lists, not text


def records() -> list[dict]:
    with gzip.open(ROOT / "tests" / "data" / "traces.jsonl.gz", "rt") as f:
        return [json.loads(line) for line in f]


def build_model(recs, mods, structure: bool = True):
    import torch

    from cwm.model.encoder import EncoderConfig, StateEncoder
    from cwm.model.tokenizer import TirTokenizer
    from cwm.model.transition import TransH, TransitionConfig
    from cwm.model.world_model import WorldModel

    torch.manual_seed(0)
    tok = TirTokenizer.train([m.script() for m in mods.values()], vocab_size=320)
    enc = StateEncoder(tok, EncoderConfig(hidden=32, layers=1, heads=2, intermediate=64, window=64, stride=48,
                                          out_dim=16, dropout=0.0)).eval()
    tcfg = TransitionConfig(dim=16, hidden=16, hash_buckets=64, small_vocab=16)
    transition = TransH(tcfg).eval()
    with torch.no_grad():  # init has d = 0; give the translations weight so the test sees them
        transition.out.weight[tcfg.dim:].normal_(0.0, 0.3)
        transition.out.bias[tcfg.dim:].normal_(0.0, 0.1)
    model = WorldModel(enc, transition, tcfg, None, {"note": "scorer test fixture (tools/make_scorer_fixture.py)"},
                       structure=structure)
    model.ranker = fit_tiny_ranker(model, recs, mods)
    return model


def fit_tiny_ranker(model, recs, mods):
    """A 20-tree ranker on ``model``'s rows of the recorded llvm tuning runs of ``mods``' workloads
    (the fixture's; tests/test_vector_alignment.py refits one on rows that hold the vector fill)."""
    from cwm.model.ranker import Ranker, RankerConfig

    feats, lat, groups = [], [], []
    for g, name in enumerate(sorted(mods)):
        rows = [r for r in recs if r["workload"] == name and r["source"] == "tuning"]
        fb = model.featurize(mods[name], [r["trace"] for r in rows])
        z0 = model.z0(mods[name])
        feats.append(model.features(model.rollout(z0, fb), fb, json.loads(rows[0]["target"]), z0))
        lat += [float(np.median(r["run_secs"])) if r["run_secs"] and not (r["build_error"] or r["run_error"])
                else float("nan") for r in rows]
        groups += [g] * len(rows)
    return Ranker(RankerConfig(n_estimators=20, max_depth=4, n_jobs=1)).fit(
        np.concatenate(feats), np.array(lat), np.array(groups))


def add_sequence_head(model, recs, mods) -> None:
    """A small v6 head on ``model``: a 16-wide GRU (64 hash buckets) trained 2 epochs on the
    recorded tuning runs of ``mods``' workloads, blended at weight 0.25 by the ranker's in-sample
    spread there."""
    from cwm import native
    from cwm.model.sequence_head import fit_head

    tasks, margins = [], []
    for name in sorted(mods):
        rows = [r for r in recs if r["workload"] == name and r["source"] == "tuning"]
        lat = np.array([float(np.median(r["run_secs"])) if r["run_secs"] and not (r["build_error"] or r["run_error"])
                        else np.inf for r in rows])
        tasks.append({"fb": native.featurize_batch([r["trace"] for r in rows]), "lat": lat})
        margins.append(model.score(mods[name], [r["trace"] for r in rows], json.loads(rows[0]["target"])))
    model.sequence_head = fit_head(tasks, margins, 0.25, seed=0, epochs=2, dim=16, hash_buckets=64, small_vocab=16)


def fixture_tasks(recs, mods) -> list[tuple]:
    """``(name, workload, traces, target)`` of the fixture's input.jsonl."""
    tasks = []
    for name, source, n in TASKS:
        rows = [r for r in recs if r["workload"] == name and r["source"] == source][:n]
        traces = [json.loads(r["trace"]) if name in AS_LISTS else r["trace"] for r in rows]
        tasks.append((name, mods[name], traces, json.loads(rows[0]["target"])))
    return tasks


def main(argv=None) -> None:
    import argparse

    from cwm import workloads
    from cwm.model.scorer_input import write_scorer_input
    from cwm.model.world_model import WorldModel

    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--only-v6", action="store_true", help="rebuild scorer_fixture_v6 from the existing model/")
    only_v6 = args.parse_args(argv).only_v6
    recs = records()
    mods = {name: workloads.get(name) for name in sorted({r["workload"] for r in recs})}
    for out in (OUT_V6,) if only_v6 else (OUT, OUT_V3, OUT_V6):
        if out.exists():
            shutil.rmtree(out)
    if not only_v6:
        build_model(recs, mods).save(OUT / "model")
        build_model(recs, mods, structure=False).save(OUT_V3 / "model")
    with_head = WorldModel.load(OUT / "model")
    add_sequence_head(with_head, recs, mods)
    with_head.save(OUT_V6 / "model")
    model = WorldModel.load(OUT / "model")  # expected scores come from the saved files
    tasks = fixture_tasks(recs, mods)
    if not only_v6:
        write_scorer_input(model, tasks, OUT / "input.jsonl")
    fixtures = [(OUT_V6, WorldModel.load(OUT_V6 / "model"))]
    if not only_v6:
        fixtures = [(OUT, model), (OUT_V3, WorldModel.load(OUT_V3 / "model"))] + fixtures
    for out, m in fixtures:
        with open(out / "expected.jsonl", "w") as f:
            for name, mod, traces, target in tasks:
                scores = m.score(mod, traces, target)  # lists: json.dumps'ed by cwm.native
                f.write(json.dumps({"task": name, "scores": [float(s) for s in scores]}) + "\n")
        size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
        print(f"wrote {out} ({size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
