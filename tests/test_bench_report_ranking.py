"""bench/report.py's ranking table says when its µs column was timed beside another job."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

_ROW = {"top1": 0.8, "top1_task_mean": 0.6, "top5": 0.9, "pairwise_acc": 0.75, "ndcg10": 0.4,
        "score_us_per_candidate": 1234.5}


def _run(**extra) -> dict:
    return {"models": {"cwm": _ROW, "random": {**_ROW, "top1": 0.25}}, "test_tasks": 38, "train_tasks": 320,
            "machine": "a host", "date": "2026-12-05", "model": "/elsewhere", **extra}


def test_a_quiet_run_has_no_caveat_and_every_row():
    from report import ranking_table

    lines = ranking_table(_run())
    assert "timed beside another job" not in lines[0]
    rows = [line for line in lines if line.startswith("| CWM") or line.startswith("| random")]
    assert len(rows) == 2 and "| 0.800 | 0.600 | 0.900 | 0.750 | 0.400 | 1,234.5 |" in rows[0]


def test_a_run_timed_under_load_says_so_in_the_heading():
    from report import ranking_table

    lines = ranking_table(_run(timed_under_load="bench/breadth_candidates.py"))
    assert "**the µs column was timed beside another job** (bench/breadth_candidates.py)" in lines[0]
