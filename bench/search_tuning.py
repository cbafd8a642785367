"""The tuning runs of the search benchmark (bench/search.py): :func:`cwm.tune` per (task, method,
seed, trials) with the method's cost model, the pinned pre-trained XGBModel, the CWM model
check, and the loop that runs what the checkpoint does not hold yet.

Standard library only at module level; cwm is imported by :class:`DefaultTuner`, which tests
replace, and by the model checks.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import statistics
import time
import traceback

from checkpoint import write_json
from common import fmt_s, loadavg, log, machine, now
from search_plan import COST_MODEL, Checkpoint, run_id, split_method
from search_stats import best_so_far


def run_record(spec: dict, result, wall_s: float) -> dict:
    """The checkpoint line of a finished run, from a :class:`cwm.TuneResult` (or look-alike)."""
    lat = [r.get("latency_us") for r in result.records]
    best = result.best_us if result.best_us is not None and math.isfinite(result.best_us) else None
    wall = dict(result.wall or {})
    n = len(result.records)
    return {"kind": "run", **spec, "best_us": best, "best_trace": result.best_trace, "curve": best_so_far(lat),
            "n_records": n, "n_valid": sum(x is not None for x in lat), "timing": wall,
            "s_per_trial": (wall.get("total_s", wall_s) / n) if n else None, "wall_s": wall_s,
            "date": now(), "loadavg": loadavg(), "machine": machine()}


def training_data_hash(data) -> dict:
    """``{train_shards, sha256}`` of the dataset's training shards (``data``: a root, or a list of
    roots read as one), as ``cwm train`` records it in a model's manifest (``training_data``, or
    ``ranker_refit.ranker_training_data`` for a ranker refit with ``--extra-data``), to check
    both models saw the same records."""
    from cwm.dataset.union import open_datasets
    from cwm.model.train import _data_hash

    return _data_hash(open_datasets(data))


class DefaultTuner:
    """``tune_fn`` of :func:`execute`: :func:`cwm.tune` on the host target with the method's cost model.

    A method ``<base>@<profile>`` tunes with ``base``'s cost model and the search knobs of the
    named profile (:func:`cwm.tuning.settings.search_settings`); ``xgb_pretrained`` (with any
    profile) uses a pre-trained XGBModel per seed, pinned as
    ``<work_root>/xgb_pretrained/seed<S>.tar`` on first use (built from ``data``'s training split,
    through cwm's cache), so that a resumed run uses the same model even if the dataset grew.
    """

    def __init__(self, model_dir, data, work_root, model: dict | None = None, extra_data=()):
        self.model_dir, self.data, self.work_root, self.model = model_dir, data, work_root, model
        #: the roots the pre-trained XGBModel trains on: ``data`` and ``--extra-data``, as CWM's ranker
        self.roots = [data, *extra_data] if extra_data else data

    def pretrained(self, seed) -> str:
        pinned = os.path.join(self.work_root, "xgb_pretrained", f"seed{seed}.tar")
        if not os.path.exists(pinned):
            from cwm.cost_model.xgb_pretrained import pretrained_xgb_path

            start = time.perf_counter()
            log(f"building/looking up the pre-trained XGBModel for seed {seed} on {self.roots} ...")
            built = str(pretrained_xgb_path(self.roots, seed=seed, log=lambda m: log(m)))
            os.makedirs(os.path.dirname(pinned), exist_ok=True)
            meta = {}
            if os.path.exists(built + ".json"):
                with open(built + ".json") as f:
                    meta = json.load(f)
            meta.update(source=built, training_data=training_data_hash(self.roots))
            shutil.copyfile(built, pinned + ".tmp")
            write_json(pinned + ".json", meta)
            os.replace(pinned + ".tmp", pinned)
            log(f"pinned {built} as {pinned} ({time.perf_counter() - start:.0f} s); trained on "
                f"{meta['training_data']}")
            cwm_data = (self.model or {}).get("training_data")
            if cwm_data and cwm_data.get("sha256") != meta["training_data"]["sha256"]:
                log(f"WARNING: the CWM model was trained on other training records ({cwm_data}) than this "
                    f"pre-trained XGBModel ({meta['training_data']}); the dataset changed in between")
        return pinned

    def __call__(self, workload, *, method, seed, trials, work_dir):
        import cwm
        from cwm.tuning.settings import search_settings

        base, profile = split_method(method)
        options = {}
        if base == "cwm":
            options["model_dir"] = self.model_dir
        if base == "xgb_pretrained":
            options["pretrained_xgb"] = self.pretrained(seed)
        if profile is not None:
            options["settings"] = search_settings(profile)
        return cwm.tune(workload, target="llvm", trials=trials, cost_model=COST_MODEL[base], work_dir=work_dir,
                        seed=seed, dataset=self.data, **options)


def estimate_s_per_trial(runs: dict, method: str, default: float = 1.5) -> float:
    xs = [r["s_per_trial"] for r in runs.values() if r.get("method") == method and r.get("s_per_trial")]
    if not xs:
        xs = [r["s_per_trial"] for r in runs.values() if r.get("s_per_trial")]
    return statistics.median(xs) if xs else default


def execute(specs, ckpt: Checkpoint, tune_fn, workload_fn, names: dict, work_root: str, max_runs=None,
            extra=None) -> dict:
    """Run every spec not in the checkpoint; append each finished run at once. Returns counts.

    A run that raises is logged and not recorded (a restart retries it); the others go on.
    """
    todo = [s for s in specs if run_id(s) not in ckpt.runs]
    done_before = len(specs) - len(todo)
    log(f"{len(specs)} runs planned, {done_before} already in {ckpt.path}, {len(todo)} to do")
    failed, ran = [], 0
    task_order = list(dict.fromkeys(s["task"] for s in specs))
    for i, spec in enumerate(todo):
        if max_runs is not None and ran >= max_runs:
            log(f"--max-runs {max_runs} reached; stopping (rerun to continue)")
            break
        remaining = sum(s["trials"] * estimate_s_per_trial(ckpt.runs, s["method"]) for s in todo[i:])
        key = spec["task"]
        log(f"[run {done_before + i + 1}/{len(specs)}] task {task_order.index(key) + 1}/{len(task_order)} "
            f"{names.get(key, key)} method={spec['method']} seed={spec['seed']} trials={spec['trials']} "
            f"({spec['purpose']}); ETA {fmt_s(remaining)}")
        work_dir = os.path.join(work_root, key, f"{spec['method']}_s{spec['seed']}_t{spec['trials']}")
        shutil.rmtree(work_dir, ignore_errors=True)  # a cut run's database must not seed this one
        start = time.perf_counter()
        try:
            result = tune_fn(workload_fn(key), method=spec["method"], seed=spec["seed"], trials=spec["trials"],
                             work_dir=work_dir)
        except Exception:  # noqa: BLE001  (logged; retried on restart)
            log(f"  FAILED after {time.perf_counter() - start:.0f} s:\n{traceback.format_exc()}")
            failed.append(run_id(spec))
            ran += 1
            continue
        rec = run_record(spec, result, time.perf_counter() - start)
        rec.update(extra or {})
        ckpt.append(rec)
        ran += 1
        best = f"{rec['best_us']:.1f} us" if rec["best_us"] is not None else "none valid"
        log(f"  best {best}, {rec['n_valid']}/{rec['n_records']} valid, {rec['wall_s']:.0f} s "
            f"({rec['s_per_trial'] or 0:.2f} s/trial)")
    missing = [run_id(s) for s in specs if run_id(s) not in ckpt.runs]
    return {"ran": ran, "failed": failed, "missing": missing}


def model_info(model_dir) -> dict:
    from cwm.cost_model.cwm_model import prior_fingerprint
    from cwm.model import default_model_dir

    path = os.path.abspath(model_dir) if model_dir else str(default_model_dir())
    info = {"model_dir": path, "prior_sha256": prior_fingerprint(path)}
    try:
        with open(os.path.join(path, "manifest.json")) as f:
            man = json.load(f)
        # what the ranker was fitted on: the training data, or more with `refit_ranker --extra-data`
        info["training_data"] = (man.get("ranker_refit") or {}).get("ranker_training_data") or man.get("training_data")
    except (OSError, ValueError):
        pass
    return info


def check_model(model_dir) -> dict:
    """:func:`model_info` of a CWM model that loads (fail at the start, not at the first cwm run)."""
    try:
        from cwm.model.world_model import WorldModel

        info = model_info(model_dir)
        WorldModel.load(info["model_dir"])
    except (FileNotFoundError, ValueError, OSError) as error:
        raise SystemExit(f"cannot use the CWM model: {error}") from None
    return info
