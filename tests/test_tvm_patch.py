"""Contracts of cwm.tvm_patch: same frame records as inspect.stack, idempotent install,
inherited by child interpreters, harmless when broken, and TVMScript still parses."""
import inspect
import os
import shutil
import subprocess
import sys

import pytest

from cwm import tvm_patch

FIELDS = ("filename", "lineno", "function", "code_context", "index")


def _both(context=1):
    return tvm_patch.original_stack()(context), tvm_patch.fast_stack(context)  # one line: same lineno


@pytest.mark.parametrize("context", [1, 3, 0])
def test_fast_stack_matches_inspect_stack(context):
    stock, fast = _both(context)
    assert len(fast) == len(stock)
    assert fast[0].function == "_both"
    for want, got in zip(stock[:5], fast[:5]):
        assert want.frame is got.frame
        assert [getattr(got, f) for f in FIELDS] == [getattr(want, f) for f in FIELDS]
        assert got.positions.lineno == want.positions.lineno


def test_install_is_idempotent(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/somewhere/else")
    tvm_patch.install()
    tvm_patch.install()
    parts = os.environ["PYTHONPATH"].split(os.pathsep)
    assert parts == [tvm_patch.SITE_DIR, "/somewhere/else"]
    assert inspect.stack is tvm_patch.fast_stack or getattr(inspect.stack, "_cwm_fast_stack", False)
    assert tvm_patch.is_installed()
    assert tvm_patch.original_stack().__module__ == "inspect"


def test_install_with_empty_pythonpath(monkeypatch):
    monkeypatch.delenv("PYTHONPATH", raising=False)
    tvm_patch.install()
    assert os.environ["PYTHONPATH"] == tvm_patch.SITE_DIR


_PROBE = ("import inspect, sys; print(inspect.stack.__module__, "
          "getattr(inspect.stack, '_cwm_fast_stack', False), 'tvm' in sys.modules)")


def test_child_process_inherits_patch():
    assert tvm_patch.is_installed()  # `import cwm` installed it
    out = subprocess.run([sys.executable, "-c", _PROBE], env=dict(os.environ),
                         capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["_cwm_tvm_patch", "True", "False"]  # the patch never imports tvm
    assert out.stderr == ""
    stock = subprocess.run([sys.executable, "-c", _PROBE], env=tvm_patch.env_without_patch(),
                           capture_output=True, text=True, check=True)
    assert stock.stdout.split() == ["inspect", "False", "False"]


def test_sitecustomize_never_raises(tmp_path):
    # a copy without ../tvm_patch.py next to it cannot load the patch: warn once, start anyway
    shutil.copy(os.path.join(tvm_patch.SITE_DIR, "sitecustomize.py"), tmp_path / "sitecustomize.py")
    out = subprocess.run([sys.executable, "-c", _PROBE], env={**os.environ, "PYTHONPATH": str(tmp_path)},
                         capture_output=True, text=True)
    assert out.returncode == 0
    assert out.stdout.split() == ["inspect", "False", "False"]
    assert len(out.stderr.strip().splitlines()) == 1 and "not applied" in out.stderr


def _make_add(n):
    from tvm.script import tirx as T

    @T.prim_func(s_tir=True)
    def add_one(a: T.Buffer((n,), "float32"), b: T.Buffer((n,), "float32")):
        for i in range(n):
            with T.sblock("b"):
                vi = T.axis.spatial(n, i)
                b[vi] = a[vi] + T.float32(1)

    return add_one


def test_tvmscript_parses_under_patch():
    import numpy as np
    import tvm
    from tvm.script import ir as I
    from tvm.script import tirx as T

    assert getattr(inspect.stack, "_cwm_fast_stack", False)
    func = _make_add(8)  # shape captured from the enclosing function's locals
    assert [int(d) for d in tvm.s_tir.meta_schedule.arg_info.ArgInfo.from_prim_func(func)[0].shape] == [8]

    @I.ir_module
    class Module:  # class scope detection reads the caller's code_context
        @T.prim_func(s_tir=True)
        def main(a: T.Buffer((4,), "float32"), b: T.Buffer((4,), "float32")):
            for i in range(4):
                with T.sblock("b"):
                    vi = T.axis.spatial(4, i)
                    b[vi] = a[vi] * T.float32(2)

    assert isinstance(Module, tvm.IRModule)
    lib = tvm.compile(Module, target="llvm")
    a = tvm.runtime.tensor(np.arange(4, dtype="float32"))
    b = tvm.runtime.tensor(np.zeros(4, "float32"))
    lib["main"](a, b)
    np.testing.assert_allclose(b.numpy(), [0, 2, 4, 6])
