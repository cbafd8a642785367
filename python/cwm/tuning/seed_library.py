"""The fastest measured schedules of the training workloads, looked up by design-space signature.

A :class:`SeedLibrary` holds, per training task of one or more dataset roots (their ``train``
split only: a held-out task of any root never enters), the networks it came from and its
``per_task`` fastest traces. Each trace is indexed by its sampling signature
(:func:`cwm.tuning.trace_transfer.signature_of_json`: the kinds and sizes of its sampling
decisions) and the extents of its tiled loops. :meth:`SeedLibrary.candidates` returns, for a
new workload's design space (a sketch), the traces of the same signature whose tasks are
nearest in loop extents, for :func:`~cwm.tuning.trace_transfer.transfer_decisions`. Saved as
gzipped JSON lines.
"""
from __future__ import annotations

import gzip
import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path

FORMAT = "cwm-seed-library"
VERSION = 1


@dataclass
class SeedEntry:
    key: str
    networks: list[str]
    #: JSON text of the task's fastest traces, fastest first
    traces: list[str]
    latency_s: list[float] = field(default_factory=list)


class SeedLibrary:
    """Entries, and their traces by sampling signature; see the module docstring."""

    def __init__(self, entries=()):
        from cwm.tuning.trace_transfer import parse_json

        self.entries: list[SeedEntry] = list(entries)
        #: signature -> [(entry, rank within the task, trace, tile extents)]
        self._by_signature: dict[tuple, list] = {}
        for e in self.entries:
            for rank, trace in enumerate(e.traces):
                signature, _, extents = parse_json(trace)
                if signature:
                    self._by_signature.setdefault(signature, []).append((e, rank, trace, extents))

    def __len__(self) -> int:
        return len(self.entries)

    def signatures(self) -> list[tuple]:
        """The sampling signatures the library has traces of."""
        return list(self._by_signature)

    def candidates(self, sketch, max_tasks: int = 8, per_task: int = 3, exclude_keys=(),
                   exclude_networks=()) -> list[tuple[str, str]]:
        """``[(source key, trace JSON)]`` for the design space ``sketch``: the fastest ``per_task``
        traces of its signature of each of the ``max_tasks`` tasks nearest in tile extents
        (:func:`~cwm.tuning.trace_transfer.extent_distance` of their fastest such trace; ties: key
        order), nearest task first, skipping the keys and the networks given (a replay on the
        training tasks keeps a task's own network out)."""
        from cwm.tuning.trace_transfer import extent_distance, parse_sketch

        signature, extents = parse_sketch(sketch)
        skip_keys, skip_nets = set(exclude_keys), set(exclude_networks)
        by_task: dict[str, list] = {}
        for e, rank, trace, src_extents in self._by_signature.get(signature, []):
            if e.key in skip_keys or set(e.networks) & skip_nets:
                continue
            by_task.setdefault(e.key, []).append((rank, trace, extent_distance(extents, src_extents)))
        nearest = sorted(by_task, key=lambda k: (min(x[2] for x in by_task[k]), k))[:max_tasks]
        return [(k, trace) for k in nearest for _, trace, _ in sorted(by_task[k])[:per_task]]

    # ------------------------------------------------------------------ building and files
    @classmethod
    def from_datasets(cls, roots, per_task: int = 3, log=None) -> "SeedLibrary":
        """The ``train`` tasks of the dataset ``roots`` (a task in several roots counts once; a
        held-out task of any root is left out everywhere), each with its ``per_task`` fastest valid
        records (median run time)."""
        from cwm.dataset.loader import DatasetLoader

        loaders = [DatasetLoader(root) for root in roots]
        entries, seen = [], {k for loader in loaders for k in loader.task_keys("test")}
        for root, loader in zip(roots, loaders):
            for key in loader.task_keys("train"):
                if key in seen:
                    continue
                seen.add(key)
                timed = [(statistics.median(r["run_secs"]), r["trace"]) for r in loader.store.records(key)
                         if r.get("run_secs") and not r.get("build_error") and not r.get("run_error")]
                if not timed:
                    continue
                timed.sort(key=lambda x: x[0])
                info = loader.store.get_task(key)
                entries.append(SeedEntry(key, sorted(info.get("networks") or {}), [t for _, t in timed[:per_task]],
                                         [s for s, _ in timed[:per_task]]))
            if log:
                log(f"seed library: {root}: {len(entries)} tasks so far")
        return cls(entries)

    def save(self, path) -> None:
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        with gzip.open(tmp, "wt") as f:
            f.write(json.dumps({"format": FORMAT, "version": VERSION, "tasks": len(self.entries)}) + "\n")
            for e in self.entries:
                f.write(json.dumps(e.__dict__) + "\n")
        tmp.replace(path)

    @classmethod
    def load(cls, path) -> "SeedLibrary":
        with gzip.open(path, "rt") as f:
            header = json.loads(f.readline())
            if header.get("format") != FORMAT or header.get("version") != VERSION:
                raise ValueError(f"{path}: not a {FORMAT} v{VERSION} file ({header.get('format')!r} "
                                 f"v{header.get('version')!r})")
            return cls(SeedEntry(**json.loads(line)) for line in f if line.strip())


#: the library's file in a model directory (``python/cwm/default_model/seeds.jsonl.gz`` ships)
FILE_NAME = "seeds.jsonl.gz"
_LOADED: dict = {}


def model_seed_library(model_dir=None) -> "SeedLibrary | None":
    """The seed library of a model directory (``model_dir``, or the shipped model), loaded once
    per process. A directory without one (a model of ``cwm train``) takes the shipped model's:
    the seeds are only measured, whatever model ranks. ``None``, with a warning, when there is
    none at all."""
    import warnings

    from cwm.model import default_model_dir

    shipped = default_model_dir(must_exist=False) / FILE_NAME
    path = Path(model_dir) / FILE_NAME if model_dir else shipped
    if not path.is_file():
        path = shipped
    key = str(path.resolve())
    if key not in _LOADED:
        if not path.is_file():
            warnings.warn(f"no seed library at {path}: the search measures no transferred schedules "
                          "(tools/build_seed_library.py writes one)", stacklevel=2)
            _LOADED[key] = None
        else:
            _LOADED[key] = SeedLibrary.load(path)
    return _LOADED[key]
