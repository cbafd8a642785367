"""Does the ranker gain from what a rollout that remembers says of the final program? The shipped
rows with the per-store features that a corpus-trained TransH and its decoder predict for each
candidate's final state beside them, against the shipped rows; leave one network out on the
training tasks (issue #12, deliverable 5: a ranker on "the rolled-out state and its decoded
features"; docs/decisions.md §102).

The decoded columns come from the rollout alone (``z_0`` and the trace's actions, through the
trained TransH of ``--transition``, ``bench/transition_corpus.py --save``, and its decoder), never
from the candidate's program: no replay, so not a snapshot model. They are in the decoder's
standard units (a tree does not care) and not centred on the task's design-space reference.
Fold rankers, metrics and intervals as ``bench/capped_rollout.py`` (:func:`top_rerank.compare_fold_rankers`).

    PYTHONPATH=python .venv/bin/python bench/decoded_columns.py --transition DIR [--out NAME]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from common import log, machine, today, write_result  # noqa: E402

BASELINE = "fold ranker (shipped rows)"


def load_decoder(source: Path):
    """``decode(z [N, D]) -> [N, F]``: the decoder that ``bench/transition_corpus.py --save`` wrote
    beside its transition, in the standard units it was trained in."""
    import numpy as np
    import torch
    from safetensors.numpy import load_file
    from transition_corpus import Decoder

    weights = load_file(str(Path(source) / "decoder.safetensors"))
    net = Decoder(weights["net.0.weight"].shape[1], weights["net.2.weight"].shape[0], weights["ym"], weights["ys"]).net
    net.load_state_dict({k[len("net."):]: torch.from_numpy(v) for k, v in weights.items() if k.startswith("net.")})
    net.eval()

    def decode(z):
        with torch.no_grad():
            return net(torch.as_tensor(np.asarray(z, np.float32))).numpy().astype(np.float64)
    return decode


def decoded_rows(model, union, rows: dict, decode) -> dict:
    """``rows`` (:func:`fold_rankers.training_rows` of the shipped model: the same tasks and
    candidates, in order) with ``decode(ẑ_T)`` of ``model``'s rollout appended to each row."""
    import numpy as np

    from cwm import native
    from cwm.model.train import _training_trajectories

    out = {}
    for key, trajs in sorted(_training_trajectories(union, model.meta.get("config", {}).get("seed", 0)).items()):
        x, lat = rows[key]
        fb = native.featurize_batch([t.trace for t in trajs])
        decoded = decode(model.rollout(model.z0(union.workload(key)), fb))
        if len(decoded) != len(x):
            raise RuntimeError(f"{key}: {len(decoded)} rollouts for {len(x)} rows")
        out[key] = (np.concatenate([x, decoded], 1), lat)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--transition", required=True, metavar="DIR",
                   help="a directory of bench/transition_corpus.py --save (transition and decoder)")
    p.add_argument("--out", default="decoded_columns.json")
    a = p.parse_args(argv)
    source = Path(a.transition)
    if not (source / "decoder.safetensors").exists():
        raise SystemExit(f"{source}: no decoder.safetensors (bench/transition_corpus.py --save writes one)")

    from cwm.model import default_model_dir
    from cwm.model.world_model import WorldModel
    from top_rerank import FOUND_AFTER, compare_fold_rankers
    from within_task import zoo_tasks

    start = time.perf_counter()
    model = WorldModel.load(default_model_dir())
    other = WorldModel.load(default_model_dir())
    other.use_transition(source)
    roots, union, rows, _, folds, zoo = zoo_tasks(model)
    variant_rows = decoded_rows(other, union, rows, load_decoder(source))
    width = next(iter(variant_rows.values()))[0].shape[1] - next(iter(rows.values()))[0].shape[1]
    variant = f"fold ranker, shipped rows + {width} decoded columns ({source.name})"
    log(f"decoded columns of {len(variant_rows)} training tasks ({time.perf_counter() - start:.0f} s)")
    out, tasks = compare_fold_rankers(model.ranker.cfg, rows, variant_rows, folds, zoo, BASELINE, variant, start)
    write_result(a.out, {
        "benchmark": "decoded_columns", "date": today(), "machine": machine(), "roots": roots,
        "transition": {**other.meta.get("transition_source", {}), "config": other.tcfg.to_dict()},
        "decoded_columns": width, "tasks": tasks, "found_after": list(FOUND_AFTER), "by_ranker": out,
        "note": "fold rankers: the shipped ranker config and seed fitted on every training task of the shipped roots "
                "but the network's, on the shipped model's rows and on the same rows with the decoded per-store "
                "features of the trained transition's rollout beside them, both fitted in the run",
        "seconds": round(time.perf_counter() - start, 1)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
