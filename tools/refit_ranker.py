"""Refit only the ranker of a trained model directory (phase 3 of ``cwm train``), in place.

Used when the ranker's features changed from ``ẑ_T`` (model v2) to ``ẑ_T - z_0`` (v3,
docs/decisions.md §15), when its labels changed to 16 grades with linear NDCG gains (§37), and
when it gained the trace structure (v4, §44): the encoder and transition of the directory are
kept bit for bit, the ranker is refit on the training split with the config stored next to it
(``--grades`` / ``--exp-gain`` / ``--objective`` / ``--pair-top-k`` override those fields), exactly as
``train_world_model`` fits it, and the manifest is rewritten as v4 (metrics and training-data
hash kept, ``ranker_refit`` added).

``--extra-data ROOT`` (repeatable) fits the ranker on the training tasks of further dataset roots
as well (:mod:`cwm.dataset.union`); ``--data`` must still be the model's training data, and the
manifest records the roots and their hash under ``ranker_refit``.

    python tools/refit_ranker.py python/cwm/default_model [--data data/dataset] [--grades 16 --exp-gain false]
        [--objective rank:pairwise] [--pair-top-k all] [--parallel-trees 4] [--ranker-seed 0] [--extra-data data/dataset_breadth]
        [--vector-alignment true] [--compute-locations true] [--loop-tiles true]
"""
from __future__ import annotations

import argparse
import time


def main(argv=None) -> int:
    from cwm.model import trace_columns

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir")
    ap.add_argument("--data", default="data/dataset")
    ap.add_argument("--grades", type=int, default=None, help="relevance grades of the labels (default: as saved)")
    ap.add_argument("--exp-gain", choices=("true", "false"), default=None,
                    help="NDCG gains 2^grade - 1 (true) or grade (false); default: as saved")
    ap.add_argument("--objective", default=None, help="XGBoost ranking objective (default: as saved)")
    ap.add_argument("--pair-top-k", default=None,
                    help="pairs from the K best-scored candidates of a task; 'all' for every pair (default: as saved)")
    ap.add_argument("--ranker-seed", type=int, default=None,
                    help="the ranker's XGBoost seed (row and column sampling; default: as saved)")
    ap.add_argument("--parallel-trees", type=int, default=None,
                    help="trees per boosting round, averaged (XGBoost's num_parallel_tree; default: as saved)")
    ap.add_argument("--transition", default=None,
                    help="a directory from `bench/transition_corpus.py --save`: its TransH (the same state size; "
                         "any hidden size, with or without the state read) replaces the model's before the "
                         "ranker is refit on the new rollouts")
    ap.add_argument("--centring", type=int, default=None, metavar="SAMPLES",
                    help="rows beside the rows less the mean row of SAMPLES seeded design-space samples of the task "
                         "(0: the rows alone; default: as saved); docs/decisions.md §62")
    for family in trace_columns.FAMILIES:
        ap.add_argument("--" + family.replace("_", "-"), choices=("true", "false"), default=None,
                        help=f"the rows also hold the columns of cwm.model.{family} (default: as saved); "
                             "cwm.model.trace_columns")
    ap.add_argument("--extra-data", action="append", default=[],
                    help="another dataset root whose training tasks the ranker is fitted on too (repeatable)")
    args = ap.parse_args(argv)
    import dataclasses

    import torch

    from cwm.dataset.loader import DatasetLoader
    from cwm.dataset.union import open_datasets
    from cwm.model.train import _data_hash, _training_trajectories, fit_ranker
    from cwm.model.world_model import WorldModel

    torch.set_num_threads(2)
    start = time.time()
    model = WorldModel.load(args.model_dir, refit_ranker=True)
    if args.transition:
        try:
            model.use_transition(args.transition)
        except ValueError as e:
            raise SystemExit(str(e)) from None
    loader = DatasetLoader(args.data)
    if model.meta.get("training_data") != _data_hash(loader):
        raise SystemExit(f"{args.data} is not the training data of {args.model_dir} (training-data hash differs)")
    seed = model.meta.get("config", {}).get("seed", 0)
    cfg = model.ranker.cfg
    if args.grades is not None:
        cfg = dataclasses.replace(cfg, grades=args.grades)
    if args.objective is not None:
        cfg = dataclasses.replace(cfg, objective=args.objective)
    if args.exp_gain is not None:
        cfg = dataclasses.replace(cfg, ndcg_exp_gain=args.exp_gain == "true")
    if args.pair_top_k is not None:
        cfg = dataclasses.replace(cfg, pair_top_k=None if args.pair_top_k == "all" else int(args.pair_top_k))
    if args.ranker_seed is not None:
        cfg = dataclasses.replace(cfg, seed=args.ranker_seed)
    if args.parallel_trees is not None:
        if args.parallel_trees < 1:
            raise SystemExit("--parallel-trees must be at least 1")
        cfg = dataclasses.replace(cfg, parallel_trees=args.parallel_trees)
    if args.centring is not None:
        from cwm.model.centring import centring_meta

        model.meta.pop("centring", None)
        model.meta.update(centring_meta(args.centring))
    chosen = {family: getattr(args, family) for family in trace_columns.FAMILIES if getattr(args, family) is not None}
    saved = set(model.columns)
    model.columns = [f for f in trace_columns.FAMILIES if chosen.get(f, "true" if f in saved else "false") == "true"]
    if args.extra_data:
        loader = open_datasets([args.data, *args.extra_data])
    model.ranker = fit_ranker(model, loader, _training_trajectories(loader, seed), cfg)
    if model.sequence_head is not None:  # its blend holds the old ranker's spread
        model.sequence_head = None
        print("the sequence head is dropped (its blend was fitted beside the old ranker): "
              "run tools/fit_sequence_head.py again")
    features = "dz = z_T - z_0, action stats, trace structure, " + "".join(f"{f}, " for f in model.columns)
    model.meta["ranker_refit"] = {"features": features + "hardware",
                                  "objective": cfg.objective, "grades": cfg.grades,
                                  "ndcg_exp_gain": cfg.ndcg_exp_gain, "pair_top_k": cfg.pair_top_k or "all",
                                  "parallel_trees": cfg.parallel_trees, "centring": model.centring,
                                  "wall_s": round(time.time() - start, 1),
                                  **({"extra_data": list(args.extra_data), "ranker_training_data": _data_hash(loader)}
                                     if args.extra_data else {})}
    model.save(args.model_dir)
    print(f"refit the ranker of {args.model_dir} in {time.time() - start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
