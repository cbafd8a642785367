"""A task MetaSchedule cannot generate a design space for (issue 13, finding 10).

Two reductions feeding one element-wise epilogue (a gated MLP, ``silu(x @ W1) * (x @ W2)``) is a
valid TIR function on which MetaSchedule's multi-level tiling raises a ``ScheduleError``
(``reverse-compute-at``). ``cwm.tune`` says so in one line (``UntunableTaskError``);
``cwm.compile`` builds that task with its default schedule and tunes the rest.
"""
from __future__ import annotations

import numpy as np
import pytest

import cwm
from tests.compile_helpers import fast_settings

N, D, H, O = 16, 32, 32, 8


def gated_mlp():
    """``silu(X @ W1) * (X @ W2)`` as one PrimFunc (``main``)."""
    import tvm
    from tvm import te

    x = te.placeholder((N, D), "float32", name="X")
    w1 = te.placeholder((D, H), "float32", name="W1")
    w2 = te.placeholder((D, H), "float32", name="W2")
    k1 = te.reduce_axis((0, D), name="k1")
    k2 = te.reduce_axis((0, D), name="k2")
    a = te.compute((N, H), lambda i, j: te.sum(x[i, k1] * w1[k1, j], axis=k1), name="mm1")
    b = te.compute((N, H), lambda i, j: te.sum(x[i, k2] * w2[k2, j], axis=k2), name="mm2")
    y = te.compute((N, H), lambda i, j: a[i, j] * te.sigmoid(a[i, j]) * b[i, j], name="gate")
    return tvm.IRModule({"main": te.create_prim_func([x, w1, w2, y])})


def gated_network():
    """A Relax model: the gated MLP (untunable) and then a matmul (tunable)."""
    from tvm import relax

    bb = relax.BlockBuilder()
    x, w1, w2 = (relax.Var(n, relax.TensorType(s, "float32")) for n, s in
                 (("x", (N, D)), ("w1", (D, H)), ("w2", (D, H))))
    w3 = relax.Var("w3", relax.TensorType((H, O), "float32"))
    gated = bb.add_func(gated_mlp()["main"].with_attr("global_symbol", "gated_mlp"), "gated_mlp")
    with bb.function("main", [x, w1, w2, w3]):
        with bb.dataflow():
            g = bb.emit(relax.call_tir(gated, [x, w1, w2], relax.TensorType((N, H), "float32")))
            out = bb.emit_output(bb.emit(relax.op.matmul(g, w3)))
        bb.emit_func_output(out)
    return bb.get()


def test_tune_says_the_task_cannot_be_tuned(tmp_path):
    with pytest.raises(cwm.UntunableTaskError) as caught:
        cwm.tune(gated_mlp(), trials=4, cost_model="random", work_dir=str(tmp_path), settings=fast_settings())
    error = caught.value
    assert "reverse-compute-at" in error.reason and "producer" in error.reason
    assert "\n" not in str(error) and len(str(error)) < 600 and "T.sblock" not in str(error)
    assert "cannot be tuned" in str(error) and "default schedule" in str(error)
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)  # no TVM dump
    assert not (tmp_path / "database_tuning_record.json").exists()  # checked before anything ran


def test_tune_cli_one_line(tmp_path, capsys):
    from cwm.tuning.cli import main

    script = tmp_path / "gated.py"
    script.write_text("from tests.test_untunable_task import gated_mlp\nmod = gated_mlp()\n")
    code = main([str(script), "--trials", "4", "--cost-model", "random", "--work-dir", str(tmp_path / "w")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("cwm tune: task 'main' cannot be tuned: ") and err.count("\n") == 1, err


def test_compile_builds_it_with_the_default_schedule(tmp_path):
    from cwm.compile.cli import summary

    model = cwm.compile(gated_network(), trials_per_task=2, cost_model="random", work_dir=tmp_path,
                        settings=fast_settings())
    tasks = {t["name"]: t for t in model.report["tasks"]}
    assert set(tasks) == {"gated_mlp", "matmul"}
    assert tasks["gated_mlp"]["status"] == "untunable" and tasks["gated_mlp"]["new"] == 0
    assert "reverse-compute-at" in tasks["gated_mlp"]["reason"]
    assert tasks["matmul"]["status"] == "tuned" and tasks["matmul"]["new"] == 2  # the rest is tuned
    text = summary(model, "out", 1.0)
    assert "1 task(s) could not be tuned and use their default schedule" in text
    assert "gated_mlp: MetaSchedule's design-space generation failed" in text
    rng = np.random.default_rng(0)
    x, w1, w2, w3 = (rng.standard_normal(s).astype("float32") for s in ((N, D), (D, H), (D, H), (H, O)))
    a = x @ w1
    expected = (a / (1 + np.exp(-a)) * (x @ w2)) @ w3
    np.testing.assert_allclose(model(x, w1, w2, w3), expected, rtol=1e-4, atol=1e-3)
