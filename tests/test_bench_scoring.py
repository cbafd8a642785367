"""bench/scoring.py: the interleaved windows (no timing is asserted, only who runs when)."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))


def test_interleaved_warms_each_method_then_rotates_the_order_every_round():
    import scoring

    calls = []
    fns = {name: (lambda batch, name=name: calls.append((name, batch))) for name in ("a", "b", "c")}
    rates = scoring.interleaved(fns, 7, rounds=3, window_s=1e-4)
    assert set(rates) == {"a", "b", "c"} and all(len(r) == 3 and min(r) > 0 for r in rates.values())
    assert {batch for _, batch in calls} == {7}
    assert [name for name, _ in calls[:3]] == ["a", "b", "c"]  # the warm-up, one call each
    windows = []  # the timed calls, each window's run of calls as one entry
    for name, _ in calls[3:]:
        if not windows or windows[-1] != name:
            windows.append(name)
    assert windows == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]


def test_rate_calls_at_least_once_and_counts_items():
    import scoring

    calls = []
    per_s = scoring.rate(lambda batch: calls.append(batch), 5, min_s=1e-9)
    assert calls and set(calls) == {5} and per_s > 0
