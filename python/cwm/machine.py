"""One description of the machine for every result file (benchmarks, ``cwm eval``).

The CPU is named by its model string *and* its family, model number and widest vector ISA:
cloud hosts often report only ``"AMD EPYC"``, which named a Zen 5 (``znver5``) and a Zen 4
(``znver4``, AVX-512) host alike, so a benchmark checkpoint took the runs of both for one host
(decision 63).
"""
from __future__ import annotations

import datetime
import os
import platform


def cpu_identity(cpuinfo: str) -> str:
    """``"<model name> (family F model M, <ISA>)"`` from the text of ``/proc/cpuinfo`` (its first
    processor); fields it lacks are left out, and no model name gives ``""``."""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        if not line.strip():
            if fields:
                break  # the first processor's block is enough
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    name = fields.get("model name", "")
    if not name:
        return ""
    flags = set(fields.get("flags", "").split())
    isa = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else ""
    detail = [f"family {fields['cpu family']} model {fields['model']}"] if "cpu family" in fields and "model" in fields else []
    detail += [isa] if isa else []
    return f"{name} ({', '.join(detail)})" if detail else name


def cpu() -> str:
    """This machine's CPU as :func:`cpu_identity` names it (``platform.processor()`` without
    ``/proc/cpuinfo``)."""
    try:
        with open("/proc/cpuinfo") as f:
            name = cpu_identity(f.read())
    except OSError:
        name = ""
    return name or platform.processor() or "unknown CPU"


def describe() -> str:
    """``"<CPU>, <n> cores, Python <x.y.z>"``, the CPU as :func:`cpu` names it."""
    return f"{cpu()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def today() -> str:
    return datetime.date.today().isoformat()
