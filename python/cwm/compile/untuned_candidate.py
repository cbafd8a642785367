"""The untuned candidate: every task tuned on CPU has its unscheduled function measured too.

MetaSchedule's design space can hold only bad schedules for a task. OPT-125m's key transpose
(``fused_reshape1_transpose1_multiply3``, 1 × 128 × 768 → 1 × 12 × 64 × 128) has two distinct
candidates, both vectorizing the loop that reads with a stride of 768 floats: the best took
3.5 ms a layer, where TVM's plain lowering of the same function takes about 0.7 ms (measured here,
2026-12-02). A compile should never ship a kernel slower than the one it would get without
tuning, so :func:`measure_untuned_first` measures a task's function as it is, with the compile's
own builder and runner, and commits it to the database as a record whose trace only looks a
block up. ``cwm-apply-db`` then picks whichever record is fastest, as for any other.

It is the first trial of the task's budget (so ``trials`` still counts every measurement; a
task with a budget of 1 gets only this one), measured only when the task is tuned now: a task
whose records are all there already (a resumed compile, the shared database) is not measured
again, unless those records lack it (a database from before this module): then it is measured
once, beside the budget. Its latency is reported per task as ``untuned_us``. llvm only: an unscheduled GPU
function does not build.
"""
from __future__ import annotations

import os
import shutil

from cwm.compile.tuning import FAILED_SECS


def _look_up_a_block(sch) -> None:
    """Put one instruction that changes nothing into ``sch``'s trace (``get_sblock`` of a block):
    MetaSchedule takes a record whose trace has no instruction as invalid, so ``get_top_k`` (and
    with it ``cwm-apply-db``) would never pick it."""
    import re

    names = [n for n in re.findall(r'T\.sblock\("([^"]+)"\)', sch.mod["main"].script()) if n != "root"]
    if names:
        sch.get_sblock(names[0])


def is_untuned(record) -> bool:
    """A record of the unscheduled function: its trace only looks a block up."""
    insts = list(record.trace.insts)
    return len(insts) <= 1 and all(inst.kind.name == "GetSBlock" for inst in insts)


def _untuned_record(records) -> object | None:
    """The first untuned record of ``records`` (:func:`is_untuned`), or None."""
    for record in records:
        if is_untuned(record):
            return record
    return None


def _mean_us(record) -> float | None:
    secs = [float(s) for s in (record.run_secs or [])]
    return sum(secs) / len(secs) * 1e6 if secs and max(secs) < FAILED_SECS else None


def untuned_us(database, task) -> float | None:
    """The mean latency (us) of ``task``'s untuned record in ``database``, or None."""
    mod = task.dispatched[0]
    if not database.has_workload(mod):
        return None
    record = _untuned_of(database, database.commit_workload(mod))
    return _mean_us(record) if record is not None else None


def _untuned_of(database, workload):
    return _untuned_record(r for r in database.get_all_tuning_records() if r.workload.same_as(workload))


def lacks_untuned(database, task, target) -> bool:
    """True when ``task`` has records in ``database`` but no untuned one, on an llvm target."""
    mod = task.dispatched[0]
    return (target.kind.name == "llvm" and database.has_workload(mod)
            and _untuned_of(database, database.commit_workload(mod)) is None)


def measure_untuned_first(task, target, database, builder, runner) -> bool:
    """Measure ``task``'s unscheduled function and commit it, unless the database has its record
    already or the target is not llvm; True when it measured (one trial of the task's budget)."""
    if target.kind.name != "llvm":
        return False
    mod = task.dispatched[0]
    workload = database.commit_workload(mod)
    if _untuned_of(database, workload) is not None:
        return False
    _measure(mod, workload, target, database, builder, runner)
    return True


def _measure(mod, workload, target, database, builder, runner) -> float | None:
    """Build and run ``mod`` unscheduled, commit the record (a failure too, as MetaSchedule
    commits its failed candidates), return its mean latency in us or None."""
    import tvm
    from tvm.s_tir import meta_schedule as ms

    sch = tvm.s_tir.Schedule(mod)
    _look_up_a_block(sch)
    args_info = ms.arg_info.ArgInfo.from_entry_func(sch.mod, remove_preproc=True)
    built = builder.build([ms.builder.BuilderInput(sch.mod, target)])[0]
    run_secs = [FAILED_SECS]
    if built.error_msg is None:
        result = runner.run([ms.runner.RunnerInput(built.artifact_path, "cpu", args_info)])[0].result()
        if result.error_msg is None and result.run_secs:
            run_secs = [float(s) for s in result.run_secs]

        shutil.rmtree(os.path.dirname(built.artifact_path), ignore_errors=True)  # the builder's temporary folder
    record = ms.database.TuningRecord(sch.trace, workload, run_secs, target, args_info)
    database.commit_tuning_record(record)
    return _mean_us(record)
