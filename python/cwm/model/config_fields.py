"""``FIELD=JSON`` overrides of a config dataclass, as the command lines take them
(``cwm probe --ranker-set`` / ``--rank-set``, ``tools/train_rank_transition.py --set``)."""
from __future__ import annotations

import dataclasses
import json


def parse_assignments(items) -> dict:
    """``["a=1", "b=\\"x\\""]`` -> ``{"a": 1, "b": "x"}``; a ``ValueError`` names a bad item."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            if not sep:
                raise ValueError("no '='")
            out[name.strip()] = json.loads(value)
        except ValueError as error:
            raise ValueError(f"{item!r}: expected FIELD=JSON-VALUE ({error})") from None
    return out


def with_fields(cfg, overrides: dict, what: str):
    """``cfg`` with ``overrides`` applied; an unknown field is a ``ValueError`` naming the known ones."""
    known = {f.name for f in dataclasses.fields(cfg)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ValueError(f"unknown {what} field(s) {unknown}; choose from {sorted(known)}")
    return dataclasses.replace(cfg, **overrides)
