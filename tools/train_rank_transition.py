"""Fine-tune a model's TransH with a ranking loss on the measured records (cwm.model.rank_transition).

Starts from ``MODEL_DIR``'s transition and encoder (``z_0``), trains on the training tasks of
``--data`` and every ``--extra-data`` root (the same roots the ranker is fitted on), and writes
``OUT/transition.safetensors`` + ``OUT/transition.json``: the layout ``tools/refit_ranker.py
MODEL_DIR --transition OUT`` swaps in before it refits the ranker on the new rollouts.

    PYTHONPATH=python .venv/bin/python tools/train_rank_transition.py python/cwm/default_model \\
        --extra-data data/dataset_breadth --out work_dirs/rank_transition [--set anchor_weight=1.0]
"""
from __future__ import annotations

import argparse
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir")
    ap.add_argument("--data", default="data/dataset")
    ap.add_argument("--extra-data", action="append", default=[])
    ap.add_argument("--out", required=True)
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=JSON",
                    help="override a field of RankTransitionConfig (repeatable)")
    args = ap.parse_args(argv)
    from cwm import native
    from cwm.dataset.union import open_datasets
    from cwm.model.config_fields import parse_assignments, with_fields
    from cwm.model.rank_transition import RankTransitionConfig, save_transition, train_rank_transition
    from cwm.model.train import _data_hash, _training_trajectories
    from cwm.model.world_model import WorldModel

    try:
        cfg = with_fields(RankTransitionConfig(), parse_assignments(args.set), "rank transition config")
    except ValueError as error:
        raise SystemExit(f"--set {error}")
    start = time.time()
    model = WorldModel.load(args.model_dir)
    loader = open_datasets([args.data, *args.extra_data])
    tasks = []
    for key, trajs in sorted(_training_trajectories(loader, cfg.seed).items()):
        tasks.append({"key": key, "z0": model.z0(loader.workload(key)), "lat": [t.latency for t in trajs],
                      "fb": native.featurize_batch([t.trace for t in trajs])})
    print(f"{len(tasks)} tasks, {sum(len(t['lat']) for t in tasks)} measured candidates")
    trained, history = train_rank_transition(model.transition, tasks, cfg, log=print)
    save_transition(trained, args.out, {"rank_transition": cfg.to_dict(), "loss": history,
                                        "start": str(args.model_dir), "data": [args.data, *args.extra_data],
                                        "training_data": _data_hash(loader),
                                        "wall_s": round(time.time() - start, 1)})
    print(f"wrote {args.out} in {time.time() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
