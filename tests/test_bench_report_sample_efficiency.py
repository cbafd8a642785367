"""bench/report.py pools decision 109's sample-efficiency seeds into one table."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))


def _seed(seed: int, conv: tuple[float, int | None], matmul: tuple[float, int | None]) -> dict:
    def entry(cwm_best, reach):
        return {"xgb_640_best_us": 100.0, "cwm_best_us": cwm_best, "cwm_trials_to_reach": reach,
                "xgb_trials": 640, "cwm_max_trials": 128, "seed": seed}
    return {"machine": "a host", "date": "2026-12-07", "curves_png": f"curves_s{seed}.png",
            "sample_efficiency": {"conv/k1": entry(*conv), "matmul/k2": entry(*matmul)}}


def test_seeds_are_columns_with_reach_counts_and_geomeans():
    from report import SAMPLE_EFFICIENCY_SEEDS, sample_efficiency_seeds_table

    runs = {SAMPLE_EFFICIENCY_SEEDS[0]: _seed(0, (80.0, 34), (125.0, None)),
            SAMPLE_EFFICIENCY_SEEDS[1]: _seed(1, (125.0, None), (125.0, None))}
    lines = sample_efficiency_seeds_table(None, load=runs.get)
    text = "\n".join(lines)
    assert "seeds 0, 1" in lines[0] and "128 trials" in lines[0] and "640" in lines[0]
    # geomean of 0.8 and 1.25 is exactly 1; a reached cell is bold and names its trial
    assert "| conv | **0.80** (trial 34) | 1.25 | 1 of 2 | 1.000 |" in text
    assert "| matmul | 1.25 | 1.25 | 0 of 2 | 1.250 |" in text
    assert "| **tasks reached** | 1 of 2 | 0 of 2 | | |" in text
    assert "[seed 1](curves_s1.png)" in text


def test_no_runs_render_nothing():
    from report import sample_efficiency_seeds_table

    assert sample_efficiency_seeds_table(None, load=lambda name: None) == []
