"""Seeded samples of a task's design space: post-processed candidates, never measured.

MetaSchedule's own first step (``EvolutionarySearch`` with a random cost model and no
genetic rounds) draws ``n`` candidates of the unscheduled workload; :func:`sample_traces`
returns their traces. The trajectory corpus (:mod:`cwm.corpus.build`) replays them; the world
model centres its ranker rows on their mean (:mod:`cwm.model.centring`).
"""
from __future__ import annotations


def sample_traces(mod, target, n: int, seed: int) -> list[str]:
    """Up to ``n`` distinct post-processed candidates' trace JSON texts (no measurement), sorted:
    MetaSchedule returns the same set for a seed but not always in the same order. ``target``:
    a TVM target, or its JSON text or dict."""
    import tvm
    from tvm.s_tir import meta_schedule as ms

    from cwm.actions.trace_io import trace_to_json

    if not isinstance(target, tvm.target.Target):
        target = tvm.target.Target(target)
    ctx = ms.TuneContext(mod=mod, target=target, space_generator="post-order-apply",
                         search_strategy=ms.search_strategy.EvolutionarySearch(
                             population_size=n, init_min_unmeasured=n, genetic_num_iters=0),
                         num_threads=1, rand_state=seed)
    ctx.generate_design_space()
    ctx.pre_tuning(max_trials=n, num_trials_per_iter=n, database=ms.database.MemoryDatabase(),
                   cost_model=ms.cost_model.RandomModel())
    cands = ctx.generate_measure_candidates() or []
    ctx.post_tuning()
    return sorted(trace_to_json(c.sch.trace) for c in cands)
