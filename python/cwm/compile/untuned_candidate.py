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
once, beside the budget. Its latency is reported per task as ``untuned_us``. llvm only: an
unscheduled GPU function does not build.
"""
from __future__ import annotations

import os
import shutil

from cwm.compile.tuning import FAILED_SECS, _workloads


def _look_up_a_block(sch) -> None:
    """Put one instruction that changes nothing into ``sch``'s trace (``get_sblock`` of its first
    block but the root): MetaSchedule takes a record whose trace has no instruction as invalid, so
    ``get_top_k`` (and with it ``cwm-apply-db``) would never pick it."""
    import re

    names = [n for n in re.findall(r'T\.sblock\("([^"]+)"\)', sch.mod["main"].script()) if n != "root"]
    sch.get_sblock(names[0] if names else "root")


def is_untuned(record) -> bool:
    """A record of the unscheduled function: its trace only looks a block up."""
    insts = list(record.trace.insts)
    return len(insts) <= 1 and all(inst.kind.name == "GetSBlock" for inst in insts)


def _mean_us(record) -> float | None:
    secs = [float(s) for s in (record.run_secs or [])]
    return sum(secs) / len(secs) * 1e6 if secs and max(secs) < FAILED_SECS else None


def untuned_per_task(database, tasks) -> list:
    """Each task's untuned record in ``database`` (None: it has none, or no records at all), in
    one pass over the records, as :func:`cwm.compile.tuning.records_per_task` counts them."""
    workloads = _workloads(database, tasks)
    found = [None] * len(tasks)
    for record in database.get_all_tuning_records():
        if not is_untuned(record):
            continue
        for index, workload in enumerate(workloads):
            if workload is not None and found[index] is None and record.workload.same_as(workload):
                found[index] = record
                break
    return found


def untuned_latencies(database, tasks) -> list:
    """Each task's untuned mean latency (us), or None."""
    return [_mean_us(r) if r is not None else None for r in untuned_per_task(database, tasks)]


def lacking_untuned(database, tasks, target) -> list:
    """For each task: True when it has records in ``database`` but no untuned one (llvm only)."""
    if target.kind.name != "llvm":
        return [False] * len(tasks)
    return [r is None and database.has_workload(t.dispatched[0]) for t, r in zip(tasks, untuned_per_task(database, tasks))]


def measure_untuned_first(task, target, database, builder, runner) -> bool:
    """Measure ``task``'s unscheduled function and commit it, unless the database has its record
    already or the target is not llvm; True when it measured (one trial of the task's budget)."""
    if target.kind.name != "llvm":
        return False
    if untuned_per_task(database, [task])[0] is not None:
        return False
    mod = task.dispatched[0]
    _measure(mod, database.commit_workload(mod), target, database, builder, runner)
    return True


def _measure(mod, workload, target, database, builder, runner) -> None:
    """Build and run ``mod`` unscheduled and commit the record (a failure too, as MetaSchedule
    commits its failed candidates)."""
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
    database.commit_tuning_record(ms.database.TuningRecord(sch.trace, workload, run_secs, target, args_info))
