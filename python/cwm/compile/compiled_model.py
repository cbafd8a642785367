"""``CompiledModel``: a built model you call with NumPy arrays or torch tensors.

``model(x)`` checks every input against the signature (count, names, shape, dtype) and raises
:class:`~cwm.compile.errors.InputError` naming the input and what was expected; it returns a
NumPy array (a tuple of them for several outputs), or torch tensors when the inputs were
torch tensors. The weights are uploaded once, on the first call. A CPU compile transforms (and
packs) them at compile time (``param_mode == "transformed"``, :mod:`cwm.compile.weight_layout`);
a model with lifted weight transforms (``"lifted"``: a cuda compile, or an artifact written before
that) runs ``main_transform_params`` once, on the first call. :meth:`export` writes the artifact directory (:mod:`cwm.compile.artifact`) that
:func:`load` (``cwm.load``) reads back.
"""
from __future__ import annotations

import sys
import time

import numpy as np

from cwm.compile.errors import CompileError, InputError


class CompiledModel:
    """A compiled model: executable, target, signature, weights, and the compile report."""

    def __init__(self, executable, target, inputs, outputs, params=None, param_mode: str = "none",
                 report=None, pipeline: str = "", library_path=None, database_files=(), frontend: str = "",
                 database_data=None):
        self.executable = executable
        self.target = target
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.params = dict(params or {})
        from cwm.compile.weight_layout import PARAM_MODES

        if param_mode not in PARAM_MODES:
            raise CompileError(f"unknown weight mode {param_mode!r} (this cwm knows {', '.join(PARAM_MODES)}); "
                               "the model was made by another cwm version: compile it again")
        self.param_mode = param_mode
        #: what the compile did (tasks, trials, timings, latencies); a JSON-able dict
        self.report = dict(report or {})
        self.pipeline = pipeline
        self.frontend = frontend
        #: the ``.so`` this model was loaded from (None for a fresh compile)
        self.library_path = library_path
        #: MetaSchedule JSON database files holding the tuning records used
        self.database_files = list(database_files)
        #: ``{file name: bytes}`` of database files kept in memory (a compile whose temporary work dir
        #: was removed); export writes them like :attr:`database_files`
        self.database_data = dict(database_data or {})
        #: sha256 of the artifact's ``manifest.json`` once exported or loaded (None before): the value
        #: to pin with ``cwm.load(dir, expect_sha256=...)``, see docs/trust.md
        self.artifact_sha256 = None
        self._vm = None
        self._weights = None

    # ------------------------------------------------------------------------------ running
    @property
    def device(self):
        import tvm

        kind = self.target.kind.name
        return tvm.runtime.device("cpu" if kind == "llvm" else kind, 0)

    def _ready(self):
        """The ``relax.VirtualMachine`` and the device weights, made on first use."""
        if self._vm is None:
            import tvm
            from tvm import relax

            device = self.device
            if not device.exist:
                raise CompileError(f"this model was compiled for {self.target.kind.name!r} and this machine has "
                                   "no such device; export() it and load it where there is one")
            vm = relax.VirtualMachine(self.executable, device)
            weights = [tvm.runtime.tensor(np.asarray(v, order="C"), device) for v in self.params.values()]
            if self.param_mode == "lifted":
                weights = list(vm["main_transform_params"](weights))
            self._vm, self._weights = vm, weights
        return self._vm, self._weights

    def _arguments(self, args, kwargs) -> tuple:
        """``(list of numpy inputs, were they torch tensors)`` checked against :attr:`inputs`."""
        names = [spec.name for spec in self.inputs]
        signature = ", ".join(str(spec) for spec in self.inputs)
        if len(args) > len(self.inputs):
            raise InputError(f"the model takes {len(self.inputs)} input(s) ({signature}), got {len(args)}")
        given = dict(zip(names, args))
        for key, value in kwargs.items():
            if key not in names:
                raise InputError(f"unknown input {key!r}; the model's inputs: {signature}")
            if key in given:
                raise InputError(f"input {key!r} given twice (by position and by name)")
            given[key] = value
        missing = [n for n in names if n not in given]
        if missing:
            raise InputError(f"missing input(s) {missing}; the model's inputs: {signature}")
        arrays, torch_in = [], False
        for spec in self.inputs:
            array, was_torch = _as_array(given[spec.name], spec)
            torch_in = torch_in or was_torch
            arrays.append(array)
        return arrays, torch_in

    def __call__(self, *args, **kwargs):
        import tvm

        arrays, torch_in = self._arguments(args, kwargs)
        vm, weights = self._ready()
        device = self.device
        result = vm["main"](*[tvm.runtime.tensor(a, device) for a in arrays], *weights)
        outputs = [o.numpy() for o in result] if _is_sequence(result) else [result.numpy()]
        if torch_in:
            import torch

            outputs = [_torch_from_numpy(o, torch) for o in outputs]
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def example_inputs(self, seed: int = 0) -> list:
        """Random NumPy inputs matching the signature (N(0,1) floats, small ints)."""
        rng = np.random.default_rng(seed)
        out = []
        for spec in self.inputs:
            dtype = np.dtype(spec.dtype)
            if dtype.kind == "f":
                out.append(rng.standard_normal(spec.shape).astype(dtype))
            elif dtype.kind == "b":
                out.append(rng.integers(0, 2, spec.shape).astype(dtype))
            else:
                out.append(rng.integers(0, 100, spec.shape).astype(dtype))
        return out

    def benchmark(self, *inputs, runs: int = 20, number: int = 10) -> dict:
        """Latency of ``main`` (us): median/mean/min/max over ``runs`` repeats of ``number`` calls
        (``VirtualMachine.time_evaluator``); random inputs when none are given."""
        import tvm

        arrays, _ = self._arguments(inputs or tuple(self.example_inputs()), {})
        vm, weights = self._ready()
        device = self.device
        args = [tvm.runtime.tensor(a, device) for a in arrays] + list(weights)
        start = time.perf_counter()
        timer = vm.time_evaluator("main", device, number=number, repeat=runs)
        results = np.asarray(timer(*args).results) * 1e6
        return {"median_us": float(np.median(results)), "mean_us": float(results.mean()),
                "min_us": float(results.min()), "max_us": float(results.max()), "runs": runs, "number": number,
                "wall_s": time.perf_counter() - start}

    # ---------------------------------------------------------------------------- artifacts
    def export(self, path) -> str:
        """Write the artifact directory ``path`` (:func:`cwm.compile.artifact.export`); returns it."""
        from cwm.compile.artifact import export

        return export(self, path)

    def __repr__(self) -> str:
        ins = ", ".join(str(s) for s in self.inputs)
        outs = ", ".join(str(s) for s in self.outputs)
        return f"CompiledModel(target={self.target.kind.name!r}, inputs=[{ins}], outputs=[{outs}])"


def load(path, check_versions: bool = True, check_target: bool = True, expect_sha256=None) -> CompiledModel:
    """The :class:`CompiledModel` in the folder ``path``, verified first (:func:`cwm.compile.artifact.read`).

    ``expect_sha256``: the sha256 (hex) that ``manifest.json`` must have
    (:func:`~cwm.compile.artifact.artifact_sha256`); a different one is refused before anything else
    is read. Loading runs the artifact's native code: load only artifacts you built or whose hash
    you pinned (docs/trust.md)."""
    from cwm.compile.artifact import read

    contents = read(path, check_versions=check_versions, check_target=check_target, expect_sha256=expect_sha256)
    digest = contents.pop("artifact_sha256")
    model = CompiledModel(**contents)
    model.artifact_sha256 = digest
    return model


def _is_sequence(value) -> bool:
    import tvm

    return not isinstance(value, tvm.runtime.Tensor) and hasattr(value, "__len__")


def _torch_to_numpy(value, spec, torch):
    """The NumPy array of a torch tensor. NumPy has no bfloat16 of its own: a ``torch.bfloat16``
    tensor becomes an ``ml_dtypes`` bfloat16 array (the same bits) when the model takes bfloat16;
    for a model that takes another dtype, or a torch dtype NumPy cannot hold, :class:`InputError`
    names the expected dtype (inputs are never converted implicitly)."""
    value = value.detach().cpu()
    if value.dtype == torch.bfloat16 and spec.dtype == "bfloat16":
        import ml_dtypes

        return value.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    try:
        return value.numpy()
    except TypeError:  # "Got unsupported ScalarType BFloat16" (float8, ... likewise)
        torch_name = {"float32": "float", "float64": "double", "float16": "half", "int64": "long",
                      "int32": "int"}.get(spec.dtype)
        hint = f"x.{torch_name}()" if torch_name else f"x.to(torch.{spec.dtype})"
        raise InputError(f"input {spec.name!r} is a {value.dtype} tensor, the model expects {spec.dtype} ({spec}); "
                         f"convert it, e.g. {hint}") from None


def _torch_from_numpy(array, torch):
    """A torch tensor of a NumPy output; ``ml_dtypes`` bfloat16 becomes ``torch.bfloat16``."""
    if array.dtype.name == "bfloat16":
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def _as_array(value, spec) -> tuple:
    """``(numpy array, was it a torch tensor)``, checked against ``spec``."""
    torch = sys.modules.get("torch")
    was_torch = torch is not None and isinstance(value, torch.Tensor)
    if was_torch:
        array = _torch_to_numpy(value, spec, torch)
    elif isinstance(value, np.ndarray):
        array = value
    elif hasattr(value, "numpy") and callable(value.numpy):  # a tvm.runtime.Tensor
        array = value.numpy()
    elif isinstance(value, (list, tuple, int, float, bool, np.generic)):
        array = np.asarray(value, dtype=spec.dtype)  # python data: take the model's dtype
    else:
        raise InputError(f"input {spec.name!r} must be a numpy array or a torch tensor, not "
                         f"{type(value).__module__}.{type(value).__name__}")
    if tuple(array.shape) != tuple(spec.shape):
        raise InputError(f"input {spec.name!r} has shape {tuple(array.shape)}, the model expects "
                         f"{tuple(spec.shape)} ({spec})")
    if array.dtype != np.dtype(spec.dtype):
        raise InputError(f"input {spec.name!r} has dtype {array.dtype}, the model expects {spec.dtype} "
                         f"({spec}); convert it, e.g. x.astype({spec.dtype!r})")
    return np.asarray(array, order="C"), was_torch  # keeps 0-d (ascontiguousarray makes it 1-d)
