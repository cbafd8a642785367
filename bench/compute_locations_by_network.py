"""Which picks the compute-at locations move, network by network (issue #12; docs/decisions.md
§67): leave one network out over the zoo's training tasks, the breadth tasks fitted on, the
shipped ranker recipe with ranker seed 0, without and then with ``cwm.model.compute_locations``;
per network the metrics and, per validated task, its best latency ÷ its pick's.

    PYTHONPATH=python .venv/bin/python bench/compute_locations_by_network.py
        -> bench/results/compute_locations_by_network.json
"""
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))


def main() -> int:
    from vector_alignment import fit, rows, training_setup, with_columns

    from cwm.model.compute_locations import compute_locations
    from cwm.model.metrics import summarize
    from cwm.model.probe import folds_of

    s = training_setup(str(ROOT / "data" / "dataset"), str(ROOT / "data" / "dataset_breadth"), with_fb=True)
    tasks, fit_only, cfg = s["tasks"], s["fit_only"], s["model"].ranker.cfg
    out = {}
    for variant in ("without", "with"):
        if variant == "with":
            with_columns(tasks + fit_only, s["model"], s["everything"], s["target"], compute_locations)
        for net, val in folds_of(tasks, "network", 5, 0):
            r = fit([t for t in tasks if t["key"] not in set(val)] + fit_only, cfg)
            validated = [t for t in tasks if t["key"] in set(val)]
            scores = {t["key"]: r.predict(rows(t)) for t in validated}
            picks = {t["key"]: float(np.nanmin(np.where(t["lat"] > 0, t["lat"], np.inf)) /
                                     t["lat"][int(np.argmax(scores[t["key"]]))]) for t in validated}
            summary = summarize([(t["lat"], scores[t["key"]], t["weight"]) for t in validated])
            out.setdefault(variant, {})[net] = {**summary, "best_over_pick": picks}
            print(variant, net, {k: round(float(v), 4) for k, v in summary.items()}, flush=True)
    (ROOT / "bench" / "results" / "compute_locations_by_network.json").write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
