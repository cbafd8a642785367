"""The compile jobs of the end-to-end benchmark (bench/e2e.py): the CWM model they use, and
``cwm.compile`` of a network with cwm's or MetaSchedule's cost model, resumable over sessions.

Standard library only at module level; cwm and TVM are imported by :func:`default_compile` and
:func:`resolve_model`, which tests replace.
"""
from __future__ import annotations

import os
import time

from common import log, loadavg, machine, now
from e2e_checkpoint import Checkpoint, SessionLog, compile_id
from e2e_networks import COMPILED, PACK_WEIGHTS, TASK_SCHEDULER, network_onnx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE_MODEL = os.path.join(ROOT, "tests", "data", "scorer_fixture", "model")


def default_compile(net: str, method: str, *, trials: int, work_dir: str, session: SessionLog,
                    model_dir, onnx_cache: str) -> dict:
    """``cwm.compile`` the network's ONNX file with the method's cost model into ``work_dir/tuning``,
    export it to ``work_dir/artifact``; returns what the checkpoint records."""
    import cwm
    from tvm.ir.instrument import pass_instrument
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.measure_callback import PyMeasureCallback

    clock = {"t0": None, "records": 0}

    @pass_instrument
    class TuneClock:
        def run_before_pass(self, mod, info):
            if info.name == "cwm-tune":
                clock["t0"] = time.perf_counter()

    @derived_object
    class Heartbeat(PyMeasureCallback):
        """After every measured batch (already committed to the database): store the session's
        tuning seconds so far, and log progress."""

        def __init__(self):
            super().__init__()

        def apply(self, task_scheduler, task_id, measure_candidates, builder_results, runner_results):
            clock["records"] += len(measure_candidates)
            if clock["t0"] is not None:
                elapsed = time.perf_counter() - clock["t0"]
                session.beat(elapsed, clock["records"])
                if clock["records"] % 64 < len(measure_candidates):
                    log(f"    {net}/{method}: {clock['records']} candidates measured this session, "
                        f"{elapsed:.0f} s ({elapsed / clock['records']:.2f} s/trial)")

    onnx_path = network_onnx(net, onnx_cache)
    if method == "tvm_relax_pipeline":
        from e2e_tvm_pipeline import tvm_pipeline_compile

        out = tvm_pipeline_compile(net, method, trials=trials, work_dir=work_dir, session=session,
                                   model_dir=model_dir, onnx_cache=onnx_cache, onnx_path=onnx_path)
        return {**out, "onnx": os.path.relpath(onnx_path, ROOT)}
    # the shared tuning database: one per method and budget (no record crosses between cwm and
    # the TVM baseline, or between budgets); the networks of one method share it, as a user's do
    work_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(work_dir))))
    tuning_cache = os.path.join(work_root, "shared_tuning", f"{method}-t{trials}")
    start = time.perf_counter()
    compiled = cwm.compile(onnx_path, target="llvm", trials_per_task=trials, cost_model=COMPILED[method],
                           work_dir=os.path.join(work_dir, "tuning"), seed=0,
                           model_dir=model_dir if COMPILED[method] == "cwm" else None,
                           pack_weights=PACK_WEIGHTS.get(method, True), tuning_cache=tuning_cache,
                           **({"task_scheduler": TASK_SCHEDULER[method]} if method in TASK_SCHEDULER else {}),
                           measure_callbacks=(Heartbeat(),), instruments=(TuneClock(),))
    compile_s = time.perf_counter() - start
    report = compiled.report
    session.finish(report["tune_s"], report["new_records"])
    artifact = os.path.join(work_dir, "artifact")
    compiled.export(artifact)
    return {"tasks": len(report["tasks"]), "task_names": [t["name"] for t in report["tasks"]],
            "new_records": report["new_records"], "reused_records": report["reused_records"],
            "shared_records": report.get("shared_records", 0), "tuning_cache": tuning_cache,
            "session_tune_s": report["tune_s"], "compile_s": round(compile_s, 3), "artifact": artifact,
            "onnx": os.path.relpath(onnx_path, ROOT), "cost_model": COMPILED[method],
            "weights_packed": report.get("weights_packed", 0), "pack_weights": PACK_WEIGHTS.get(method, True),
            "task_scheduler": TASK_SCHEDULER.get(method), "budget_total": trials * len(report["tasks"]),
            "records_total": report["new_records"] + report["reused_records"],
            "task_best_us": {t["name"]: t.get("best_us") for t in report["tasks"]}}


def work_dir_of(work_root: str, net: str, method: str, trials: int) -> str:
    return os.path.join(work_root, net, method, f"t{trials}")


def run_compile(net, method, ckpt: Checkpoint, args, compile_fn, model) -> dict:
    """One compile job: open a tuning session in the compile folder (keeping the checkpointed
    sessions' time if the folder was lost), run ``compile_fn``, append the ``compile`` line."""
    work_dir = work_dir_of(args.work_root, net, method, args.trials)
    os.makedirs(work_dir, exist_ok=True)
    session = SessionLog(work_dir)
    earlier = ckpt.compiles.get(compile_id(net, method, args.trials))
    if earlier and not session.sessions and earlier.get("sessions"):
        # the folder was lost (a new machine or session): keep the checkpointed sessions' time
        session.sessions = [dict(s) for s in earlier["sessions"]]
    if session.sessions:
        log(f"  resuming: {len(session.sessions)} earlier session(s), {session.total_s():.0f} s of tuning so far")
    session.start()
    uses_cwm = COMPILED[method] == "cwm"
    model_dir = (model or {}).get("model_dir") if uses_cwm else None
    out = compile_fn(net, method, trials=args.trials, work_dir=work_dir, session=session, model_dir=model_dir,
                     onnx_cache=args.onnx_cache)
    rec = {"kind": "compile", "net": net, "method": method, "trials": args.trials, **out,
           "tuning_s": session.total_s(), "sessions": session.sessions,
           "model": model if uses_cwm else None,
           "date": now(), "loadavg": loadavg(), "machine": machine()}
    ckpt.append(rec)
    return rec


def resolve_model(args) -> dict:
    """The CWM model to use, checked to load: ``{model_dir, prior_sha256, fixture}``."""
    from cwm.cost_model.cwm_model import prior_fingerprint
    from cwm.model import default_model_dir

    fixture = False
    path = args.model_dir
    if path is None:
        shipped = default_model_dir(must_exist=False)
        if (shipped / "manifest.json").is_file():
            path = str(shipped)
        elif args.smoke:
            path, fixture = FIXTURE_MODEL, True
            log(f"no shipped CWM model at {shipped}; the smoke run uses the test fixture model {path} "
                "(its latencies say nothing about CWM's quality)")
        else:
            raise SystemExit(f"no shipped CWM model at {shipped}: pass --model-dir MODEL_DIR "
                             "(a model trained with `cwm train`), or leave cwm out of --methods")
    try:
        from cwm.model.world_model import WorldModel

        WorldModel.load(os.path.abspath(path))
    except (FileNotFoundError, ValueError, OSError) as error:
        raise SystemExit(f"cannot use the CWM model {path}: {error}") from None
    return {"model_dir": os.path.abspath(path), "prior_sha256": prior_fingerprint(path), "fixture": fixture}


def check_model_unchanged(ckpt: Checkpoint, args, model: dict | None) -> None:
    if not model:
        return
    used = {(c.get("model") or {}).get("prior_sha256") for c in ckpt.compiles.values()
            if c["method"] == "cwm" and c["trials"] == args.trials and c["net"] in args.net_list}
    used.discard(None)
    if used and used != {model["prior_sha256"]}:
        if not args.allow_model_change:
            raise SystemExit(f"the CWM model {model['model_dir']} differs from the one of the checkpointed cwm "
                             "compiles; pass --allow-model-change, or a new --out and --work-root")
        log("WARNING: the CWM model changed since earlier cwm compiles; those are kept")
