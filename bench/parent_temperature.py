"""How sharply CWM's scores pick mutation parents, measured in search on training tasks only
(issue #12, search; no held-out task is used).

``CWMCostModel.predict`` returns ``exp(margin / temperature)``, and MetaSchedule's evolutionary
search samples mutation parents in proportion to the scores. The ranker's margins spread about
0.9 within a task, so at temperature 1 a few candidates are the parents of most mutants. This
benchmark tunes the same training tasks at several temperatures (``--temperatures``) with
everything else as CWM's default search (the ``seeded`` profile: 8 transferred schedules as the
last round, the task and its networks kept out of the seed library).

The prior must not have seen the task: for every network of the chosen tasks the shipped
model's ranker is refitted (its own config, :func:`cwm.model.train.fit_ranker`'s rows) on the
training tasks of every other network and of the breadth roots, leaving out every task of that
network (the probe's ``--group-by network`` folds). The refitted prior has no sequence head (its
blend belongs to the shipped ranker); the fold rankers are saved under ``--work-root`` and read
back on resume.

Reported per temperature: over (task, seed) pairs, the geometric mean of ``best / best at the
first temperature`` at 64 trials and at 32, its 90 % interval when whole tasks are resampled, and
the wins and losses beyond 2 %. Bests are the
tuning-time measurements (each run's own), as in ``bench/seed_transfer.py --mode search``.

    PYTHONPATH=python .venv/bin/python bench/parent_temperature.py [--temperatures 1,2,4]
        [--seeds 0,1] [--tasks 12]

Resumes from ``bench/results/parent_temperature_runs.jsonl``; writes
``bench/results/parent_temperature.json``.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from common import RESULTS  # noqa: E402
from search_knobs import (arm_arguments, knob_search, network_of, paired, run_and_write,  # noqa: E402,F401
                          task_bootstrap)

CHECKPOINT = os.path.join(RESULTS, "parent_temperature_runs.jsonl")


def temperature_search(temperature: float):
    """A temperature's ``(FastSettings, AdaptConfig)``: the search-knobs arm ``temperature=T``."""
    return knob_search(f"temperature={temperature!r}")


def summary(rows: list[dict], temperatures) -> dict:
    entries = paired(rows, temperatures, field="temperature")
    return {"runs": len(rows), "baseline_temperature": temperatures[0],
            "temperatures": {f"{t:g}": entries[t] for t in temperatures}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    arm_arguments(parser, "--temperatures", "1,2,4", "0,1", "parent_temperature", os.path.basename(CHECKPOINT))
    args = parser.parse_args(argv)
    temperatures = [float(t) for t in args.temperatures.split(",")]
    return run_and_write(args, temperatures, temperature_search, "temperature", summary,
                         "parent_temperature.json")


if __name__ == "__main__":
    raise SystemExit(main())
