"""Search and measurement knobs for tuning on a small CPU box, and the stock ones for reference.

Measured on a 2-vCPU EPYC (64 trials, tuning time only, imports excluded):

====================================================  ===============  ======================
config                                                 matmul 256^3     conv2d 64x56x56 3x3
====================================================  ===============  ======================
stock knobs (:data:`STOCK`), in-process build/run      28.6 s           52.5 s
fast knobs (:class:`FastSettings`), in-process         13-20 s          38-50 s
====================================================  ===============  ======================

Where the time goes: each search round samples ``population_size`` schedules and mutates
them ``genetic_num_iters`` times, predicting ``population_size`` scores per pass, so search
cost scales with ``population_size * (genetic_num_iters + 1)``; rounds are
``trials / num_trials_per_iter``. 16 trials per round gives the cost model 3 updates in a
64-trial tune (64 per round gives none). Each measurement runs the kernel until one repeat
lasts ``min_repeat_ms``: 100 ms (stock) vs ~20 ms (10 ms) per candidate. Note
``init_min_unmeasured`` must be <= ``population_size`` or the search stops early.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FastSettings:
    """Knobs of ``EvolutionarySearch``, the runner's ``EvaluatorConfig`` and the builder."""

    population_size: int = 128
    init_measured_ratio: float = 0.2
    init_min_unmeasured: int = 16
    genetic_num_iters: int = 2
    num_trials_per_iter: int = 16
    number: int = 3
    repeat: int = 1
    min_repeat_ms: int = 10
    builder_workers: int = 2
    #: "pooled" (default): persistent worker processes, builds killed after ``build_timeout_s``;
    #: "in-process": threads in this process, no start-up cost but no timeout (docs/decisions.md)
    builder_kind: str = "pooled"
    build_timeout_s: float = 30.0
    #: "pooled" (default): measure in a persistent worker process, so a crashing or hanging
    #: candidate becomes an error result; "in-process": measure in this process
    runner_kind: str = "pooled"
    run_timeout_s: float = 60.0

    def __post_init__(self):
        if self.builder_kind not in ("pooled", "in-process"):
            raise ValueError(f"builder_kind must be 'pooled' or 'in-process', not {self.builder_kind!r}")
        if self.runner_kind not in ("pooled", "in-process"):
            raise ValueError(f"runner_kind must be 'pooled' or 'in-process', not {self.runner_kind!r}")
        if self.init_min_unmeasured > self.population_size:
            raise ValueError("init_min_unmeasured must be <= population_size "
                             f"({self.init_min_unmeasured} > {self.population_size})")

    def strategy(self):
        """An ``EvolutionarySearch`` with these knobs."""
        from tvm.s_tir import meta_schedule as ms

        return ms.search_strategy.EvolutionarySearch(
            population_size=self.population_size, init_measured_ratio=self.init_measured_ratio,
            init_min_unmeasured=self.init_min_unmeasured, genetic_num_iters=self.genetic_num_iters)

    def evaluator_config(self):
        """The runner's ``EvaluatorConfig(number, repeat, min_repeat_ms)``."""
        from tvm.s_tir import meta_schedule as ms

        return ms.runner.EvaluatorConfig(number=self.number, repeat=self.repeat,
                                         min_repeat_ms=self.min_repeat_ms)

    def builder(self):
        """A :func:`~cwm.tuning.pooled_builder.PooledBuilder` (default) or an
        :class:`~cwm.tuning.builder.InProcessBuilder`, with ``builder_workers`` workers."""
        if self.builder_kind == "in-process":
            from cwm.tuning.builder import InProcessBuilder

            return InProcessBuilder(max_workers=self.builder_workers)
        from cwm.tuning.pooled_builder import PooledBuilder

        return PooledBuilder(max_workers=self.builder_workers, timeout_sec=self.build_timeout_s)

    def runner(self):
        """A :func:`~cwm.tuning.pooled_runner.PooledRunner` (default) or an
        :class:`~cwm.tuning.runner.InProcessRunner`, using :meth:`evaluator_config`."""
        if self.runner_kind == "in-process":
            from cwm.tuning.runner import InProcessRunner

            return InProcessRunner(self.evaluator_config())
        from cwm.tuning.pooled_runner import PooledRunner

        return PooledRunner(self.evaluator_config(), timeout_sec=self.run_timeout_s)

        return InProcessRunner(self.evaluator_config())


#: MetaSchedule's own defaults (``EvolutionarySearch()``, ``EvaluatorConfig()``, 64 trials per
#: round), for comparison; ``LocalBuilder`` uses one worker per logical core.
STOCK = FastSettings(population_size=512, init_measured_ratio=0.2, init_min_unmeasured=50,
                     genetic_num_iters=4, num_trials_per_iter=64, number=3, repeat=1,
                     min_repeat_ms=100, builder_workers=2)
