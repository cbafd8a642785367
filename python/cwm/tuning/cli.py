"""``python -m cwm tune WORKLOAD``: tune one TIR task with a chosen cost model (:func:`cwm.tune`).

``WORKLOAD`` is a name from :data:`cwm.workloads.WORKLOADS`, a path to a TVMScript file
(``.py`` or ``.tir``: an ``@I.ir_module`` class or a ``@T.prim_func``), or, with ``--data``, a
task key of that dataset. Prints a summary table (best latency, trials, wall-time split).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cwm.tuning.tune import COST_MODELS  # cheap: tune.py imports TVM only inside its functions


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("workload", help="a cwm.workloads name, a TVMScript .py/.tir file, or a task key of --data")
    parser.add_argument("--target", default="llvm", help="llvm (this host, with mcpu) or cuda (default: llvm)")
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--cost-model", default="cwm", choices=COST_MODELS)
    parser.add_argument("--work-dir", default=None, help="MetaSchedule database and logs (default: a temp dir)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model-dir", default=None, help="world model for --cost-model cwm (default: shipped)")
    parser.add_argument("--data", default=None,
                        help="dataset root: resolves WORKLOAD as a task key, and pre-trains xgb-pretrained "
                             "(default for the latter: data/dataset)")
    parser.add_argument("--pretrained-xgb", default=None, help="XGBModel file for --cost-model xgb-pretrained")
    parser.add_argument("--save-cost-model", default=None,
                        help="after tuning, save the cost model's state here (cwm: what it adapted)")
    parser.add_argument("--verbose", action="store_true", help="show MetaSchedule's per-round tables")


def _from_script(path: Path):
    """The IRModule/PrimFunc defined by a TVMScript file."""
    import tvm
    import tvm.script
    from tvm import tirx

    text = path.read_text()
    try:
        return tvm.script.from_source(text)
    except Exception as parse_error:  # noqa: BLE001 - fall back to running a .py file
        if path.suffix != ".py":
            raise ValueError(f"{path}: not a TVMScript module or PrimFunc: {parse_error}") from None
    import runpy

    found = {k: v for k, v in runpy.run_path(str(path)).items()
             if isinstance(v, (tvm.IRModule, tirx.PrimFunc)) and not k.startswith("_")}
    if len(found) != 1:
        raise ValueError(f"{path}: expected one IRModule or PrimFunc at top level, found {sorted(found) or 'none'}")
    return next(iter(found.values()))


def resolve_workload(spec: str, data: str | None = None):
    """``(name, workload)`` for a workload name, a TVMScript file or a task key of ``data``."""
    from cwm import workloads

    if spec in workloads.WORKLOADS:
        return spec, workloads.get(spec)
    path = Path(spec)
    if path.suffix in (".py", ".tir") and path.is_file():
        return path.name, _from_script(path)
    if data is not None:
        from cwm.dataset.store import DatasetStore

        store = DatasetStore(data)
        if spec in store.task_keys():
            import tvm

            meta = store.get_task(spec)
            return f"{meta.get('name', spec)} ({spec})", tvm.ir.load_json(meta["workload"])
    hint = f", a task key of {data}" if data else " (or a dataset task key with --data)"
    raise LookupError(f"unknown workload {spec!r}: use one of {sorted(workloads.WORKLOADS)}, "
                      f"a TVMScript .py/.tir file{hint}")


def main(argv) -> int:
    parser = argparse.ArgumentParser(prog="python -m cwm tune", description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        name, workload = resolve_workload(args.workload, args.data)
    except (LookupError, ValueError) as error:
        print(f"cwm tune: {error.args[0] if error.args else error}", file=sys.stderr)
        return 2
    import cwm

    try:
        result = cwm.tune(workload, target=args.target, trials=args.trials, cost_model=args.cost_model,
                          work_dir=args.work_dir, seed=args.seed, model_dir=args.model_dir,
                          pretrained_xgb=args.pretrained_xgb, dataset=args.data or "data/dataset",
                          verbose=args.verbose)
    except FileNotFoundError as error:  # no shipped model / dataset: say so, no traceback
        print(f"cwm tune: {error}", file=sys.stderr)
        return 2
    print(f"{'workload':<14}{name}")
    print(result.summary())
    if args.save_cost_model:
        result.model.save(args.save_cost_model)
        print(f"{'cost model':<14}saved to {args.save_cost_model}")
    return 0 if result.n_valid else 1
