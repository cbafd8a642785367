"""Helpers shared by the benchmarks: machine description, date, result files, log lines and
the small numbers the long benchmarks (bench/e2e.py, bench/search.py) record. Standard library
only (tests import the benchmarks)."""
from __future__ import annotations

import json
import math
import os
import time

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def machine() -> str:
    from cwm.machine import describe

    return describe()


def today() -> str:
    from cwm.machine import today as _today

    return _today()


def write_result(name: str, payload: dict) -> str:
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, name)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(payload, f, indent=2, sort_keys=False)
        f.write("\n")
    os.replace(tmp, path)
    return path


def log(*parts) -> None:
    """A progress line, prefixed with the wall-clock time."""
    print(time.strftime("%H:%M:%S"), *parts, flush=True)


def now() -> str:
    """The local time as a checkpoint line records it (``2026-12-01T13:46:00``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S")


def loadavg(load=None) -> list:
    """The 1/5/15-minute load averages (``os.getloadavg()`` unless given), rounded to 2 places."""
    return [round(x, 2) for x in (os.getloadavg() if load is None else load)]


def fmt_s(s: float) -> str:
    """``1h05m`` / ``3m07s``: a duration for an ETA."""
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def geomean(values) -> float | None:
    """Geometric mean of the positive finite ``values``; None if there are none."""
    xs = [float(v) for v in values if v is not None and math.isfinite(v) and v > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def require_family_absent(model_columns, family: str, bench: str) -> None:
    """Stop ``bench``, which appends the ``family`` columns to the model's rows to measure them,
    when the model's rows already hold that family: the variant would carry the columns twice and
    compare the model with itself plus a copy."""
    if family in tuple(model_columns):
        raise SystemExit(f"{bench}: the model already takes the {family} columns (its manifest flag), so its rows "
                         f"hold them; this bench measures them against a model without them. Point it at such a "
                         f"model, or read the decision that recorded its result.")
