"""Every tuned CPU task also has its unscheduled function measured, so a compile never ships a
kernel slower than TVM's plain lowering (:mod:`cwm.compile.untuned_candidate`)."""
from __future__ import annotations

import json

import numpy as np

import cwm
from tests.compile_helpers import fast_settings

TRIALS = 2


def _block():
    import torch

    class KeyTranspose(torch.nn.Module):  # OPT's key path: project, split heads, transpose
        def __init__(self):
            super().__init__()
            self.k = torch.nn.Linear(64, 64)

        def forward(self, x):
            return self.k(x).reshape(1, 16, 4, 16).permute(0, 2, 3, 1) * 1.0

    torch.manual_seed(0)
    return KeyTranspose().eval(), torch.randn(1, 16, 64)


def _untuned_records(work_dir):
    from cwm.compile.tuning import open_database
    from cwm.compile.untuned_candidate import is_untuned

    return [r for r in open_database(str(work_dir)).get_all_tuning_records() if is_untuned(r)]


def test_each_tuned_task_gets_its_untuned_record_once(tmp_path):
    module, x = _block()
    model = cwm.compile(module, example_inputs=(x,), trials_per_task=TRIALS, cost_model="xgb", work_dir=tmp_path,
                        settings=fast_settings(), tuning_cache=False)
    np.testing.assert_allclose(model(x.numpy()), module(x).detach().numpy(), rtol=1e-5, atol=1e-5)
    tasks = [t for t in model.report["tasks"] if t["status"] == "tuned"]
    assert tasks and all(t["untuned_us"] is not None and t["untuned_us"] > 0 for t in tasks)
    assert len(_untuned_records(tmp_path)) == len(tasks)
    # counted among the records measured now, on top of the search's
    assert model.report["new_records"] == sum(t["new"] for t in model.report["tasks"])
    again = cwm.compile(module, example_inputs=(x,), trials_per_task=TRIALS, cost_model="xgb", work_dir=tmp_path,
                        settings=fast_settings(), tuning_cache=False)
    assert again.report["new_records"] == 0  # resumed: the untuned record is not measured twice
    assert len(_untuned_records(tmp_path)) == len(tasks)
    assert [t["untuned_us"] for t in again.report["tasks"] if t["status"] != "untunable"] == \
        [t["untuned_us"] for t in model.report["tasks"] if t["status"] != "untunable"]


def test_fastest_record_wins_even_when_it_is_the_untuned_one(tmp_path):
    """The report's best latency is the fastest record, the untuned one included."""
    module, x = _block()
    model = cwm.compile(module, example_inputs=(x,), trials_per_task=TRIALS, cost_model="xgb", work_dir=tmp_path,
                        settings=fast_settings(), tuning_cache=False)
    for task in model.report["tasks"]:
        if task["status"] == "tuned":
            assert task["best_us"] <= task["untuned_us"] + 1e-9


def test_a_database_from_before_gets_its_untuned_records_once(tmp_path):
    """Records written before the untuned candidate existed: the next compile measures it once
    for each reused task, beside the budget, and the one after measures nothing."""
    from cwm.compile.untuned_candidate import is_untuned

    module, x = _block()
    cwm.compile(module, example_inputs=(x,), trials_per_task=TRIALS, cost_model="xgb", work_dir=tmp_path,
                settings=fast_settings(), tuning_cache=False)
    path = tmp_path / "database_tuning_record.json"
    from cwm.compile.tuning import open_database

    untuned = [r for r in open_database(str(tmp_path)).get_all_tuning_records() if is_untuned(r)]
    lines = path.read_text().splitlines()
    def untuned_line(line):  # [workload, [[instructions, decisions], run_secs, target, args]]
        insts = json.loads(line)[1][0][0]
        return len(insts) == 1 and insts[0][0] == "GetSBlock"

    kept = [line for line in lines if not untuned_line(line)]
    assert len(lines) - len(kept) == len(untuned) > 0
    path.write_text("".join(line + "\n" for line in kept))
    model = cwm.compile(module, example_inputs=(x,), trials_per_task=TRIALS, cost_model="xgb", work_dir=tmp_path,
                        settings=fast_settings(), tuning_cache=False)
    assert model.report["new_records"] == len(untuned)
    again = cwm.compile(module, example_inputs=(x,), trials_per_task=TRIALS, cost_model="xgb", work_dir=tmp_path,
                        settings=fast_settings(), tuning_cache=False)
    assert again.report["new_records"] == 0
