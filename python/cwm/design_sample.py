"""Seeded samples of a task's design space: post-processed candidates, never measured.

MetaSchedule's design space (``PostOrderApply`` over the schedule rules) is a few sketches with
sampling instructions. :func:`sample_traces` replays sketch ``i mod len(sketches)`` on a
``Schedule`` seeded with ``(seed, i)``, so every sampling instruction draws anew from that
seed, applies the post-processors, and keeps the distinct traces that pass: the same ``n``
traces for the same workload, target and seed, in any process. (``EvolutionarySearch``'s own
initial population, drawn on a thread pool, differs from call to call.) The trajectory corpus
(:mod:`cwm.corpus.build`) replays them; the world model centres its ranker rows on their mean
(:mod:`cwm.model.centring`).
"""
from __future__ import annotations

ATTEMPTS_PER_SAMPLE = 8  # a task with fewer distinct candidates than asked stops after n * this


def sample_traces(mod, target, n: int, seed: int) -> list[str]:
    """Up to ``n`` distinct post-processed candidates' trace JSON texts (no measurement), sorted.
    ``target``: a TVM target, or its JSON text or dict. Raises what design-space generation
    raises (a ``ScheduleError`` for a workload MetaSchedule cannot tune)."""
    import tvm
    from tvm.s_tir import Schedule, Trace
    from tvm.s_tir import meta_schedule as ms

    from cwm.actions.trace_io import trace_to_json

    if not isinstance(target, tvm.target.Target):
        target = tvm.target.Target(target)
    ctx = ms.TuneContext(mod=mod, target=target, space_generator="post-order-apply", num_threads=1,
                         rand_state=seed)
    sketches = ctx.generate_design_space()
    postprocs = list(ctx.space_generator.postprocs or [])
    found: set[str] = set()
    for i in range(n * ATTEMPTS_PER_SAMPLE):
        if len(found) >= n or not sketches:
            break
        sch = Schedule(ctx.mod, seed=(seed * 1_000_003 + i) % 2_147_483_646 + 1)
        try:
            # the sketch's instructions without its decisions: every sampling instruction draws anew
            Trace(sketches[i % len(sketches)].trace.insts, {}).apply_to_schedule(sch, remove_postproc=True)
            if not all(p.apply(sch) for p in postprocs):
                continue
        except tvm.TVMError:  # a draw the sketch's own checks reject, as MetaSchedule skips it
            continue
        found.add(trace_to_json(sch.trace))
    return sorted(found)
