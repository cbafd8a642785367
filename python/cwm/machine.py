"""One description of the machine for every result file (benchmarks, ``cwm eval``)."""
from __future__ import annotations

import datetime
import os
import platform


def describe() -> str:
    """``"<CPU model>, <n> cores, Python <x.y.z>"`` (CPU model from /proc/cpuinfo when available)."""
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def today() -> str:
    return datetime.date.today().isoformat()
