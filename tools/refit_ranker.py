"""Refit only the ranker of a trained model directory (phase 3 of ``cwm train``), in place.

Used when the ranker's features changed from ``ẑ_T`` (model v2) to ``ẑ_T - z_0`` (v3,
docs/decisions.md §15), and when its labels changed to 16 grades with linear NDCG gains
(§37): the encoder and transition of the directory are kept bit for bit, the ranker is refit on
the training split with the config stored next to it (``--grades`` / ``--exp-gain`` override
those two fields), exactly as ``train_world_model`` fits it, and the manifest is rewritten as v3
(metrics and training-data hash kept, ``ranker_refit`` added).

    python tools/refit_ranker.py python/cwm/default_model [--data data/dataset] [--grades 16 --exp-gain false]
"""
from __future__ import annotations

import argparse
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir")
    ap.add_argument("--data", default="data/dataset")
    ap.add_argument("--grades", type=int, default=None, help="relevance grades of the labels (default: as saved)")
    ap.add_argument("--exp-gain", choices=("true", "false"), default=None,
                    help="NDCG gains 2^grade - 1 (true) or grade (false); default: as saved")
    args = ap.parse_args(argv)
    import dataclasses

    import torch

    from cwm.dataset.loader import DatasetLoader
    from cwm.model.train import _data_hash, _training_trajectories, fit_ranker
    from cwm.model.world_model import WorldModel

    torch.set_num_threads(2)
    start = time.time()
    model = WorldModel.load(args.model_dir, refit_ranker=True)
    loader = DatasetLoader(args.data)
    if model.meta.get("training_data") != _data_hash(loader):
        raise SystemExit(f"{args.data} is not the training data of {args.model_dir} (training-data hash differs)")
    seed = model.meta.get("config", {}).get("seed", 0)
    cfg = model.ranker.cfg
    if args.grades is not None:
        cfg = dataclasses.replace(cfg, grades=args.grades)
    if args.exp_gain is not None:
        cfg = dataclasses.replace(cfg, ndcg_exp_gain=args.exp_gain == "true")
    model.ranker = fit_ranker(model, loader, _training_trajectories(loader, seed), cfg)
    model.meta["ranker_refit"] = {"features": "dz = z_T - z_0, action stats, hardware",
                                  "grades": cfg.grades, "ndcg_exp_gain": cfg.ndcg_exp_gain,
                                  "wall_s": round(time.time() - start, 1)}
    model.save(args.model_dir)
    print(f"refit the ranker of {args.model_dir} in {time.time() - start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
