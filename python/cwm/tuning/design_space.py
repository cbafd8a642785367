"""Tasks MetaSchedule cannot tune: its design-space generation fails on them.

MetaSchedule builds a task's search space by applying its schedule rules to the unscheduled
function (``PostOrderApply``). On some valid functions a rule's schedule primitive raises a
``ScheduleError``; for example, a function with two reductions feeding one element-wise
epilogue (a gated MLP, ``silu(x @ W1) * (x @ W2)``): multi-level tiling of the first reduction
tries to ``reverse_compute_at`` the epilogue under its loops, which needs the second reduction
there too. TVM then raises from inside the task scheduler with the whole function printed.

:func:`design_space_error` tries the generation up front and returns a one-line reason (or
None); :class:`UntunableTaskError` is what :func:`cwm.tune` raises for such a task. Such a task
still builds with its default schedule: ``cwm.compile`` does so and says it in its summary.
"""
from __future__ import annotations

import re


class UntunableTaskError(RuntimeError):
    """MetaSchedule cannot generate a design space for this task, so it cannot be tuned.

    ``reason``: one line (the failing schedule primitive and TVM's message); ``task_name``: the
    task. The task can still be built with its default schedule (``cwm.compile`` does).
    """

    def __init__(self, reason: str, task_name: str = "main"):
        super().__init__(f"task {task_name!r} cannot be tuned: {reason.rstrip('.')}. It can still be built with its default "
                         "schedule (cwm.compile does so and tunes the rest of the model)")
        self.reason = reason
        self.task_name = task_name


def short_reason(error: BaseException) -> str:
    """A ``ScheduleError``'s message in one line: the primitive and TVM's own explanation,
    without the function it prints."""
    text = str(error)
    primitive = re.search(r"schedule primitive '([^']+)'", text)
    message = re.search(r"Error message:\s*(.+)", text)
    head = f"MetaSchedule's design-space generation failed in schedule primitive '{primitive.group(1)}'" \
        if primitive else f"MetaSchedule's design-space generation failed ({type(error).__name__})"
    if message:
        detail = message.group(1).strip()
    else:
        detail = next((line.strip() for line in text.splitlines() if line.strip()), "")
    # the list of blocks that follows names them by their place in the IR TVM printed, which is left out
    detail = re.split(r"\s*List of the \S+:", detail)[0].strip()
    if len(detail) > 300:
        detail = detail[:297] + "..."
    return f"{head}: {detail}" if detail else head


def design_space_error(context) -> str | None:
    """None when the MetaSchedule ``TuneContext`` ``context`` can generate its design space,
    else :func:`short_reason` of the ``ScheduleError`` it raises (other errors propagate)."""
    from tvm.s_tir.schedule import ScheduleError

    try:
        context.generate_design_space()
    except ScheduleError as error:
        return short_reason(error)
    return None


def check_tunable(mod, target, task_name: str = "main", seed: int = 0) -> None:
    """:class:`UntunableTaskError` when MetaSchedule's default space generator fails on the TIR
    ``mod`` for ``target``."""
    from tvm.s_tir import meta_schedule as ms

    context = ms.TuneContext(mod=mod, target=target, space_generator="post-order-apply", task_name=task_name,
                             rand_state=seed, num_threads=1)
    reason = design_space_error(context)
    if reason is not None:
        raise UntunableTaskError(reason, task_name)
