"""Where the ranker's wrong picks come from, out of fold on the training tasks (issue #12;
docs/decisions.md §66): leave one network out over the zoo's training tasks (the breadth tasks
fitted on), the shipped ranker recipe (``bench/vector_alignment.py``'s rows, no vector fill).
On every validated task whose top pick is not its fastest record, XGBoost's per-feature
contributions (``pred_contribs``) split the margin by which the ranker prefers its pick into the
rollout columns (``ẑ_T − z_0`` and its centred copy) and the trace columns.

    PYTHONPATH=python .venv/bin/python bench/ranker_contributions.py [--out bench/results/ranker_contributions.json]
"""
from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))


def main(argv=None) -> int:
    from vector_alignment import fit, rows, training_arguments, training_setup

    args = training_arguments(argv, __doc__, "ranker_contributions.json")
    import xgboost as xgb
    from checkpoint import write_json
    from common import machine

    from cwm.model.probe import folds_of
    from cwm.model.world_model import feature_names

    start = time.perf_counter()
    setup = training_setup(args.data, args.fit_only_data)
    model, fingerprint, tasks, fit_only = setup["model"], setup["fingerprint"], setup["tasks"], setup["fit_only"]
    names = feature_names(model.tcfg.dim, model.structure, bool(model.centring), model.columns)
    rollout = np.array([n.startswith(("dz", "c_dz")) for n in names])
    wrong, magnitude = [], []
    for fold, val_keys in folds_of(tasks, "network", 5, 0):
        ranker = fit([t for t in tasks if t["key"] not in set(val_keys)] + fit_only,
                     dataclasses.replace(model.ranker.cfg, seed=0))
        for t in tasks:
            if t["key"] not in set(val_keys):
                continue
            contrib = ranker.booster.predict(xgb.DMatrix(rows(t)), pred_contribs=True)[:, :-1]
            magnitude.append(np.abs(contrib).sum(0))
            lat = np.where(np.isfinite(t["lat"]) & (t["lat"] > 0), t["lat"], np.inf)
            pick, fastest = int(np.argmax(contrib.sum(1))), int(np.argmin(lat))
            if pick == fastest:
                continue
            gap = contrib[pick] - contrib[fastest]
            wrong.append({"fold": fold, "task": t["key"], "best_over_pick": float(lat[fastest] / lat[pick]),
                          "margin_gap": float(gap.sum()), "from_rollout": float(gap[rollout].sum()),
                          "largest": names[int(np.argmax(np.abs(gap)))]})
    mean_magnitude = np.mean(magnitude, 0)
    gaps = np.array([[w["margin_gap"], w["from_rollout"]] for w in wrong])
    write_json(args.out, {
        "benchmark": "ranker_contributions", "date": time.strftime("%Y-%m-%d"), "machine": machine(),
        "model_fingerprint": fingerprint, "split": "train", "protocol": "leave one network out, breadth fitted on",
        "validated_task_rows": len(magnitude), "wrong_picks": len(wrong),
        "mean_margin_gap": float(gaps[:, 0].mean()), "mean_from_rollout": float(gaps[:, 1].mean()),
        "rollout_share_of_gap": float(gaps[:, 1].sum() / gaps[:, 0].sum()),
        "rollout_share_of_all_contributions": float(mean_magnitude[rollout].sum() / mean_magnitude.sum()),
        "worst_picks": sorted(wrong, key=lambda w: w["best_over_pick"])[:10],
        "seconds": round(time.perf_counter() - start, 1)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
