"""A trial budget for the whole network (issue #14): ``trials=N`` spread round-robin or by
MetaSchedule's gradient task scheduler."""
from __future__ import annotations

import numpy as np
import pytest

from tests.compile_helpers import fast_settings


def _mlp():
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 32)).eval()
    return model, torch.randn(8, 64)


def _compile(**kwargs):
    import cwm

    model, x = _mlp()
    compiled = cwm.compile(model, example_inputs=(x,), cost_model="random", settings=fast_settings(), **kwargs)
    np.testing.assert_allclose(compiled(x.numpy()), model(x).detach().numpy(), rtol=1e-5, atol=1e-5)
    return compiled.report


def test_task_budgets_split_a_total_evenly():
    from cwm.compile.tuning_run import task_budgets

    assert task_budgets(3, 8, None) == [8, 8, 8]
    assert task_budgets(3, 8, 10) == [4, 3, 3]
    assert task_budgets(2, 8, 0) == [0, 0]


def test_round_robin_spreads_the_total():
    report = _compile(trials=24)
    assert [t["requested"] for t in report["tasks"]] == [12, 12]
    assert report["new_records"] == 24


def test_gradient_spends_the_same_total_in_one_run():
    report = _compile(trials=24, task_scheduler="gradient")
    assert report["new_records"] == 24  # 2 tasks: a first round of 12 each fits the budget exactly
    assert all(t["new"] > 0 for t in report["tasks"])


def test_gradient_in_a_pipeline_text(tmp_path):
    report = _compile(pipeline="cwm-import,cwm-keep-nan,cwm-bool-ops,cwm-partition,cwm-tune{budget=16,scheduler=gradient},"
                               "cwm-apply-db,cwm-build", work_dir=str(tmp_path))
    assert report["new_records"] == 16
    again = _compile(pipeline="cwm-import,cwm-keep-nan,cwm-bool-ops,cwm-partition,cwm-tune{budget=16,scheduler=gradient},"
                              "cwm-apply-db,cwm-build", work_dir=str(tmp_path))
    assert again["new_records"] == 0 and again["reused_records"] == 16  # the budget is spent: resumed, not redone


def test_bad_budgets_are_clear_errors():
    import cwm.compile as cc
    from cwm.compile.errors import PipelineError
    from cwm.compile.pipeline import parse

    with pytest.raises(ValueError, match="task_scheduler must be one of"):
        cc.CompileOptions(task_scheduler="fastest")
    with pytest.raises(ValueError, match="trials .the network's budget. must be None or an int >= 0"):
        cc.CompileOptions(trials=-1)
    with pytest.raises(PipelineError, match="option 'scheduler' of pass 'cwm-tune' must be one of"):
        parse("cwm-import,cwm-partition,cwm-tune{scheduler=fastest}")
