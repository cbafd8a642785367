"""Do the rollout columns transfer better to unseen networks when the ranker leans on them less?
Measured on the training tasks only (issue #12; docs/decisions.md §67): leave one network out over
the zoo's training tasks, the breadth tasks fitted on in every fold, ranker seeds 0, 1, 2, the
shipped ranker recipe (``bench/vector_alignment.py``'s rows), one variant at a time:

* ``shipped``: every column;
* ``rollout_centred_only``: ``ẑ_T − z_0`` only less its design-space reference (the ``c_dz``
  columns), so no rollout column can tell the workload apart;
* ``node_half``: XGBoost draws half of the tree's columns at every split (``colsample_bynode``);
* ``rollout_quarter_weight``: the same, with the rollout columns drawn at a quarter of the weight
  of the trace columns (``feature_weights``);
* ``rollout_pca16``: both rollout blocks projected on the 16 leading principal directions of the
  fold's fitting rows' ``ẑ_T − z_0`` (a coarser latent);
* ``no_rollout``: the trace columns alone. Not the method (nothing is rolled out); it says how
  much the rollout gives out of network.

The variants with the best pairwise accuracy are also replayed as a search (``--replay``,
``bench/adapt_sim.py``'s replay as in ``bench/vector_alignment.py``: 4 candidates a round, 6
rounds, default ``AdaptConfig``). A rerun keeps what the result file already holds for the same
model (it is written after every variant), so an interrupted run resumes.

    PYTHONPATH=python .venv/bin/python bench/rollout_regularization.py [--variants=a,b] [--replay=a,b] [--out ...]
"""
from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

PCA_DIMS = 16


def variants(names: list[str], cfg) -> dict:
    """Each variant: ``(ranker config, fold -> (row transform, feature weights))``."""
    raw = np.array([n.startswith("dz") for n in names])
    centred = np.array([n.startswith("c_dz") for n in names])
    trace = ~(raw | centred)
    node_half = dataclasses.replace(cfg, extra={**cfg.extra, "colsample_bynode": 0.5})

    def keep(mask):
        return lambda _fitting: ((lambda x: x[:, mask]), None)

    def pca(fitting):
        from vector_alignment import rows

        x = np.concatenate([rows(t)[:, raw] for t in fitting]).astype(np.float64)
        mean = x.mean(0)
        basis = np.linalg.svd(x - mean, full_matrices=False)[2][:PCA_DIMS].T
        # the centred block is the raw one less a reference, so it takes the same linear map
        return (lambda r: np.concatenate([(r[:, raw] - mean) @ basis, r[:, centred] @ basis, r[:, trace]], 1)
                .astype(np.float32)), None

    return {
        "shipped": (cfg, None),
        "rollout_centred_only": (cfg, keep(~raw)),
        "node_half": (node_half, None),
        "rollout_quarter_weight": (node_half, lambda _fitting: (None, np.where(raw | centred, 0.25, 1.0))),
        "rollout_pca16": (cfg, pca),
        "no_rollout": (cfg, keep(trace)),
    }


REPLAYED = ("shipped", "rollout_quarter_weight", "rollout_pca16")


def main(argv=None) -> int:
    import json

    from vector_alignment import network_cv, search_replay, seed_line, stopwatch_log, training_arguments, training_setup

    args = training_arguments(argv, __doc__, "probe_rollout_regularization.json", ("variants", "replay"))
    from adapt_sim import paired_difference
    from checkpoint import write_json
    from common import machine

    from cwm.model.world_model import feature_names

    start = time.perf_counter()
    log = stopwatch_log(start)
    setup = training_setup(args.data, args.fit_only_data)
    model, tasks, fit_only = setup["model"], setup["tasks"], setup["fit_only"]
    names = feature_names(model.tcfg.dim, model.structure, bool(model.centring), model.columns)
    table = variants(names, model.ranker.cfg)
    log(f"{len(tasks)} zoo and {len(fit_only)} breadth training tasks, {len(names)} columns")
    done = json.loads(Path(args.out).read_text()) if Path(args.out).exists() else {}
    if done.get("model_fingerprint") != setup["fingerprint"]:
        done = {}
    results, curves = done.get("network", {}), done.get("replay_curves", {})

    def save():
        replay = {}
        if "shipped" in curves:
            base = np.asarray(curves["shipped"])
            replay = {name: {"mean_best_ratio": [float(x) for x in np.mean(c, 0)],
                             "minus_shipped_mean_ci95": paired_difference(np.asarray(c), base)}
                      for name, c in curves.items()}
        write_json(args.out, {
            "benchmark": "probe_rollout_regularization", "date": time.strftime("%Y-%m-%d"), "machine": machine(),
            "model_fingerprint": setup["fingerprint"], "split": "train",
            "protocol": "leave one network out, breadth fitted on", "tasks": len(tasks),
            "fit_only_tasks": len(fit_only), "max_candidates_per_task": 64, "pca_dims": PCA_DIMS, "network": results,
            "replay": {"per_round": 4, "rounds": 6, "adapt": "AdaptConfig()", **replay}, "replay_curves": curves,
            "seconds": round(done.get("seconds", 0) + time.perf_counter() - start, 1)})

    for name in [n for n in args.variants or table if n not in results]:
        cfg, variant = table[name]
        results[name] = network_cv(tasks, fit_only, cfg, variant)
        log(f"{name}: {seed_line(results[name])}")
        save()
    for name in [n for n in args.replay or REPLAYED if n not in curves]:
        cfg, variant = table[name]
        curves[name] = search_replay(tasks, fit_only, cfg, variant).tolist()
        log(f"{name} replayed: " + " ".join(f"{x:.3f}" for x in np.mean(curves[name], 0)))
        save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
