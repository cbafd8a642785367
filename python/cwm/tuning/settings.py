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
    #: the share of a round's trials that are random design-space samples instead of the best by
    #: score (MetaSchedule's default; it takes ``int(num_trials_per_iter * eps_greedy)``, so 0.05 at
    #: 16 a round is none); a counter to a search that finds what its model overrates
    eps_greedy: float = 0.05
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
    #: artifact format of the builder: "tar" (default: MetaSchedule's gzipped ``.tar`` of objects,
    #: linked by whoever loads it) or "so" (linked here, for RPC servers without a C compiler)
    export: str = "tar"
    #: transferred schedules measured per task (:mod:`cwm.tuning.seeded_search`): the fastest
    #: training schedules of the workloads of the same structure nearest in shape; 0: none
    seed_trials: int = 0
    #: "first" or "last": the round in which they are measured
    seed_placement: str = "last"
    #: "library" or "model": which of the transferred schedules are measured
    #: (:class:`~cwm.tuning.seeded_search.SeedConfig` ``choice``)
    seed_choice: str = "library"

    def __post_init__(self):
        if self.builder_kind not in ("pooled", "in-process"):
            raise ValueError(f"builder_kind must be 'pooled' or 'in-process', not {self.builder_kind!r}")
        if self.runner_kind not in ("pooled", "in-process"):
            raise ValueError(f"runner_kind must be 'pooled' or 'in-process', not {self.runner_kind!r}")
        if self.export not in ("tar", "so"):
            raise ValueError(f"export must be 'tar' or 'so', not {self.export!r}")
        if self.seed_placement not in ("first", "last"):
            raise ValueError(f"seed_placement must be 'first' or 'last', not {self.seed_placement!r}")
        if self.seed_choice not in ("library", "model"):
            raise ValueError(f"seed_choice must be 'library' or 'model', not {self.seed_choice!r}")
        if not 0.0 <= self.eps_greedy <= 1.0:
            raise ValueError(f"eps_greedy must be in [0, 1], not {self.eps_greedy!r}")
        if self.init_min_unmeasured > self.population_size:
            raise ValueError("init_min_unmeasured must be <= population_size "
                             f"({self.init_min_unmeasured} > {self.population_size})")

    def strategy(self, seed_library=None, seed_config=None):
        """An ``EvolutionarySearch`` with these knobs; with ``seed_trials > 0`` and a
        :class:`~cwm.tuning.seed_library.SeedLibrary`, wrapped in a
        :class:`~cwm.tuning.seeded_search.SeededSearch` (``seed_config``: a
        :class:`~cwm.tuning.seeded_search.SeedConfig` to use instead of these knobs')."""
        from tvm.s_tir import meta_schedule as ms

        search = ms.search_strategy.EvolutionarySearch(
            population_size=self.population_size, init_measured_ratio=self.init_measured_ratio,
            init_min_unmeasured=self.init_min_unmeasured, genetic_num_iters=self.genetic_num_iters,
            eps_greedy=self.eps_greedy)
        if seed_library is None or (seed_config is None and self.seed_trials <= 0):
            return search
        from cwm.tuning.seeded_search import SeedConfig, SeededSearch

        config = seed_config or SeedConfig(seed_trials=self.seed_trials, placement=self.seed_placement,
                                           choice=self.seed_choice)
        return SeededSearch(search, seed_library, config)

    def evaluator_config(self):
        """The runner's ``EvaluatorConfig(number, repeat, min_repeat_ms)``."""
        from tvm.s_tir import meta_schedule as ms

        return ms.runner.EvaluatorConfig(number=self.number, repeat=self.repeat,
                                         min_repeat_ms=self.min_repeat_ms)

    def builder(self, target=None):
        """A :func:`~cwm.tuning.pooled_builder.PooledBuilder` (default) or an
        :class:`~cwm.tuning.builder.InProcessBuilder`, with ``builder_workers`` workers.

        ``target`` (a ``Target`` or anything :func:`~cwm.target_spec.resolve_target` takes;
        optional): for a cuda target the builder embeds real GPU code (fatbin) in its artifacts,
        not CUDA source (docs/cuda.md): the pooled workers build with
        :func:`cwm.tuning.pooled_builder.build_cuda_in_worker`, and for the in-process builder
        :func:`cwm.cuda_toolchain.enable_cuda_codegen` is called here first (process-wide).
        ``export="so"`` links ``.so`` artifacts (:func:`cwm.tuning.pooled_builder.build_so_in_worker`,
        which also enables the CUDA code generation in its worker).
        """
        cuda = target is not None and _target_kind(target) == "cuda"
        if cuda:
            _check_cuda_compiler()
        if self.builder_kind == "in-process":
            from cwm.tuning.builder import InProcessBuilder

            if cuda:
                from cwm.cuda_toolchain import enable_cuda_codegen

                enable_cuda_codegen(target)
            f_export = None
            if self.export == "so":
                from cwm.tuning.pooled_builder import export_so as f_export
            return InProcessBuilder(max_workers=self.builder_workers, f_export=f_export)
        from cwm.tuning.pooled_builder import PooledBuilder

        build_fn = None
        if self.export == "so":
            from cwm.tuning.pooled_builder import build_so_in_worker as build_fn
        elif cuda:
            from cwm.tuning.pooled_builder import build_cuda_in_worker as build_fn
        return PooledBuilder(max_workers=self.builder_workers, timeout_sec=self.build_timeout_s, build_fn=build_fn)

    def runner(self):
        """A :func:`~cwm.tuning.pooled_runner.PooledRunner` (default) or an
        :class:`~cwm.tuning.runner.InProcessRunner`, using :meth:`evaluator_config`."""
        if self.runner_kind == "in-process":
            from cwm.tuning.runner import InProcessRunner

            return InProcessRunner(self.evaluator_config())
        from cwm.tuning.pooled_runner import PooledRunner

        return PooledRunner(self.evaluator_config(), timeout_sec=self.run_timeout_s)


def _target_kind(target) -> str:
    """``"llvm"``, ``"cuda"``, ... of a ``Target`` or a spec :func:`~cwm.target_spec.resolve_target` takes."""
    kind = getattr(target, "kind", None)
    if kind is not None:
        return kind.name
    from cwm.target_spec import resolve_target

    return resolve_target(target).kind.name


def _check_cuda_compiler() -> None:
    """Fail early (not once per candidate in a worker) when no GPU code can be produced here."""
    from cwm.cuda_toolchain import CudaUnavailable, _have_nvrtc, find_nvcc

    if find_nvcc() is None and not _have_nvrtc():
        raise CudaUnavailable("tuning for cuda builds real GPU code here and needs nvcc (set CWM_NVCC or put it "
                              "on PATH) or NVRTC (the cuda-bindings package)")


def search_settings(profile: str = "fast", base: FastSettings | None = None) -> FastSettings:
    """``base`` (default :class:`FastSettings`) with the search knobs of the named ``profile``."""
    from dataclasses import replace

    if profile not in SEARCH_PROFILES:
        raise ValueError(f"unknown search profile {profile!r}; choose from {sorted(SEARCH_PROFILES)}")
    return replace(base or FastSettings(), **SEARCH_PROFILES[profile])


#: MetaSchedule's own defaults (``EvolutionarySearch()``, ``EvaluatorConfig()``, 64 trials per
#: round), for comparison; ``LocalBuilder`` uses one worker per logical core.
STOCK = FastSettings(population_size=512, init_measured_ratio=0.2, init_min_unmeasured=50,
                     genetic_num_iters=4, num_trials_per_iter=64, number=3, repeat=1,
                     min_repeat_ms=100, builder_workers=2)

#: named search profiles: ``EvolutionarySearch`` knobs laid over :class:`FastSettings` (measurement,
#: builder and runner stay as they are). ``wide`` is MetaSchedule's own search breadth
#: (:data:`STOCK`'s population and genetic iterations) at FastSettings' 16 trials per round: about
#: 6.7x the candidates scored per round, the same measured trials.
SEARCH_PROFILES = {
    "fast": {},
    "wide": {k: getattr(STOCK, k) for k in ("population_size", "init_min_unmeasured", "genetic_num_iters")},
    "seeded": {"seed_trials": 8, "seed_placement": "last"},
    "seeded_by_model": {"seed_trials": 8, "seed_placement": "last", "seed_choice": "model"},
}

#: the profile a named cost model searches with when no settings are given (docs/decisions.md);
#: the others search with :class:`FastSettings` as they are
DEFAULT_PROFILE = {"cwm": "seeded"}


def default_settings(cost_model) -> FastSettings:
    """The settings ``cwm.tune`` / ``cwm.compile`` use for ``cost_model`` (a name or an object)
    when none are given: :data:`DEFAULT_PROFILE`'s profile, else :class:`FastSettings`."""
    name = cost_model if isinstance(cost_model, str) else None
    return search_settings(DEFAULT_PROFILE.get(name, "fast"))
