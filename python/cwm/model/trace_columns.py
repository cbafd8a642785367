"""The optional families of ranker columns read from a candidate's actions alone, by name.

A model takes a family when its manifest says ``"<family>": true``; the rows hold the families a
model takes in the order of :data:`FAMILIES`, after the trace structure and before the hardware
features. Each family is a module of :mod:`cwm.model` with ``NAMES`` and a NumPy function of the
family's name (the spec), and a native twin of the same name in :mod:`cwm.native` (what scoring
runs; parity-tested). The C++ scorer reads the same flags (``src/scorer/trace_columns.cc``).

* ``vector_alignment``: the vector-register fill (docs/decisions.md §66);
* ``compute_locations``: each sampled compute-at location in trace order (§67);
* ``loop_tiles``: which loop of the tiled nest gets which tile factors (§95);
* ``tile_footprint``: the tiled block's parallel grain and cache footprints (§104). A *task family*
  (:data:`TASK_FAMILIES`): it reads the batch's trace texts and its task's facts from ``s_0``
  (:meth:`WorldModel.featurize` attaches them) and the target's cores, so its spec and twin take
  those instead of the action arrays. On the scoring path the native featuriser reads each trace's
  tiled nest in its own parse (``native.featurize_batch(nests=True)``), and the twin reads those.

Adding a family: its module, its native twin, an entry here and in ``src/scorer/trace_columns.cc``.
"""
from __future__ import annotations

from importlib import import_module

import numpy as np

FAMILIES = ("vector_alignment", "compute_locations", "loop_tiles", "tile_footprint")
TASK_FAMILIES = ("tile_footprint",)


def _module(family: str):
    if family not in FAMILIES:
        raise ValueError(f"unknown trace-column family {family!r}; known: {', '.join(FAMILIES)}")
    return import_module(f"cwm.model.{family}")


def ordered(families) -> tuple[str, ...]:
    """``families`` in row order (:data:`FAMILIES`); an unknown name raises ValueError."""
    chosen = set(families)
    for family in chosen:
        _module(family)
    return tuple(f for f in FAMILIES if f in chosen)


def names(families) -> list[str]:
    """The column names of ``families``, in row order."""
    return [n for family in ordered(families) for n in _module(family).NAMES]


def spec_columns(family: str, fb, cores: int) -> np.ndarray:
    """The spec of one family on a :class:`FeatureBatch` (a task family's also reads its traces
    and facts, and ``cores``)."""
    if family in TASK_FAMILIES:
        import json

        if fb.traces is None or fb.facts is None:
            raise ValueError(f"the {family} columns need the batch's traces and its task's facts")
        return getattr(_module(family), family)(fb.traces, json.loads(fb.facts), cores)
    return getattr(_module(family), family)(fb.ints, fb.numbers, fb.lengths)


def native_columns(families: tuple[str, ...], fb, cores: int) -> list[np.ndarray]:
    """The native twins' columns of ``families`` (in row order, as :func:`ordered` gives them) for
    a :class:`FeatureBatch` on a target of ``cores`` cores; on the scoring path, so it does not
    order them again."""
    from cwm import native

    return [getattr(native, family)(fb, cores) if family in TASK_FAMILIES else getattr(native, family)(fb)
            for family in families]
