"""``python -m cwm tune WORKLOAD``: tune one TIR task with a chosen cost model (:func:`cwm.tune`).

``WORKLOAD`` is a name from :data:`cwm.workloads.WORKLOADS`, a path to a TVMScript file
(``.py`` or ``.tir``: an ``@I.ir_module`` class or a ``@T.prim_func``), or, with ``--data``, a
task key of that dataset. Prints a summary table (best latency, trials, wall-time split).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cwm.cost_model.factory import registered as cost_models  # cheap: no TVM, no torch
from cwm.tuning.settings import SEARCH_PROFILES  # cheap: TVM is imported inside its methods


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("workload", help="a cwm.workloads name, a TVMScript .py/.tir file, or a task key of --data")
    parser.add_argument("--target", default="llvm", help="llvm (this host, with mcpu) or cuda (default: llvm)")
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--cost-model", default="cwm", choices=cost_models())
    parser.add_argument("--work-dir", default=None, help="MetaSchedule database and logs (default: a temp dir)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", default=None, choices=tuple(SEARCH_PROFILES),
                        help="search profile (cwm.tuning.settings.SEARCH_PROFILES); default: the cost model's "
                             "(cwm.tuning.settings.DEFAULT_PROFILE)")
    parser.add_argument("--model-dir", default=None, help="world model for --cost-model cwm (default: shipped)")
    parser.add_argument("--data", default=None,
                        help="dataset root: resolves WORKLOAD as a task key, and pre-trains xgb-pretrained "
                             "(default for the latter: data/dataset)")
    parser.add_argument("--pretrained-xgb", default=None, help="XGBModel file for --cost-model xgb-pretrained")
    parser.add_argument("--save-cost-model", default=None,
                        help="after tuning, save the cost model's state here (cwm: what it adapted)")
    parser.add_argument("--verbose", action="store_true", help="show MetaSchedule's per-round tables")
    rpc = parser.add_argument_group("remote measurement (docs/rpc.md)")
    rpc.add_argument("--rpc", default=None, metavar="HOST:PORT:KEY",
                     help="measure on the RPC servers of KEY registered at the tracker HOST:PORT instead of "
                          "locally (needed for --target cuda on a machine without a GPU)")
    rpc.add_argument("--rpc-workers", type=int, default=1, metavar="N",
                     help="concurrent RPC sessions, at most one per server of KEY (default: 1)")
    rpc.add_argument("--rpc-timeout", type=float, default=60, metavar="S",
                     help="per-candidate session timeout in seconds: upload + link + run (default: 60)")
    rpc.add_argument("--rpc-export", choices=("tar", "so"), default="tar",
                     help="artifact format: tar (objects, linked by the server's C compiler; default) or so "
                          "(linked here, for servers without a compiler)")


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
    if args.trials < 1:
        parser.error(f"--trials must be >= 1 (candidates to measure), not {args.trials}")
    if args.rpc_workers < 1:
        parser.error("--rpc-workers must be >= 1")
    if args.rpc_timeout <= 0:
        parser.error("--rpc-timeout must be > 0")
    if args.rpc is not None:
        from cwm.tuning.rpc import parse_rpc_spec

        try:
            parse_rpc_spec(args.rpc)
        except ValueError as error:
            parser.error(f"--rpc: {error}")
    try:
        name, workload = resolve_workload(args.workload, args.data)
    except (LookupError, ValueError) as error:
        print(f"cwm tune: {error.args[0] if error.args else error}", file=sys.stderr)
        return 2
    import cwm
    from cwm.cost_model.xgb_pretrained import XGBModelFileError
    from cwm.cuda_toolchain import CudaUnavailable
    from cwm.tuning import rpc
    from dataclasses import replace

    from cwm.tuning.settings import default_settings, search_settings
    from cwm.tuning.design_space import UntunableTaskError
    from cwm.tuning.json_database import CorruptDatabaseError
    from cwm.tuning.tune import NoLocalGPU

    base = search_settings(args.profile) if args.profile else default_settings(args.cost_model)
    settings = replace(base, export=args.rpc_export)
    runner = None
    if args.rpc is not None:
        runner = rpc.runner_from_spec(args.rpc, settings=settings, max_workers=args.rpc_workers,
                                      session_timeout_sec=args.rpc_timeout)
    try:
        result = cwm.tune(workload, target=args.target, trials=args.trials, cost_model=args.cost_model,
                          work_dir=args.work_dir, seed=args.seed, model_dir=args.model_dir,
                          pretrained_xgb=args.pretrained_xgb, dataset=args.data or "data/dataset",
                          runner=runner, settings=settings, verbose=args.verbose)
    except (FileNotFoundError, NoLocalGPU, CudaUnavailable, XGBModelFileError,
            UntunableTaskError, CorruptDatabaseError) as error:  # say so, no traceback
        print(f"cwm tune: {error}", file=sys.stderr)
        return 2
    finally:
        if runner is not None:
            rpc.close_runner(runner)
    print(f"{'workload':<14}{name}")
    if args.rpc is not None:
        print(f"{'measured on':<14}RPC {args.rpc} ({args.rpc_workers} session(s), {args.rpc_export} artifacts)")
    print(result.summary())
    if args.save_cost_model:
        result.model.save(args.save_cost_model)
        print(f"{'cost model':<14}saved to {args.save_cost_model}")
    if not result.n_valid:
        errors = sorted({r["error"].strip().splitlines()[0] for r in result.records if r.get("error")})
        why = f"; first error: {errors[0]}" if errors else ""
        print(f"cwm tune: error: none of the {len(result.records)} measured candidate(s) ran{why}", file=sys.stderr)
        return 1
    return 0
