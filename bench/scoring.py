"""Scoring throughput: native end-to-end vs the Python reference vs MetaSchedule's XGBModel.predict.

All three score the same candidates (recorded real conv2d traces, tiled to the batch size)
in one run, on one thread each:

* ``native``: ``WorldModel.score``: C++ featurisation + C++ TransH rollout (cached ``z_0``) +
  the XGBoost ranker through XGBoost's own library - what the tuner calls;
* ``reference``: the pure-Python featuriser + NumPy rollout + the same ranker;
* ``ms_xgb``: ``XGBModel.predict`` (per-store feature extraction + XGBoost) on candidates that
  already exist as schedules (as in tuning: replay time not counted), trained on the fixture.

``rollout_per_s`` isolates the transition: native core vs NumPy reference. ``--model`` is a
trained model directory (``cwm train``; default: the shipped model).

The methods are timed in interleaved windows (:data:`ROUNDS` rounds, each method once a round
in a rotating order) and each rate is the median over the rounds; each ratio is the median of
the rounds' ratios, so a burst of load on this shared machine moves one round, not a method.
``native_stage_us`` splits the native path at each batch size into its stages (µs a candidate).

    python bench/scoring.py [--model DIR]   ->  bench/results/scoring.json
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import time

# "One thread each": the reference's NumPy matrix products must not fan out over OpenBLAS's
# thread pool while the native core runs on one thread (set before NumPy is imported).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import machine, today, write_result  # noqa: E402

DATA = os.path.join(HERE, "..", "tests", "data", "traces.jsonl.gz")
BATCHES = (1, 64, 2048)
WORKLOAD = "conv2d_64x56x56_3x3"


ROUNDS = 5
WINDOW_S = 0.3


def rate(fn, batch: int, min_s: float = WINDOW_S) -> float:
    """Calls ``fn(batch)`` once, then again until ``min_s`` has passed -> items a second."""
    done, start = 0, time.perf_counter()
    while True:
        fn(batch)
        done += batch
        if time.perf_counter() - start >= min_s:
            return done / (time.perf_counter() - start)


def interleaved(fns: dict, batch: int, rounds: int = ROUNDS, window_s: float = WINDOW_S) -> dict[str, list[float]]:
    """Each function's rate in ``rounds`` interleaved windows of ``window_s``, the order rotating
    each round."""
    names = list(fns)
    for name in names:
        fns[name](batch)  # warm-up (caches, lazy imports)
    rates = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            rates[name].append(rate(fns[name], batch, window_s))
    return rates


def stage_us(wm, mod, pool, target, z0, batch: int) -> dict[str, float]:
    """µs a candidate of each stage of ``WorldModel.score`` at ``batch`` (the median of
    :data:`ROUNDS` windows each); ``tile_footprint`` is part of ``columns``."""
    from cwm import native
    from cwm.model.action_stats import hardware_features

    traces = pool[:batch]
    fb = wm.featurize(mod, traces)
    reference = wm.reference(mod, target) if wm.centring else None
    z_t = wm.rollout(z0, fb)
    rows = wm.features(z_t, fb, target, z0, reference)
    cores = int(hardware_features(target)[0])  # as WorldModel.raw_features
    stages = {"featurize": lambda _: wm.featurize(mod, traces), "rollout": lambda _: wm.rollout(z0, fb),
              "columns": lambda _: wm.features(z_t, fb, target, z0, reference),
              "ranker": lambda _: wm.ranker.predict(rows)}
    if "tile_footprint" in wm.columns:
        stages["tile_footprint"] = lambda _: native.tile_footprint(fb, cores)
    if wm.sequence_head is not None:
        stages["sequence_head"] = lambda _: wm.sequence_head.scores(fb)
    stages["score"] = lambda _: wm.score(mod, traces, target)
    rates = interleaved(stages, batch)
    return {name: round(1e6 / float(np.median(r)), 1) for name, r in rates.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="model directory (default: the shipped model)")
    ap.add_argument("--out", default="scoring.json")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    from cwm import workloads
    from cwm.actions import featurize_batch
    from cwm.dataset.loader import Trajectory
    from cwm.model.baselines.ms_xgb import MsXgbBaseline
    from cwm.model.transition import numpy_weights, rollout_numpy
    from cwm.model.world_model import WorldModel
    from cwm.target_spec import host_target

    recs = [json.loads(line) for line in gzip.open(DATA, "rt")]
    recs = [r for r in recs if r["workload"] == WORKLOAD and r["source"] == "tuning"]
    mod, target = workloads.get(WORKLOAD), json.loads(str(host_target()))
    pool = [recs[i % len(recs)]["trace"] for i in range(max(BATCHES))]
    from cwm.model import default_model_dir

    wm = WorldModel.load(args.model or default_model_dir())
    z0 = wm.z0(mod)
    weights = numpy_weights(wm.transition)

    def native(b):
        wm.score(mod, pool[:b], target)

    def reference(b):
        fb = wm.with_facts(featurize_batch(pool[:b]), mod)
        z = rollout_numpy(np.repeat(z0[None], b, 0), fb.ints, fb.numbers, weights, wm.tcfg)
        wm.ranker.predict(wm.features(z.astype(np.float32), fb, target, z0,
                                      wm.reference(mod, target) if wm.centring else None))

    task = {"key": WORKLOAD, "trajs": [Trajectory(WORKLOAD, r, mod) for r in recs], "fb": featurize_batch(
        [r["trace"] for r in recs]), "weight": 1.0,
        "lat": np.array([np.median(r["run_secs"]) if r["run_secs"] else np.inf for r in recs])}
    ms = MsXgbBaseline(target, seed=0, num_threads=1).fit([task], lambda _: mod)
    ctx = ms._context(WORKLOAD, mod)
    cands = [ms._candidate(mod, t) for t in pool[:len(recs)]]
    cand_pool = [cands[i % len(cands)] for i in range(max(BATCHES))]

    def ms_xgb(b):
        ms.model.predict(ctx, cand_pool[:b])

    fb_all = featurize_batch(pool)
    z_all = np.ascontiguousarray(np.repeat(z0[None], len(pool), 0))

    def rollout_native(b):
        wm.rollout(z0, type(fb_all)(fb_all.ints[:b], fb_all.numbers[:b], fb_all.lengths[:b], fb_all.unknown[:b]))

    def rollout_ref(b):
        rollout_numpy(z_all[:b], fb_all.ints[:b], fb_all.numbers[:b], weights, wm.tcfg)

    out = {"candidates_per_s": {}, "rollout_per_s": {}}
    if wm.centring:  # once per task, before its first score: TVM draws the design-space samples (decision 62)
        start = time.perf_counter()
        wm.reference(mod, target)
        out["reference_once_s"] = round(time.perf_counter() - start, 3)
        print("reference row, once per task:", out["reference_once_s"], "s", flush=True)
    out["ratios"] = {"native_vs_ms_xgb": {}, "rollout_native_vs_reference": {}}
    out["native_stage_us"] = {}
    for b in BATCHES:
        for kind, fns, (num, den) in (
                ("candidates_per_s", {"native": native, "reference": reference, "ms_xgb": ms_xgb},
                 ("native", "ms_xgb")),
                ("rollout_per_s", {"native": rollout_native, "reference": rollout_ref}, ("native", "reference"))):
            rates = interleaved(fns, b)
            for name, r in rates.items():
                out[kind].setdefault(name, {})[str(b)] = round(float(np.median(r)), 1)
            ratio = "native_vs_ms_xgb" if kind == "candidates_per_s" else "rollout_native_vs_reference"
            out["ratios"][ratio][str(b)] = round(float(np.median(np.divide(rates[num], rates[den]))), 1)
            print(b, kind, {name: round(float(np.median(r)), 1) for name, r in rates.items()}, flush=True)
        out["native_stage_us"][str(b)] = stage_us(wm, mod, pool, target, z0, b)
        print(b, "µs a candidate by stage", out["native_stage_us"][str(b)], flush=True)
    out["rounds"], out["window_s"] = ROUNDS, WINDOW_S
    out.update(model=str(args.model or "shipped default (python/cwm/default_model)"), workload=WORKLOAD,
               machine=machine(), date=today())
    print(json.dumps(out["ratios"]))
    print("wrote", write_result(args.out, out))


if __name__ == "__main__":
    main()
