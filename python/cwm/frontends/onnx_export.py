"""Any ``torch.nn.Module`` -> an ONNX file, with the dynamo exporter (``torch.onnx.export(dynamo=True)``).

The other exporters here (:func:`cwm.frontends.zoo.to_onnx`, :func:`cwm.frontends.tiny_cnn.export_onnx`)
export one fixed network each with the TorchScript exporter at opset 17. That exporter rejects
what current ``transformers`` decoders trace to (LLaMA, Qwen2, Mistral: "Exporting the operator
'aten::diff' to ONNX opset version 17 is not supported"); the dynamo exporter handles them. It
needs the ``onnxscript`` package (pinned in requirements.txt).

Opset: the dynamo exporter's op library (onnxscript's torchlib) writes opset 18, the default
here, and TVM 0.27's Relax ONNX frontend converts it (it picks each op's newest converter
<= the model's opset; ReduceMean & co. take ``axes`` as an input from 18). Lower opsets are
refused: asked for 17, torch 2.13 logs that its down-conversion failed ("No initializer or
constant input to node found", ReduceMean axes) and silently writes opset 18 anyway, and
converting the written file with ``onnx.version_converter`` gives a model ONNX Runtime rejects
("Unrecognized attribute: noop_with_empty_axes for operator ReduceMean").

The file's constants are initializers (shape/axes operands included);
:func:`cwm.frontends.onnx_fixes.fix_constant_initializers` turns the non-weight ones back into
``Constant`` nodes when the file is imported.
"""
from __future__ import annotations

import os

#: The opset the dynamo exporter writes natively (and the lowest :func:`export_onnx` accepts).
DYNAMO_OPSET = 18


def require_onnxscript() -> None:
    """``ModuleNotFoundError`` naming the package unless ``onnxscript`` can be imported."""
    import importlib.util

    if importlib.util.find_spec("onnxscript") is None:
        raise ModuleNotFoundError(
            "torch.onnx.export(dynamo=True) needs the 'onnxscript' package, which is not installed; "
            "install the pinned stack with `pip install -r requirements.txt -c constraints.txt` "
            "(or `make venv`)", name="onnxscript")


def export_onnx(module, example_inputs, path, opset: int = DYNAMO_OPSET, input_names=None,
                output_names=None, external_data: bool = False) -> str:
    """Export ``module`` (put in eval mode) called on ``example_inputs`` (a tensor or a tuple of
    them) to ``path`` with the dynamo exporter at ``opset`` (>= 18), and return ``path``.

    Shapes are static (those of ``example_inputs``). ``input_names`` / ``output_names`` name the
    graph's inputs and outputs (default: the ``forward`` argument names / torch's). Weights are
    stored inside the file unless ``external_data`` (needed past 2 GB). Without external data the
    file is written under a temporary name and renamed, so a failed export leaves nothing at
    ``path``. The written opset is checked to be ``opset``.
    """
    import warnings

    import onnx
    import torch

    opset = int(opset)
    if opset < DYNAMO_OPSET:
        raise ValueError(f"opset {opset}: the dynamo exporter writes opset {DYNAMO_OPSET} and cannot convert "
                         f"LLM-style graphs down reliably; use opset >= {DYNAMO_OPSET} (TVM's ONNX frontend "
                         f"handles it) or the TorchScript exporter (dynamo=False) for opset {opset}")
    require_onnxscript()
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    path = os.fspath(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    # weights inside the file: write a temporary name, then rename (a failed export leaves nothing
    # at path); external data: write path itself (the model refers to its data file by name)
    root, ext = os.path.splitext(path)
    tmp = path if external_data else f"{root}.{os.getpid()}.tmp{ext or '.onnx'}"
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")  # deprecation notices from inside torch.export / transformers
            torch.onnx.export(module.eval(), tuple(example_inputs), tmp, dynamo=True, opset_version=opset,
                              input_names=input_names, output_names=output_names,
                              external_data=external_data, verbose=False)
        written = _default_opset(onnx.load(tmp, load_external_data=False))
        if written != opset:
            raise RuntimeError(f"torch.onnx.export(dynamo=True, opset_version={opset}) wrote opset {written}")
        if tmp != path:
            os.replace(tmp, path)
    finally:
        if tmp != path and os.path.exists(tmp):
            os.remove(tmp)
    return path


def _default_opset(model) -> int | None:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return int(entry.version)
    return None
