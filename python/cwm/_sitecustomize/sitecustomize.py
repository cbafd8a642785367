"""Patch ``inspect.stack`` at interpreter start-up (see ``cwm/tvm_patch.py`` for why).

``cwm.tvm_patch.install()`` puts this folder first on ``PYTHONPATH`` so that every child
Python process (MetaSchedule popen workers, rpc_server, LocalBuilder) imports this file.
It loads ``../tvm_patch.py`` by path — importing the ``cwm`` package here would be too early
and too heavy — then runs any other ``sitecustomize`` further down ``sys.path`` (which this
file shadows). It must never raise: a failure prints one warning line and start-up goes on.
"""


def _patch():
    import importlib.util
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(
        "_cwm_tvm_patch", os.path.join(os.path.dirname(here), "tvm_patch.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules.setdefault("_cwm_tvm_patch", module)
    module.patch_inspect()
    return here


def _chain(here):
    import importlib.machinery
    import importlib.util
    import os
    import sys

    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


try:
    _chain(_patch())
except Exception as _error:  # noqa: BLE001 - start-up must never fail because of us
    import sys as _sys

    print(f"cwm sitecustomize: inspect.stack patch not applied ({_error!r})", file=_sys.stderr)

