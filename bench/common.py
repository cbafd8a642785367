"""Helpers shared by the benchmarks: machine description, date, result files."""
from __future__ import annotations

import datetime
import json
import os
import platform

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def today() -> str:
    return datetime.date.today().isoformat()


def write_result(name: str, payload: dict) -> str:
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, name)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(payload, f, indent=2, sort_keys=False)
        f.write("\n")
    os.replace(tmp, path)
    return path
