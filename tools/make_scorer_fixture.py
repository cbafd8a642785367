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

Usage: ``python tools/make_scorer_fixture.py`` (about a minute on a busy 2-core CPU).
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
    from cwm import native
    from cwm.model.ranker import Ranker, RankerConfig

    feats, lat, groups = [], [], []
    for g, name in enumerate(sorted(mods)):
        rows = [r for r in recs if r["workload"] == name and r["source"] == "tuning"]
        fb = native.featurize_batch([r["trace"] for r in rows])
        z0 = model.z0(mods[name])
        feats.append(model.features(model.rollout(z0, fb), fb, json.loads(rows[0]["target"]), z0))
        lat += [float(np.median(r["run_secs"])) if r["run_secs"] and not (r["build_error"] or r["run_error"])
                else float("nan") for r in rows]
        groups += [g] * len(rows)
    return Ranker(RankerConfig(n_estimators=20, max_depth=4, n_jobs=1)).fit(
        np.concatenate(feats), np.array(lat), np.array(groups))


def main() -> None:
    from cwm import workloads
    from cwm.model.scorer_input import write_scorer_input
    from cwm.model.world_model import WorldModel

    recs = records()
    mods = {name: workloads.get(name) for name in sorted({r["workload"] for r in recs})}
    for out in (OUT, OUT_V3):
        if out.exists():
            shutil.rmtree(out)
    build_model(recs, mods).save(OUT / "model")
    build_model(recs, mods, structure=False).save(OUT_V3 / "model")
    model = WorldModel.load(OUT / "model")  # expected scores come from the saved files
    tasks = []
    for name, source, n in TASKS:
        rows = [r for r in recs if r["workload"] == name and r["source"] == source][:n]
        traces = [json.loads(r["trace"]) if name in AS_LISTS else r["trace"] for r in rows]
        tasks.append((name, mods[name], traces, json.loads(rows[0]["target"])))
    write_scorer_input(model, tasks, OUT / "input.jsonl")
    for out, m in ((OUT, model), (OUT_V3, WorldModel.load(OUT_V3 / "model"))):
        with open(out / "expected.jsonl", "w") as f:
            for name, mod, traces, target in tasks:
                scores = m.score(mod, traces, target)  # lists: json.dumps'ed by cwm.native
                f.write(json.dumps({"task": name, "scores": [float(s) for s in scores]}) + "\n")
        size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
        print(f"wrote {out} ({size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
