"""Input files of the standalone C++ scorer ``cwm_score`` (docs/scorer.md).

The C++ scorer evaluates everything of :meth:`WorldModel.score` except the encoder: the
latent state ``z0 = E(workload)`` of each workload is computed here, in Python, and written
with the task's target and candidate traces, one JSON object per line::

    {"task": "...", "z0": [D floats], "target": {TVM target JSON}, "traces": ["<trace JSON>", ...]}

with the task's reference row for a model that centres its rows (``"reference"``) and its facts
for one that takes a task family (``"facts"``, :func:`cwm.model.tile_footprint.task_facts`).

Use :func:`write_scorer_input` from code, or the command line on a dataset::

    python -m cwm.model.scorer_input MODEL_DIR DATASET_DIR -o input.jsonl [--split test]
    build/cmake/cwm_score MODEL_DIR input.jsonl -o scores.jsonl
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from cwm.model import trace_columns


def target_dict(target) -> dict:
    """A target as its JSON dict: a dict, its JSON text, or a ``tvm.target.Target``."""
    if isinstance(target, dict):
        return target
    if isinstance(target, (str, bytes)):
        return json.loads(target)
    if hasattr(target, "export"):
        return dict(target.export())
    raise TypeError(f"target must be a dict, its JSON text or a tvm Target, not {type(target).__name__}")


def _trace(trace):
    """JSON text stays text; a parsed trace (``[insts, decisions]``) stays a list; both are accepted."""
    if isinstance(trace, bytes):
        return trace.decode()
    return trace if isinstance(trace, str) else list(trace)


def task_record(model, workload, traces, target, task=None) -> dict:
    """One input line (as a dict) for ``workload``'s candidate ``traces`` (JSON texts or parsed lists)."""
    z0 = model.z0(workload)
    record = {"task": task, "z0": [float(x) for x in z0], "target": target_dict(target),
              "traces": [_trace(t) for t in traces]}
    if model.centring:  # the design-space sampling is TVM's, so the reference row comes with the input
        record["reference"] = [float(x) for x in model.reference(workload, target)]
    if any(f in trace_columns.TASK_FAMILIES for f in model.columns):  # s_0's analysis is TVM's too
        record["facts"] = json.loads(model.task_facts(workload))
    return record


def write_scorer_input(model, tasks, path) -> int:
    """Writes ``tasks`` - ``(task, workload, traces, target)`` tuples - as JSONL; returns the count."""
    n = 0
    with open(path, "w") as f:
        for task, workload, traces, target in tasks:
            f.write(json.dumps(task_record(model, workload, traces, target, task), separators=(",", ":")) + "\n")
            n += 1
    return n


def read_scores(path) -> list[dict]:
    """``cwm_score``'s output: ``[{"task": ..., "scores": [...]}, ...]`` in input order."""
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def dataset_tasks(root, split: str | None = "test", max_tasks: int | None = None, max_traces: int | None = None):
    """``(task, workload, traces, target)`` of a dataset's tasks (target from its manifest)."""
    from cwm.dataset.loader import DatasetLoader

    loader = DatasetLoader(root)
    target = loader.store.manifest().get("target") or {"kind": "llvm"}
    for key in loader.task_keys(split)[:max_tasks]:
        traces = [t.trace for t in loader.trajectories(key)][:max_traces]
        if traces:
            yield key, loader.workload(key), traces, target


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m cwm.model.scorer_input",
                                description="Write the input file of the C++ scorer cwm_score from a dataset.")
    p.add_argument("model_dir", help="a saved world model (its encoder computes z0)")
    p.add_argument("dataset", help="a dataset directory (cwm dataset collect)")
    p.add_argument("-o", "--out", required=True, help="output JSONL path")
    p.add_argument("--split", choices=("train", "test", "all"), default="test")
    p.add_argument("--max-tasks", type=int, default=None)
    p.add_argument("--max-traces", type=int, default=None, help="candidates per task (default: all)")
    args = p.parse_args(argv)
    from cwm.model.world_model import WorldModel

    model = WorldModel.load(args.model_dir)
    split = None if args.split == "all" else args.split
    n = write_scorer_input(model, dataset_tasks(args.dataset, split, args.max_tasks, args.max_traces), args.out)
    print(f"wrote {n} tasks to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
