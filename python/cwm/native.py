"""The one loader of the native core ``cwm._native``; every caller goes through here.

A missing module, a module built for another native API version, or (in a source
checkout) a module built from different sources raises :class:`NativeCoreError`
with the command that rebuilds it. There is no silent fallback to Python: the
reference implementations in :mod:`cwm.actions` are the specification and the
test oracle, not a production path.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from cwm._version import NATIVE_API_VERSION

REBUILD = "rebuild it with `make build` (runs `pip install --no-build-isolation -e .`)"
_SRC_DIR = Path(__file__).resolve().parents[2] / "src"
_module = None


class NativeCoreError(ImportError):
    """cwm._native is missing or does not match this Python package."""


def load():
    """Import and check ``cwm._native`` once; raises :class:`NativeCoreError`."""
    global _module
    if _module is not None:
        return _module
    try:
        from cwm import _native
    except ImportError as e:
        raise NativeCoreError(f"cwm's native core (cwm._native) is not built or cannot load ({e}); {REBUILD}") from e
    if _native.api_version() != NATIVE_API_VERSION:
        raise NativeCoreError(f"cwm._native is stale: native API {_native.api_version()}, this package expects "
                              f"{NATIVE_API_VERSION}; {REBUILD}")
    if (_SRC_DIR / "sources.txt").exists():
        from cwm.native_sources import sources_hash

        built, current = _native.sources_hash(), sources_hash(_SRC_DIR)
        if built != current:
            raise NativeCoreError(f"cwm._native is stale: built from sources {built}, the checkout at {_SRC_DIR} "
                                  f"has {current}; {REBUILD}")
    _module = _native
    return _module


def _call(fn, *args):
    from cwm.actions.canonical import TraceFormatError

    try:
        return fn(*args)
    except ValueError as e:
        raise TraceFormatError(str(e)) from None


def featurize_batch(traces, num_threads: int = 1, nests: bool = False):
    """Native twin of :func:`cwm.actions.featurize_batch` (identical arrays). ``nests``: also read
    each trace's tiled nest in the same parse (``FeatureBatch.nests``), which :func:`tile_footprint`
    reads instead of parsing the traces again."""
    from cwm.actions.featurize import FeatureBatch

    traces = [t if isinstance(t, str) else t.decode() if isinstance(t, bytes) else _dumps(t) for t in traces]
    ints, numbers, lengths, unknown, tiled = _call(load().featurize_batch, traces, int(num_threads), bool(nests))
    return FeatureBatch(np.asarray(ints), np.asarray(numbers), np.asarray(lengths), np.asarray(unknown), traces,
                        nests=tiled)


def canonical_actions(trace: str):
    """``(actions, unknown_kinds, num_insts)`` as plain tuples, for parity checks."""
    return _call(load().canonical_actions, trace if isinstance(trace, str) else _dumps(trace))


def action_kinds() -> list[str]:
    return list(load().action_kinds())


def _dumps(obj) -> str:
    import json

    return json.dumps(obj)


def transition_core(weights: dict, cfg):
    """A native TransH evaluator holding ``weights`` (from ``cwm.model.transition.numpy_weights``)."""
    return load().TransitionCore({k: np.ascontiguousarray(v, np.float32) for k, v in weights.items()},
                                 cfg.dim, cfg.hash_buckets, cfg.small_vocab, cfg.normalize_state,
                                 cfg.state_dependent, cfg.translation_bound)


def sequence_core(weights: dict, hash_buckets: int, small_vocab: int):
    """A native scorer of the sequence head holding ``weights`` (from
    ``cwm.model.sequence_head.numpy_weights``)."""
    return load().SequenceCore({k: np.ascontiguousarray(v, np.float32) for k, v in weights.items()},
                               hash_buckets, small_vocab)


def sequence_scores(core, fb) -> np.ndarray:
    """The sequence head's scores ``[B]`` (float64) of a :class:`FeatureBatch` by a :func:`sequence_core`."""
    return core.scores(*_action_arrays(fb))


def _action_arrays(fb) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A :class:`FeatureBatch`'s ``(ints, numbers, lengths)`` as the contiguous dtypes the core takes."""
    return (np.ascontiguousarray(fb.ints, np.int32), np.ascontiguousarray(fb.numbers, np.float32),
            np.ascontiguousarray(fb.lengths, np.int32))


def structure_stats(fb) -> np.ndarray:
    """Native twin of :func:`cwm.model.trace_structure.structure_stats` for a :class:`FeatureBatch`."""
    return load().structure_stats(*_action_arrays(fb))


def vector_alignment(fb) -> np.ndarray:
    """Native twin of :func:`cwm.model.vector_alignment.vector_alignment` for a :class:`FeatureBatch`."""
    return load().vector_alignment(*_action_arrays(fb))


def compute_locations(fb) -> np.ndarray:
    """Native twin of :func:`cwm.model.compute_locations.compute_locations` for a :class:`FeatureBatch`."""
    return load().compute_locations(*_action_arrays(fb))


def loop_tiles(fb) -> np.ndarray:
    """Native twin of :func:`cwm.model.loop_tiles.loop_tiles` for a :class:`FeatureBatch`."""
    return load().loop_tiles(*_action_arrays(fb))


def tile_footprint(fb, cores: int) -> np.ndarray:
    """Native twin of :func:`cwm.model.tile_footprint.tile_footprint` for a :class:`FeatureBatch` of
    one task that carries its traces and the task's facts (:meth:`WorldModel.featurize`)."""
    if fb.traces is None or fb.facts is None:
        raise ValueError("the tile_footprint columns need the batch's traces and its task's facts: featurize "
                         "with WorldModel.featurize(workload, traces)")
    facts = _call(_parsed_facts, fb.facts)
    if fb.nests is not None and len(fb.nests) == len(fb.traces):
        return load().tile_footprint_of_nests(fb.nests, facts, int(cores))
    return _call(load().tile_footprint, list(fb.traces), facts, int(cores))


@lru_cache(maxsize=64)
def _parsed_facts(text: str):
    """A task's facts JSON text, parsed once (a scoring call passes the same text object each time)."""
    return load().parse_task_facts(text)


def sequence_stats(fb) -> np.ndarray:
    """Native twin of :func:`cwm.model.action_stats.sequence_stats` for a :class:`FeatureBatch`."""
    return load().sequence_stats(*_action_arrays(fb))
