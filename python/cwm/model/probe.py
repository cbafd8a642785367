"""``cwm probe``: which representation of a candidate carries what ranking needs (issue #12).

The same small LambdaRank ranker is fitted on each representation with task-grouped
cross-validation over the **training** tasks only (the held-out tasks stay for the final
report). Representations (:mod:`cwm.model.probe_features`):

* ``z0``            ``E(s_0)``, the same for every candidate of a task (a floor: all ties, which
  the pairwise metric counts as wrong);
* ``zt_hat``        the rollout's displacement ``ẑ_T - z_0`` (what CWM's ranker sees);
* ``et``            ``E(s_T) - E(s_0)`` of the real final program (snapshot of the encoder);
* ``store``         pooled per-store features of the real final program (snapshot ceiling);
* ``store_pred``    those features predicted from the rollout ``[ẑ_T - z_0, stats]`` by a ridge
  decoder fitted on the training folds; its standardized error is reported on the fitting
  folds and on the held-out fold (a decoder that only memorizes shows a large gap);
* ``zt_rank``       the displacement ``ẑ_T - z_0`` of a transition fine-tuned *in each fold* on the
  fitting tasks' measured records with a ranking loss (:mod:`cwm.model.rank_transition`,
  starting from the model's own); the validation tasks never train it;
* ``stats``         action statistics + hardware features alone;

and each of the first six with ``+stats``. ``store`` and ``et`` replay the candidate: they
are baselines, never CWM's scoring path (DESIGN.md §5).

``--group-by network`` leaves one network out instead of dealing tasks into seeded folds: the
held-out tasks come from networks that gave no training task, and task-grouped folds keep a
validated task's siblings of the same network (ResNet-18's other convolutions) in the fitting
set, so they flatter every representation that recognises a network.

``--fit-only-data ROOT`` (repeatable) adds the training tasks of other dataset roots (e.g. the
generated workloads of ``cwm dataset tasks --from-corpus``) to *every* fold's fitting set and
to no validation fold: the metrics stay those of ``--data``'s training tasks, so a run with and
one without tell whether breadth helps the tasks that matter. ``--representations`` restricts
the list (``et`` encodes every final program, the slow part). ``--centring centred`` gives the
ranker each input less its task's mean over candidates (``both``: raw and centred side by side);
``--reference-samples 32`` centres on the mean of 32 design-space samples instead (decision 62).

    python -m cwm probe [--data data/dataset] [--model-dir DIR] [--folds 5] [--fold-seeds 0,1,2]
        [--fit-only-data data/dataset_breadth] [--representations zt_hat+stats,stats]
        [--out bench/results/probe.json]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import time
from pathlib import Path

import numpy as np

from cwm.machine import cpu

BASE = ("z0", "zt_hat", "et", "store", "store_pred", "zt_rank")
REPRESENTATIONS = BASE + tuple(f"{r}+stats" for r in BASE) + ("stats",)
RIDGE = 1.0  # decoder regularization on standardized inputs (a probe, not a tuned model)


GROUPINGS = ("task", "network")
CENTRINGS = ("none", "centred", "both")  # the ranker's input as is, less a per-task reference, or both


def centre(x: np.ndarray, how: str, reference: np.ndarray | None = None) -> np.ndarray:
    """``x`` (one task's candidates) as is, less ``reference`` (default: the mean over the task's
    candidates), or both side by side: a tree splits on absolute values, so a within-task
    comparison it must otherwise learn per workload becomes one threshold."""
    if how == "none":
        return x
    relative = x - (x.mean(0, keepdims=True) if reference is None else reference[None])
    return relative if how == "centred" else np.concatenate([x, relative], 1)


def task_folds(keys: list[str], folds: int, seed: int) -> list[list[str]]:
    """Tasks dealt into ``folds`` groups after a seeded shuffle (every task in exactly one)."""
    order = list(keys)
    np.random.default_rng(seed).shuffle(order)
    return [order[i::folds] for i in range(folds)]


def network_folds(networks_of: dict[str, list[str]]) -> list[tuple[str, list[str]]]:
    """Leave one network out: for every network (sorted), the tasks that occur in it.

    This mirrors the held-out split, whose tasks come from networks that no training task was
    extracted from; task-grouped folds leave a ResNet-18 convolution's sibling shapes of ResNet-50
    in the fitting set. A task of several networks is validated in each of their folds and
    fitted in none of them; a task with no network is never validated."""
    names = sorted({n for nets in networks_of.values() for n in nets})
    return [(n, sorted(k for k, nets in networks_of.items() if n in nets)) for n in names]


def folds_of(tasks: list[dict], group_by: str, folds: int, seed: int) -> list[tuple[str, list[str]]]:
    """``(name, validation keys)`` of every fold, grouped by ``"task"`` or ``"network"``."""
    if group_by == "task":
        return [(str(i), f) for i, f in enumerate(task_folds(sorted(t["key"] for t in tasks), folds, seed))]
    if group_by == "network":
        out = [(n, keys) for n, keys in network_folds({t["key"]: list(t.get("networks", ())) for t in tasks})
               if len(keys) < len(tasks)]  # a network holding every task would leave nothing to fit
        if len(out) < 2:
            raise ValueError(f"network-grouped CV needs tasks of at least 2 networks; got {[n for n, _ in out]}")
        return out
    raise ValueError(f"group_by must be one of {GROUPINGS}, not {group_by!r}")


class StoreDecoder:
    """Ridge regression from the rollout ``[ẑ_T - z_0, stats]`` to standardized per-store features."""

    def _standardized(self, tasks):
        """Inputs and targets of the rows with every target finite, in standard units (sets the scales)."""
        x, y = self._x(tasks), np.concatenate([t["store"] for t in tasks])
        ok = np.isfinite(y).all(1)
        x, y = x[ok], y[ok]
        self.xm, self.xs = x.mean(0), x.std(0) + 1e-6
        self.ym, std = y.mean(0), y.std(0)
        self.ys = np.where(std < 1e-3, 1.0, std)  # a feature constant on the fitting folds: raw units
        return (x - self.xm) / self.xs, (y - self.ym) / self.ys

    def fit(self, tasks):
        xn, yn = self._standardized(tasks)
        a = np.c_[xn, np.ones(len(xn))]
        self.w = np.linalg.solve(a.T @ a + RIDGE * np.eye(a.shape[1]), a.T @ yn)
        return self

    @staticmethod
    def _x(tasks):
        return np.concatenate([np.c_[t["zt_hat"] - t["z0"], t["stats"]] for t in tasks]).astype(np.float64)

    def predict(self, task) -> np.ndarray:
        xn = (self._x([task]) - self.xm) / self.xs
        return (np.c_[xn, np.ones(len(xn))] @ self.w) * self.ys + self.ym

    def error(self, tasks) -> float:
        """Mean squared error in standard units (1.0 = predicting the mean)."""
        errs = []
        for t in tasks:
            ok = np.isfinite(t["store"]).all(1)
            if ok.any():
                errs.append((((self.predict(t)[ok] - t["store"][ok]) / self.ys) ** 2).mean(1))
        return float(np.mean(np.concatenate(errs))) if errs else float("nan")

    def within_task_error(self, tasks) -> float:
        """The error of what ranking needs: candidates' deviations from their task's mean,
        over the variance of those deviations (1.0 = predicting no difference between a
        task's candidates; features constant within every task are left out)."""
        num, den = 0.0, 0.0
        for t in tasks:
            ok = np.isfinite(t["store"]).all(1)
            if ok.sum() < 2:
                continue
            y, pred = t["store"][ok], self.predict(t)[ok]
            dy, dp = y - y.mean(0), pred - pred.mean(0)
            num += (((dp - dy) / self.ys) ** 2).sum()
            den += ((dy / self.ys) ** 2).sum()
        return float(num / den) if den > 0 else float("nan")


class MlpStoreDecoder(StoreDecoder):
    """The same inputs and targets through a two-layer MLP (256 hidden, full-batch Adam): tells
    whether what the linear decoder misses is in the inputs at all."""

    def __init__(self, hidden: int = 256, epochs: int = 400, seed: int = 0):
        self.hidden, self.epochs, self.seed = hidden, epochs, seed

    def fit(self, tasks):
        import torch

        xn, yn = self._standardized(tasks)
        torch.manual_seed(self.seed)
        xt, yt = torch.tensor(xn, dtype=torch.float32), torch.tensor(yn, dtype=torch.float32)
        self.net = torch.nn.Sequential(torch.nn.Linear(xt.shape[1], self.hidden), torch.nn.GELU(),
                                       torch.nn.Linear(self.hidden, self.hidden), torch.nn.GELU(),
                                       torch.nn.Linear(self.hidden, yt.shape[1]))
        opt = torch.optim.Adam(self.net.parameters(), lr=3e-3, weight_decay=1e-5)
        for _ in range(self.epochs):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(self.net(xt), yt)
            loss.backward()
            opt.step()
        return self

    def predict(self, task) -> np.ndarray:
        import torch

        xn = torch.tensor((self._x([task]) - self.xm) / self.xs, dtype=torch.float32)
        with torch.no_grad():
            return self.net(xn).numpy().astype(np.float64) * self.ys + self.ym


def representation(name: str, task: dict, decoder: StoreDecoder | None, centring: str = "none") -> np.ndarray:
    base, _, extra = name.partition("+")
    n = len(task["lat"])
    if base == "stats":
        parts = [task["stats"]]
    else:
        parts = [{"z0": lambda: np.repeat(task["z0"][None], n, 0),
                  "zt_hat": lambda: task["zt_hat"] - task["z0"],
                  "zt_rank": lambda: task["zt_rank"] - task["z0"],
                  "et": lambda: task["et"] - task["z0"],
                  "store": lambda: task["store"],
                  "store_pred": lambda: decoder.predict(task)}[base]()]
        if extra == "stats":
            parts.append(task["stats"])
    x = np.concatenate(parts, 1)
    ref = task.get("ref")  # [zt_hat - z0, stats] of the task's design-space samples (--reference-samples)
    if centring != "none" and ref is not None:
        d = len(task["z0"])
        slices = {"zt_hat+stats": slice(None), "zt_hat": slice(0, d), "stats": slice(d, None)}
        if name not in slices:
            raise ValueError(f"--reference-samples centres zt_hat, stats and zt_hat+stats, not {name}")
        ref = ref[slices[name]]
    return centre(x, centring, ref).astype(np.float32)


def cross_validate(tasks: list[dict], folds: int, seed: int, ranker_cfg, log=print,
                   names=REPRESENTATIONS, fit_only: list[dict] = (), group_by: str = "task",
                   transition=None, rank_cfg=None, centring: str = "none") -> dict:
    """Grouped CV of the ``names`` representations; metrics pooled over the validation folds.
    ``group_by``: ``"task"`` (``folds`` seeded groups of tasks) or ``"network"`` (leave one
    network out, :func:`network_folds`; ``folds`` and ``seed`` then do not matter). ``fit_only``
    tasks join every fold's fitting set and are never validated on. ``zt_rank`` needs the
    model's ``transition`` (the starting point) and every task's ``fb``; ``rank_cfg`` is its
    :class:`~cwm.model.rank_transition.RankTransitionConfig`. ``centring``: :func:`centre`."""
    from cwm.model.metrics import summarize
    from cwm.model.ranker import Ranker

    by_key = {t["key"]: t for t in tasks}
    scored = {name: [] for name in names}
    decoder_err = {"fit": [], "heldout": [], "fit_within_task": [], "heldout_within_task": []}
    plan = folds_of(tasks, group_by, folds, seed)
    per_fold = []
    for f, (fold_name, val_keys) in enumerate(plan):
        val = [by_key[k] for k in val_keys]
        fit = [t for k, t in by_key.items() if k not in set(val_keys)] + list(fit_only)
        if any(n.partition("+")[0] == "zt_rank" for n in names):
            _fold_rank_rollouts(transition, rank_cfg, fit, val, log)
        decoder = StoreDecoder().fit(fit)
        decoder_err["fit"].append(decoder.error(fit))
        decoder_err["heldout"].append(decoder.error(val))
        decoder_err["fit_within_task"].append(decoder.within_task_error(fit))
        decoder_err["heldout_within_task"].append(decoder.within_task_error(val))
        for name in names:
            ranker = Ranker(ranker_cfg).fit(
                np.concatenate([representation(name, t, decoder, centring) for t in fit]),
                np.concatenate([t["lat"] for t in fit]),
                np.concatenate([np.full(len(t["lat"]), i) for i, t in enumerate(fit)]))
            rows = [(t["lat"], ranker.predict(representation(name, t, decoder, centring)), t["weight"])
                    for t in val]
            scored[name] += rows
            if group_by == "network":
                per_fold.append({"fold": fold_name, "representation": name, "tasks": len(val),
                                 **{m: v for m, v in summarize(rows).items() if isinstance(v, (int, float))}})
        log(f"fold {f + 1}/{len(plan)} ({fold_name}, {len(val)} tasks): decoder error fit "
            f"{decoder_err['fit'][-1]:.3f}, held-out {decoder_err['heldout'][-1]:.3f}")
    out = {"group_by": group_by, "fold_names": [n for n, _ in plan], "representations": {name: summarize(rows) for name, rows in scored.items()},
           "store_decoder_std_mse": {k: float(np.mean(v)) for k, v in decoder_err.items()}}
    if per_fold:
        out["per_fold"] = per_fold
    return out


def _fold_rank_rollouts(transition, rank_cfg, fit: list[dict], val: list[dict], log) -> None:
    """Train the ranking transition on ``fit`` and set every task's ``zt_rank``: the validation
    tasks' from it, the fitting tasks' out of fold when ``rank_cfg.cross_fit > 1``."""
    from cwm.model.rank_transition import RankTransitionConfig, fit_with_ranker_rows, rollouts

    if transition is None:
        raise ValueError("zt_rank needs the model's transition to start from")
    start = time.perf_counter()
    trained, history, rows = fit_with_ranker_rows(transition, fit, rank_cfg or RankTransitionConfig())
    for t, z in zip(fit, rows):
        t["zt_rank"] = z
    for t, z in zip(val, rollouts(trained, val)):
        t["zt_rank"] = z
    log(f"rank transition: {len(history)} epochs, loss {history[0]:.4f} -> {history[-1]:.4f} "
        f"({time.perf_counter() - start:.0f} s)")


def _representations_of(loader, model, keys, cache_dir, fingerprint, max_candidates, seed, with_et, log,
                        what: str, with_fb: bool = False) -> list[dict]:
    from cwm.model.probe_features import probe_subset, task_representations

    target = loader.store.manifest().get("target") or {"kind": "llvm"}
    start, tasks = time.perf_counter(), []
    for i, key in enumerate(keys):
        arrays = task_representations(loader, model, key, target, cache_dir, fingerprint, max_candidates, seed,
                                      with_et)
        if arrays is not None and with_fb:  # the same seeded subset as the cached arrays
            arrays = dict(arrays, fb=model.featurize(loader.workload(key), [
                t.trace for t in probe_subset(loader.trajectories(key), max_candidates, seed)]))
            if len(arrays["fb"].lengths) != len(arrays["lat"]):
                raise RuntimeError(f"{key}: the cached probe arrays and the dataset disagree; clear the cache")
        if arrays is not None:
            meta = loader.store.get_task(key)
            tasks.append({"key": key, **arrays, "weight": float(sum(meta.get("networks", {}).values()) or 1.0),
                          "networks": sorted(meta.get("networks", {}))})
        if (i + 1) % 10 == 0:
            log(f"{what} representations: {i + 1}/{len(keys)} tasks ({time.perf_counter() - start:.0f} s)")
    return tasks


def training_tasks(loader, model, fit_only_data, cache_dir, fingerprint, max_candidates, seed, with_et, log,
                   max_tasks=None, with_fb: bool = False) -> tuple[list[dict], list[dict]]:
    """``(validated, fit_only)``: the representations of ``loader``'s training tasks, and of the
    training tasks of the ``fit_only_data`` roots that are neither of those nor a held-out task
    (a task in several roots counts once: the first root that has finished collecting it)."""
    from cwm.dataset.loader import DatasetLoader

    common = (cache_dir, fingerprint, max_candidates, seed, with_et, log)
    tasks = _representations_of(loader, model, loader.task_keys("train")[:max_tasks], *common, what="validated",
                                with_fb=with_fb)
    known = {t["key"] for t in tasks} | set(loader.task_keys("test"))  # a held-out task never joins a fit
    fit_only = []
    for root in fit_only_data:
        extra = DatasetLoader(root)
        keys = [k for k in extra.task_keys("train") if k not in known and extra.store.is_finished(k)]
        fit_only += _representations_of(extra, model, keys, *common, what=f"fit-only ({root})", with_fb=with_fb)
        known |= set(keys)
    return tasks, fit_only


def run_probe(data, model_dir, folds: int = 5, seed: int = 0, cache_dir=None, max_tasks=None,
              max_candidates: int | None = 64, log=print, fit_only_data=(), names=REPRESENTATIONS,
              fold_seeds=None, ranker: str = "probe", group_by: str = "task", ranker_set=None,
              rank_cfg=None, ranker_seeds=None, centring: str = "none", reference_samples: int = 0) -> dict:
    """``ranker``: ``"probe"`` (100 trees, depth 6, one a round: a small, fixed ranker) or ``"model"`` (the
    model's own saved ranker config: what ``cwm train`` would fit). ``ranker_set``: fields of
    :class:`~cwm.model.ranker.RankerConfig` to override (``{"parallel_trees": 4}``). ``rank_cfg``:
    the :class:`~cwm.model.rank_transition.RankTransitionConfig` of ``zt_rank``. ``ranker_seeds``:
    the ranker is fitted once per seed on the same folds and the same candidates (``seed`` keeps
    choosing those), and the metrics are averaged: the latency-weighted top-1 of one fit moves
    by 0.3 with the ranker's seed alone (docs/decisions.md §61). ``centring``: :func:`centre`; with
    ``reference_samples`` > 0 the reference is the mean row of that many seeded design-space
    samples of the task (:func:`~cwm.model.probe_features.design_space_reference`, what a
    centring model uses; a task with none falls back to its candidates' mean)."""
    from cwm.dataset.loader import DatasetLoader
    from cwm.model.fingerprint import model_fingerprint
    from cwm.model.ranker import RankerConfig
    from cwm.model.world_model import WorldModel

    if centring not in CENTRINGS:
        raise ValueError(f"centring must be one of {CENTRINGS}, not {centring!r}")
    unknown = [n for n in names if n not in REPRESENTATIONS]
    if unknown:
        raise ValueError(f"unknown representation(s) {unknown}; choose from {list(REPRESENTATIONS)}")
    with_et = any(n.partition("+")[0] == "et" for n in names)
    with_fb = any(n.partition("+")[0] == "zt_rank" for n in names)
    loader, model = DatasetLoader(data), WorldModel.load(model_dir)
    cache_dir = Path(cache_dir or Path.home() / ".cache" / "cwm" / "probe")
    fingerprint = model_fingerprint(model_dir)
    start = time.perf_counter()
    tasks, fit_only = training_tasks(loader, model, fit_only_data, cache_dir, fingerprint, max_candidates, seed,
                                     with_et, log, max_tasks, with_fb)
    if reference_samples:
        from cwm.dataset.union import open_datasets
        from cwm.model.probe_features import design_space_reference

        everything = open_datasets([data, *fit_only_data])
        target = loader.store.manifest().get("target") or {"kind": "llvm"}
        for t in tasks + fit_only:
            t["ref"] = design_space_reference(everything, model, t["key"], target, cache_dir, fingerprint,
                                              reference_samples)
        log(f"design-space references: {sum(t['ref'] is not None for t in tasks + fit_only)} of "
            f"{len(tasks) + len(fit_only)} tasks")
    if group_by == "network":
        fold_seeds = [seed]  # leave-one-network-out has no seed: one run
    if group_by == "task" and len(tasks) < folds:
        raise ValueError(f"{len(tasks)} training tasks with measured records: fewer than --folds {folds}")
    if ranker == "model":
        ranker_cfg = dataclasses.replace(model.ranker.cfg, seed=seed)
    elif ranker == "probe":
        ranker_cfg = RankerConfig(n_estimators=100, max_depth=6, seed=seed, parallel_trees=1)
    else:
        raise ValueError(f"ranker must be 'probe' or 'model', not {ranker!r}")
    if ranker_set:
        from cwm.model.config_fields import with_fields

        ranker_cfg = with_fields(ranker_cfg, ranker_set, "ranker config")
    if with_fb and rank_cfg is None:
        from cwm.model.rank_transition import RankTransitionConfig

        rank_cfg = RankTransitionConfig()
    fold_seeds = list(fold_seeds) if fold_seeds else [seed]
    configs = [dataclasses.replace(ranker_cfg, seed=int(r)) for r in ranker_seeds] if ranker_seeds else [ranker_cfg]
    runs = [cross_validate(tasks, folds, s, cfg, log, names, fit_only, group_by, model.transition, rank_cfg, centring)
            for s in fold_seeds for cfg in configs]
    result = runs[0] if len(runs) == 1 else {"fold_names": runs[0]["fold_names"], **_mean_of_runs(runs)}
    return {"benchmark": "probe", "date": time.strftime("%Y-%m-%d"), "host": platform.processor() or platform.machine(),
            "cpu": cpu(), "model_dir": str(model_dir), "model_fingerprint": fingerprint, "split": "train",
            "group_by": group_by, "folds": folds if group_by == "task" else result["fold_names"], "seed": seed,
            "fold_seeds": fold_seeds, "ranker_seeds": [c.seed for c in configs],
            "max_candidates_per_task": max_candidates, "centring": centring,
            "centring_reference": f"{reference_samples} design-space samples" if reference_samples else "candidates",
            "tasks": len(tasks), "candidates": int(sum(len(t["lat"]) for t in tasks)),
            "fit_only_data": [str(r) for r in fit_only_data], "fit_only_tasks": len(fit_only),
            "fit_only_candidates": int(sum(len(t["lat"]) for t in fit_only)),
            "ranker": {"config": ranker, "n_estimators": ranker_cfg.n_estimators, "max_depth": ranker_cfg.max_depth,
                       "objective": ranker_cfg.objective, "pair_top_k": ranker_cfg.pair_top_k,
                       "parallel_trees": ranker_cfg.parallel_trees, "set": dict(ranker_set or {})},
            **({"rank_transition": rank_cfg.to_dict()} if with_fb else {}),
            "seconds": round(time.perf_counter() - start, 1), **result}


def _mean_of_runs(runs: list[dict]) -> dict:
    """Metrics averaged over CV runs with different fold seeds or ranker seeds (each run's metrics are
    pooled; ``per_fold_seed`` lists the runs, fold seed major, ranker seed minor)."""
    reps = {name: {m: float(np.mean([r["representations"][name][m] for r in runs]))
                   for m in runs[0]["representations"][name] if isinstance(runs[0]["representations"][name][m], (int, float))}
            for name in runs[0]["representations"]}
    dec = {k: float(np.mean([r["store_decoder_std_mse"][k] for r in runs])) for k in runs[0]["store_decoder_std_mse"]}
    return {"representations": reps, "store_decoder_std_mse": dec,
            "per_fold_seed": [{n: {"top1": v["top1"], "top1_task_mean": v["top1_task_mean"],
                                   "pairwise_acc": v["pairwise_acc"]}
                               for n, v in r["representations"].items()} for r in runs]}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", default="data/dataset", help="dataset directory (only its training split is used)")
    p.add_argument("--model-dir", default=None, help="world model (default: the shipped one)")
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cache-dir", default=None, help="per-task representation cache (default ~/.cache/cwm/probe)")
    p.add_argument("--max-tasks", type=int, default=None, help="only the first N training tasks (a quick look)")
    p.add_argument("--max-candidates", type=int, default=64,
                   help="seeded subset of each task's candidates (0: all; encoding E(s_T) is the slow part)")
    p.add_argument("--fit-only-data", action="append", default=[],
                   help="another dataset root whose training tasks join every fold's fitting set (repeatable)")
    p.add_argument("--representations", default=",".join(REPRESENTATIONS),
                   help="comma-separated subset of: " + ", ".join(REPRESENTATIONS))
    p.add_argument("--fold-seeds", default=None,
                   help="comma-separated fold seeds; metrics are averaged over them (default: --seed)")
    p.add_argument("--ranker-seeds", default=None,
                   help="comma-separated ranker seeds: one fit per seed on the same folds and candidates, metrics "
                        "averaged (default: --seed)")
    p.add_argument("--group-by", choices=GROUPINGS, default="task",
                   help="task: --folds seeded groups of tasks; network: leave one network out (mirrors the held-out "
                        "split: its networks gave no training task)")
    p.add_argument("--ranker", choices=("probe", "model"), default="probe",
                   help="probe: a small fixed ranker (100 trees); model: the model's own ranker config")
    p.add_argument("--ranker-set", action="append", default=[], metavar="FIELD=VALUE",
                   help="override a field of the ranker config, VALUE in JSON (repeatable; e.g. parallel_trees=4, "
                        "pair_top_k=16)")
    p.add_argument("--rank-set", action="append", default=[], metavar="FIELD=VALUE",
                   help="override a field of zt_rank's RankTransitionConfig, VALUE in JSON (repeatable; e.g. "
                        "anchor_weight=0, readout=\"linear\")")
    p.add_argument("--centring", choices=CENTRINGS, default="none",
                   help="the ranker's input as is, less a per-task reference, or both side by side")
    p.add_argument("--reference-samples", type=int, default=0,
                   help="centre on the mean row of this many seeded design-space samples of the task (what a "
                        "centring model does; 0: on the mean over the task's candidates)")
    p.add_argument("--out", default="bench/results/probe.json")


def main(argv) -> int:
    p = argparse.ArgumentParser(prog="python -m cwm probe", description=__doc__.splitlines()[0])
    add_arguments(p)
    args = p.parse_args(argv)
    if args.folds < 2:
        p.error("--folds must be at least 2")
    from cwm.model import default_model_dir

    names = tuple(n.strip() for n in args.representations.split(",") if n.strip())
    bad = [n for n in names if n not in REPRESENTATIONS]
    if bad:
        p.error(f"unknown representation(s) {bad}; choose from {', '.join(REPRESENTATIONS)}")
    fold_seeds = [int(x) for x in args.fold_seeds.split(",")] if args.fold_seeds else None
    ranker_seeds = [int(x) for x in args.ranker_seeds.split(",")] if args.ranker_seeds else None
    from cwm.model.config_fields import parse_assignments, with_fields

    try:
        ranker_set = parse_assignments(args.ranker_set)
    except ValueError as error:
        p.error(f"--ranker-set {error}")
    rank_cfg = None
    if args.rank_set:
        from cwm.model.rank_transition import RankTransitionConfig

        try:
            rank_cfg = with_fields(RankTransitionConfig(), parse_assignments(args.rank_set), "rank transition config")
        except ValueError as error:
            p.error(f"--rank-set {error}")
    result = run_probe(args.data, args.model_dir or default_model_dir(), args.folds, args.seed, args.cache_dir,
                       args.max_tasks, args.max_candidates or None, fit_only_data=args.fit_only_data, names=names,
                       fold_seeds=fold_seeds, ranker=args.ranker, group_by=args.group_by, ranker_set=ranker_set,
                       rank_cfg=rank_cfg, ranker_seeds=ranker_seeds, centring=args.centring,
                       reference_samples=args.reference_samples)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"{'representation':<18} {'top1':>6} {'top1/task':>9} {'pairwise':>9}")
    for name, m in result["representations"].items():
        print(f"{name:<18} {m['top1']:6.3f} {m['top1_task_mean']:9.3f} {m['pairwise_acc']:9.3f}")
    print(f"store decoder std-MSE: {result['store_decoder_std_mse']}; wrote {args.out}")
    return 0
