"""Fit the sequence head of a trained model directory (model v6; docs/decisions.md §71), in place.

The encoder, transition and ranker are kept bit for bit. The head
(:mod:`cwm.model.sequence_head`) is trained on the training tasks the ranker was fitted on (the
model's training data plus the ``--extra-data`` roots its ranker refit recorded, unless given),
by its epochs alone; its blend's spreads come from the ranker's and the head's in-sample scores
of those tasks. ``--weight 0`` removes the head (back to v4).

    PYTHONPATH=python .venv/bin/python tools/fit_sequence_head.py python/cwm/default_model --weight 0.25
        [--data data/dataset] [--extra-data data/dataset_breadth_zen4 --extra-data data/dataset_breadth]
        [--seed 0] [--epochs 40]
"""
from __future__ import annotations

import argparse
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir")
    ap.add_argument("--data", default="data/dataset")
    ap.add_argument("--extra-data", action="append", default=None,
                    help="another training root (repeatable); default: the roots of the model's ranker refit")
    ap.add_argument("--weight", type=float, required=True, help="the head's share of the margin, in [0, 1)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=40)
    args = ap.parse_args(argv)
    if not 0.0 <= args.weight < 1.0:
        raise SystemExit(f"--weight {args.weight}: must be in [0, 1)")
    import numpy as np
    import torch

    from cwm.dataset.loader import DatasetLoader
    from cwm.dataset.union import open_datasets
    from cwm.model.sequence_head import fit_head
    from cwm.model.train import _data_hash, _training_trajectories, ranker_rows
    from cwm.model.world_model import WorldModel

    torch.set_num_threads(2)
    start = time.time()
    model = WorldModel.load(args.model_dir)
    if model.meta.get("training_data") != _data_hash(DatasetLoader(args.data)):
        raise SystemExit(f"{args.data} is not the training data of {args.model_dir} (training-data hash differs)")
    if args.weight == 0.0:
        model.sequence_head = None
        model.meta.pop("sequence_head_fit", None)
        model.save(args.model_dir)
        print(f"removed the sequence head of {args.model_dir}")
        return 0
    extra = args.extra_data if args.extra_data is not None else model.meta.get("ranker_refit", {}).get("extra_data", [])
    loader = open_datasets([args.data, *extra])
    tasks, margins = [], []
    for key, trajs, fb, rows in ranker_rows(model, loader, _training_trajectories(loader, args.seed)):
        tasks.append({"key": key, "fb": fb, "lat": np.array([t.latency for t in trajs], np.float64)})
        margins.append(np.asarray(model.ranker.predict(rows), np.float64))
    print(f"{len(tasks)} training tasks, {sum(len(t['lat']) for t in tasks)} candidates "
          f"({time.time() - start:.0f} s); training the head", flush=True)
    model.sequence_head = fit_head(tasks, margins, args.weight, args.seed, args.epochs,
                                   log=lambda m: print(m, flush=True))
    model.meta["sequence_head_fit"] = {"extra_data": list(extra), "training_data": _data_hash(loader),
                                       "tasks": len(tasks), "wall_s": round(time.time() - start, 1)}
    model.save(args.model_dir)
    print(f"fitted the sequence head of {args.model_dir} in {time.time() - start:.1f} s: "
          f"{model.sequence_head.meta()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
