"""Shared fixtures: the recorded real traces in tests/data/traces.jsonl.gz."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import cwm  # noqa: F401  (installs the TVMScript speed fix before any test parses TIR)

DATA = Path(__file__).parent / "data"


def load_trace_records() -> list[dict]:
    with gzip.open(DATA / "traces.jsonl.gz", "rt") as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="session")
def trace_records():
    return load_trace_records()


@pytest.fixture(scope="session")
def workload_mods(trace_records):
    from cwm import workloads

    return {name: workloads.get(name) for name in sorted({r["workload"] for r in trace_records})}
