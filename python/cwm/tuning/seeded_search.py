"""Evolutionary search with a round of schedules transferred from similar training workloads.

:class:`SeededSearch` wraps MetaSchedule's ``EvolutionarySearch``. One round (the first, or
the last) measures up to ``seed_trials`` candidates made from the fastest traces of the training
workloads whose design spaces sample the same decisions, nearest in loop extents
(:class:`~cwm.tuning.seed_library.SeedLibrary`): the task's own sketches replayed with their
decisions (:func:`~cwm.tuning.trace_transfer.transfer_decisions`), postprocessed like any
candidate. These are ordinary measurements: they count towards the trial budget, go to the
database and update the cost model; measured first, the evolutionary search starts from the
best of them (``init_measured_ratio``) as it does from its own. A workload with no similar
training workload gets no seed round, and the search is MetaSchedule's.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule.search_strategy import PySearchStrategy


@dataclass(frozen=True)
class SeedConfig:
    """How many seeds are measured, and from how many library tasks they are drawn."""

    seed_trials: int = 8
    #: "first" or "last": the round in which the seeds are measured (:class:`SeededSearch`)
    placement: str = "last"
    #: "library": the first ``seed_trials`` transferred candidates in library order (nearest task
    #: first); "model": the ``seed_trials`` of them the search's cost model scores highest before
    #: the search starts (CWM: its prior, not yet adapted to the task; decision 60)
    choice: str = "library"
    max_tasks: int = 8
    per_task: int = 3
    #: library entries left out (a replay on training tasks keeps a task's own network out)
    exclude_keys: tuple = ()
    exclude_networks: tuple = ()
    stats: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        if self.placement not in ("first", "last"):
            raise ValueError(f"placement must be 'first' or 'last', not {self.placement!r}")
        if self.choice not in ("library", "model"):
            raise ValueError(f"choice must be 'library' or 'model', not {self.choice!r}")


def transferred_candidates(mod, library, config: SeedConfig, postprocs, design_spaces) -> list:
    """``MeasureCandidate`` s for ``mod`` made from the library's traces (the sketches of
    ``design_spaces`` with their decisions, :func:`~cwm.tuning.trace_transfer.transfer_decisions`),
    postprocessed, one per distinct program (structural hash). The library's traces for each sketch
    are taken in turn (the nearest library task first), and each trace's decisions go to the
    sketch most like its own (:func:`~cwm.tuning.trace_transfer.closest_sketch`); the traces
    whose own sketch has the same instruction kinds come first."""
    import tvm_ffi
    from tvm.s_tir import meta_schedule as ms

    from cwm.tuning.trace_transfer import closest_sketch, transfer_decisions

    lists = [[trace for _, trace in library.candidates(sketch, config.max_tasks, config.per_task,
                                                      config.exclude_keys, config.exclude_networks)]
             for sketch in design_spaces]
    traces = list(dict.fromkeys(t for row in itertools.zip_longest(*lists) for t in row if t is not None))
    matched = [(trace, *closest_sketch(trace, design_spaces)) for trace in traces]
    matched.sort(key=lambda m: m[2] < 1.0)  # a source of the same sketch shape first, else in order
    out, seen = [], set()
    for trace, sketch, _ in matched:
        sch = transfer_decisions(trace, sketch, mod) if sketch is not None else None
        if sch is None:
            continue
        sch.enter_postproc()
        if not all(p.apply(sch) for p in postprocs):
            continue
        digest = tvm_ffi.structural_hash(sch.mod)
        if digest in seen:
            continue
        seen.add(digest)
        out.append(ms.MeasureCandidate(sch, ms.arg_info.ArgInfo.from_entry_func(sch.mod, remove_preproc=True)))
    config.stats.update(library_traces=len(traces), transferred=len(out))
    return out


@derived_object
class SeededSearch(PySearchStrategy):
    """See the module docstring; ``inner`` is the ``EvolutionarySearch`` the seeds are added to.

    ``config.placement``: ``"first"`` measures the seeds as the first round (the search starts
    from the best measured ones), ``"last"`` as the last (the search is MetaSchedule's, with
    ``seed_trials`` fewer trials; the default, decision 59). With a task scheduler that stops a
    task before its budget is spent (``gradient``), a last round may not come.
    """

    def __init__(self, inner, library, config: SeedConfig | None = None):
        super().__init__()
        self.inner, self.library, self.config = inner, library, config or SeedConfig()
        self.context, self.pending = None, []

    def _initialize_with_tune_context(self, context) -> None:
        self.context = context
        self.inner._initialize_with_tune_context(context)

    def pre_tuning(self, max_trials, num_trials_per_iter, design_spaces, database=None, cost_model=None) -> None:
        candidates = transferred_candidates(self.context.mod, self.library, self.config,
                                            list(self.context.space_generator.postprocs), list(design_spaces))
        n = min(self.config.seed_trials, num_trials_per_iter, max(0, int(max_trials) - 1), len(candidates))
        if self.config.choice == "model" and cost_model is not None and len(candidates) > n > 0:
            import numpy as np

            scores = np.asarray(cost_model.predict(self.context, candidates), np.float64)
            order = np.argsort(-scores, kind="stable")[:n]
            self.config.stats.update(chosen=[int(i) for i in order])
            candidates = [candidates[i] for i in order]
        self.pending = candidates[:n]
        self.config.stats.update(seeded=n)
        self.inner.pre_tuning(int(max_trials) - n, num_trials_per_iter, design_spaces, database, cost_model)

    def post_tuning(self) -> None:
        self.inner.post_tuning()

    def generate_measure_candidates(self):
        if self.pending and self.config.placement == "first":
            return self.pending
        proposed = self.inner.generate_measure_candidates()
        if proposed is None and self.pending:
            return self.pending
        return proposed

    def notify_runner_results(self, measure_candidates, results) -> None:
        # the seeds' results reach the database and the cost model by the measure callbacks
        if self.pending and len(measure_candidates) == len(self.pending) and all(
                a.same_as(b) for a, b in zip(measure_candidates, self.pending)):
            self.pending = []
            return
        self.inner.notify_runner_results(measure_candidates, results)

    def clone(self):
        return SeededSearch(self.inner.clone(), self.library, self.config)
