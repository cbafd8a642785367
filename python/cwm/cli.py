"""The ``python -m cwm`` command line: one subcommand per module with a ``main(argv)``.

To add a subcommand, add one line to :data:`COMMANDS`: ``name: (module, help)``. The module
must define ``main(argv) -> int`` and may define ``add_arguments(parser)`` so that
``python -m cwm NAME --help`` lists its options; modules are imported only when chosen.
"""
from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS = {
    "demo": ("cwm.demo", "compile the tiny ONNX CNN with the CWM cost model, export, reload and check it against onnxruntime"),
    "dataset": ("cwm.dataset_cli", "build, collect and inspect the trajectory dataset"),
    "corpus": ("cwm.corpus.cli", "build the unmeasured-trajectory corpus of generated workloads (resumable, seeded)"),
    "train": ("cwm.model.cli", "train the world model (encoder, TransH transition, ranker) on the dataset"),
    "eval": ("cwm.model.eval_cli", "rank the held-out test tasks with the world model and the baselines"),
    "probe": ("cwm.model.probe", "task-grouped CV of one ranker on each candidate representation (z0, rollout, snapshots)"),
    "tune": ("cwm.tuning.cli", "tune one TIR workload with a chosen cost model (cwm, xgb, xgb-pretrained, random)"),
    "compile": ("cwm.compile.cli", "compile an ONNX model: tune, build and export it to a folder (docs/compile.md)"),
    "run": ("cwm.compile.run_cli", "run a compiled-model folder on .npy inputs"),
    "bench": ("cwm.compile.bench_cli", "median latency of a compiled-model folder"),
}


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser; each subcommand's options come from its module."""
    parser = argparse.ArgumentParser(prog="python -m cwm", description="CWM command line")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module_name, help_text) in COMMANDS.items():
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        add_arguments = getattr(importlib.import_module(module_name), "add_arguments", None)
        if add_arguments is not None:
            add_arguments(sub_parser)
    return parser


def main(argv=None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``), run the chosen subcommand, return its status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    command = build_parser().parse_args(argv).command  # validates and handles --help
    rest = argv[argv.index(command) + 1:]
    return int(importlib.import_module(COMMANDS[command][0]).main(rest) or 0)
