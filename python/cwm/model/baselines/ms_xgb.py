"""Baseline (b): MetaSchedule's own ``XGBModel`` on its per-store features.

The model is TVM's ``tvm.s_tir.meta_schedule.cost_model.XGBModel`` with its default
feature extractor (``PerStoreFeature``). It is trained on the same training records as
the world model, and nothing is measured: latencies come from the dataset.

For each candidate, the scheduled program is rebuilt by replaying its recorded trace on
the unscheduled workload (:func:`cwm.replay.apply_trace`). It is then wrapped as a
``MeasureCandidate`` exactly as the search strategy would (TVM_NOTES §2). Each task gets
its own ``TuneContext``, because ``XGBModel`` keeps one feature group per workload
(keyed by ``shash2hex(context.mod)``). The training label of a candidate is
``group.min_cost / cost``, so latencies are normalized within their workload.

Training follows what MetaSchedule's ``UpdateCostModel`` callback would do:

* candidates whose build failed are left out (the callback filters them out);
* runner failures are passed with ``error_msg`` set and ``run_secs=None`` (cost 1e10,
  so their label is about 0).

Changes from the ``XGBModel`` defaults, and why:

* ``num_warmup_samples=0`` (default 100). During tuning, the warm-up returns uniform random
  scores until 100 samples have been seen. This model is pre-trained offline on the whole
  training split, so warm-up would only make the scores random.
* ``XGBConfig(seed=seed, nthread=num_threads)``. The defaults are ``seed=43`` and one
  thread per physical core. The seed makes runs reproducible under the evaluation's seed.
  The thread count keeps CPU use bounded. The other ``XGBConfig`` fields keep their
  defaults (max_depth 10, eta 0.2, gamma 0.001, min_child_weight 0, tree_method auto).
* Training happens once, on all training tasks. ``update()`` always retrains from scratch
  on all accumulated groups. With ``adaptive_training`` (left on) it skips the retrain
  while the data has grown by less than 1/5 since the last training. A retrain after
  every task would therefore only repeat work, and adaptive training could leave the
  last tasks out of the final booster. So every ``update`` except the last runs with
  ``last_train_size`` set so high that training is skipped. The last one runs with
  ``last_train_size=0``, which forces one retrain on the data of every training task.
  The booster is the same as with ``adaptive_training=False``, at a fraction of the cost.
  Early stopping (50 rounds on the training p-rmse, at most 10000 rounds) is unchanged.

``XGBModel.predict`` returns the pack-sum of per-store predictions of ``min_cost / cost``.
This is a normalized score, where higher means predicted faster, which is also what
:meth:`MsXgbBaseline.score` returns. A candidate whose trace cannot be replayed cannot be
featurized; it gets a score below every other candidate of its task (counted in
``stats["replay_failures"]``).
"""
from __future__ import annotations

import json
import time

import numpy as np

_NO_TRAIN = 1 << 62  # a last_train_size that makes adaptive training skip the retrain


class MsXgbBaseline:
    """MetaSchedule ``XGBModel`` baseline: ``fit(train_tasks, workload_of)``, then ``score(task, workload_of)``."""

    def __init__(self, target, seed: int = 0, num_threads: int = 2):
        self.target_spec = target
        self.seed = int(seed)
        self.num_threads = int(num_threads)
        self.model = None
        self._target = None
        self.stats = {"train_tasks": 0, "train_candidates": 0, "train_failed_runs": 0,
                      "skipped_build_errors": 0, "replay_failures": 0, "fit_s": 0.0,
                      # score(): candidates scored, seconds replaying traces and in XGBModel.predict
                      # (per-store feature extraction + booster), the part a tuning run pays
                      "scored_candidates": 0, "score_replay_s": 0.0, "score_predict_s": 0.0}

    # ------------------------------------------------------------------ helpers
    @property
    def target(self):
        if self._target is None:
            import tvm

            spec = self.target_spec
            if isinstance(spec, str) and spec.lstrip().startswith("{"):
                spec = json.loads(spec)
            self._target = spec if isinstance(spec, tvm.target.Target) else tvm.target.Target(spec)
        return self._target

    def _context(self, key: str, workload):
        from tvm.s_tir import meta_schedule as ms

        return ms.TuneContext(mod=workload, target=self.target, task_name=str(key),
                              num_threads=self.num_threads, rand_state=self.seed)

    def _candidate(self, workload, trace):
        """The ``MeasureCandidate`` of a recorded trace, or ``None`` if the replay fails."""
        from tvm.s_tir import meta_schedule as ms

        from cwm.replay import apply_trace

        try:
            sch = apply_trace(workload, trace)
        except Exception:  # noqa: BLE001 - a broken record must not stop the evaluation
            self.stats["replay_failures"] += 1
            return None
        return ms.MeasureCandidate(sch, ms.arg_info.ArgInfo.from_entry_func(sch.mod, remove_preproc=True))

    def _training_batch(self, task, workload_of):
        """``(context, candidates, runner_results)`` of one task, as ``UpdateCostModel`` passes them."""
        from tvm.s_tir import meta_schedule as ms

        workload = workload_of(task["key"])
        cands, results = [], []
        for traj in task["trajs"]:
            rec = traj.record
            if rec.get("build_error"):
                self.stats["skipped_build_errors"] += 1
                continue
            cand = self._candidate(workload, traj.trace)
            if cand is None:
                continue
            secs = traj.latencies
            if secs:
                res = ms.runner.RunnerResult(run_secs=[float(s) for s in secs], error_msg=None)
            else:
                res = ms.runner.RunnerResult(run_secs=None, error_msg=str(rec.get("run_error") or "no run_secs"))
                self.stats["train_failed_runs"] += 1
            cands.append(cand)
            results.append(res)
        return self._context(task["key"], workload), cands, results

    # ---------------------------------------------------------------------- API
    def fit(self, train_tasks, workload_of) -> "MsXgbBaseline":
        from tvm.s_tir import meta_schedule as ms
        from tvm.s_tir.meta_schedule.cost_model.xgb_model import XGBConfig

        start = time.perf_counter()
        model = ms.cost_model.XGBModel(
            config=XGBConfig(seed=self.seed, nthread=self.num_threads),
            num_warmup_samples=0,
        )
        pending = None  # update() of the previous batch, held back so the last one can train

        def flush(batch, train: bool):
            model.last_train_size = 0 if train else _NO_TRAIN
            model.update(*batch)

        for task in train_tasks:
            batch = self._training_batch(task, workload_of)
            if not batch[1]:
                continue
            if pending is not None:
                flush(pending, train=False)
            pending = batch
            self.stats["train_tasks"] += 1
            self.stats["train_candidates"] += len(batch[1])
        if pending is None:
            raise ValueError("no trainable candidate in the training tasks")
        flush(pending, train=True)
        if model.booster is None:
            raise RuntimeError("XGBModel did not train (no candidate had per-store features)")
        self.model = model
        self.stats["fit_s"] = time.perf_counter() - start
        self.stats["train_groups"] = len(model.data)
        self.stats["train_samples"] = int(model.data_size)
        return self

    def score(self, task, workload_of) -> np.ndarray:
        """One score per candidate of ``task`` (higher = predicted faster)."""
        if self.model is None:
            raise RuntimeError("fit() first")
        workload = workload_of(task["key"])
        t0 = time.perf_counter()
        cands = [self._candidate(workload, t.trace) for t in task["trajs"]]
        t1 = time.perf_counter()
        ok = [i for i, c in enumerate(cands) if c is not None]
        out = np.zeros(len(cands), np.float64)
        self.stats["scored_candidates"] += len(cands)
        self.stats["score_replay_s"] += t1 - t0
        if ok:
            pred = np.asarray(self.model.predict(self._context(task["key"], workload), [cands[i] for i in ok]),
                              np.float64)
            self.stats["score_predict_s"] += time.perf_counter() - t1
            out[ok] = pred
            if len(ok) < len(cands):
                bad = np.setdiff1d(np.arange(len(cands)), ok)
                out[bad] = pred.min() - 1.0
        return out
