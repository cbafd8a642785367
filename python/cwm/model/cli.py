"""``python -m cwm train``: train the world model and write a versioned model directory."""
from __future__ import annotations

import argparse


def _common_arguments(parser: argparse.ArgumentParser) -> None:
    """``--data``, ``--seed`` and ``--threads``: the same for ``cwm train`` and ``cwm eval``."""
    parser.add_argument("--data", default="data/dataset", help="dataset root")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2, help="torch threads")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    _common_arguments(parser)
    parser.add_argument("--out", required=True, help="model directory to write")
    parser.add_argument("--extra-data", action="append", default=[],
                        help="another dataset root whose training tasks are trained on too (repeatable; "
                             "e.g. the generated workloads of `cwm dataset tasks --from-corpus`)")
    parser.add_argument("--encoder-steps", type=int, default=None)
    parser.add_argument("--encoder-time", type=float, default=None, help="seconds")
    parser.add_argument("--rollout-trajectories", type=int, default=None)
    parser.add_argument("--encoder", default=None,
                        help="a trained encoder directory to use instead of phase 1 (contrastive training)")


def main(argv) -> int:
    parser = argparse.ArgumentParser(prog="python -m cwm train")
    add_arguments(parser)
    args = parser.parse_args(argv)
    import torch

    from cwm.model.train import TrainConfig, train_world_model

    torch.set_num_threads(args.threads)
    cfg = TrainConfig(seed=args.seed)
    if args.encoder_steps is not None:
        cfg.encoder_steps = args.encoder_steps
    if args.encoder_time is not None:
        cfg.encoder_time_s = args.encoder_time
    if args.rollout_trajectories is not None:
        cfg.rollout_trajectories = args.rollout_trajectories
    cfg.encoder_dir = args.encoder
    train_world_model([args.data, *args.extra_data] if args.extra_data else args.data, args.out, cfg)
    return 0


def add_eval_arguments(parser: argparse.ArgumentParser) -> None:
    _common_arguments(parser)
    parser.add_argument("--model", default=None,
                        help="model directory (from `cwm train`; default: the shipped model)")
    parser.add_argument("--out", default="bench/results/ranking.json")
    parser.add_argument("--state-cache", default=None,
                        help="directory of cached encoder states of the final programs (default "
                             "~/.cache/cwm/states; an interrupted run resumes from it)")
    parser.add_argument("--no-state-cache", action="store_true", help="encode every final program again")
    parser.add_argument("--extra-data", action="append", default=[],
                        help="another dataset root whose training tasks the baselines train on too (repeatable; "
                             "use the roots the model was trained with)")
    parser.add_argument("--skip", action="append", default=[], choices=("static_final",),
                        help="leave a row out (static_final encodes every training and test task's final program: "
                             "~1.5-2 h on 2 cores without the state cache); the result lists it as skipped")


def eval_main(argv) -> int:
    """``python -m cwm eval``: rank the held-out test tasks' candidates with every model."""
    parser = argparse.ArgumentParser(prog="python -m cwm eval")
    add_eval_arguments(parser)
    args = parser.parse_args(argv)
    import json
    import os

    import torch

    from cwm.machine import describe, today
    from cwm.model import default_model_dir
    from cwm.model.evaluate import evaluate
    from cwm.model.fingerprint import model_fingerprint
    from cwm.model.state_cache import DEFAULT_DIR

    torch.set_num_threads(args.threads)
    model_dir = args.model or str(default_model_dir())
    cache = None if args.no_state_cache else (args.state_cache or DEFAULT_DIR)
    result = evaluate(args.data, model_dir, seed=args.seed, state_cache=cache, extra_roots=args.extra_data,
                      skip=tuple(args.skip))
    result.update(machine=describe(), date=today(), model=model_dir, model_fingerprint=model_fingerprint(model_dir))
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2, default=float)
    print(f"wrote {args.out}")
    return 0
