"""States by replay: the TIR program after any prefix of a trace's canonical actions.

The dataset stores only the unscheduled workload and the trace; every intermediate
state is re-derived here. One replay yields all prefix states: TVM calls the
``decision_provider`` hook before applying each instruction, and an ``IRModule`` is
copy-on-write, so keeping a reference to ``sch.mod`` at that moment is a valid
snapshot (TVM_NOTES §3.4).
"""
from __future__ import annotations

import json

from cwm.actions.canonical import canonicalize


def _trace_json(trace):
    return json.loads(trace) if isinstance(trace, (str, bytes)) else trace


def apply_trace(mod, trace):
    """Replay a trace (JSON text or parsed) on ``mod``; returns the ``Schedule``."""
    from tvm.s_tir import Schedule, Trace

    sch = Schedule(mod)
    Trace.apply_json_to_schedule(_trace_json(trace), sch)
    return sch


def instruction_states(mod, trace) -> list:
    """``states[i]`` is the module before instruction ``i``; ``states[-1]`` the final one."""
    from tvm.s_tir import Schedule

    parsed = apply_trace(mod, trace).trace  # TVM's Trace object, decisions included
    sch, states = Schedule(mod), []

    def provider(inst, inputs, attrs, decision):
        states.append(sch.mod)
        return decision

    parsed.apply_to_schedule(sch, remove_postproc=False, decision_provider=provider)
    states.append(sch.mod)
    return states


def action_states(mod, trace) -> list:
    """``out[k]`` is the module after the first ``k`` canonical actions (``out[0]`` = ``mod``).

    ``len(out) == len(actions) + 1`` and ``out[-1]`` is the fully scheduled program.
    """
    actions = canonicalize(trace).actions
    states = instruction_states(mod, trace)
    return [states[0]] + [states[a.inst_index + 1] for a in actions]


def state_after(mod, trace, k: int):
    """The module after the first ``k`` actions, by replaying only that prefix."""
    actions = canonicalize(trace).actions
    if not 0 <= k <= len(actions):
        raise IndexError(f"prefix length {k} out of range: the trace has {len(actions)} actions")
    tj = _trace_json(trace)
    end = actions[k - 1].inst_index + 1 if k else 0
    prefix = [tj[0][:end], [d for d in tj[1] if d[0] < end]]
    return apply_trace(mod, prefix).mod


def state_text(state) -> str:
    """TVMScript text of a state (what the encoder reads)."""
    return state.script()
