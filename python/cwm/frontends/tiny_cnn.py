"""A tiny CNN (conv 3->16 3x3 pad 1, ReLU, flatten, linear -> 10) exported to ONNX.

Input ``x``: float32 ``1x3x32x32``; output ``y``: ``1x10``. Weights are random but fixed by
``seed``, so every export of the same seed is the same model.
"""
from __future__ import annotations

INPUT_NAME = "x"
OUTPUT_NAME = "y"
INPUT_SHAPE = (1, 3, 32, 32)
NUM_CLASSES = 10
OPSET = 17


def build_model(seed: int = 0):
    """The ``torch.nn.Module`` in eval mode, weights drawn with ``torch.manual_seed(seed)``."""
    import torch
    from torch import nn

    torch.manual_seed(seed)
    channels, _, height, width = (16, *INPUT_SHAPE[1:])
    model = nn.Sequential(
        nn.Conv2d(INPUT_SHAPE[1], channels, kernel_size=3, padding=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(channels * height * width, NUM_CLASSES),
    )
    return model.eval()


def example_input(seed: int = 0):
    """A float32 numpy input of :data:`INPUT_SHAPE` drawn from N(0, 1) with ``seed``."""
    import numpy as np

    return np.random.default_rng(seed).standard_normal(INPUT_SHAPE).astype("float32")


def export_onnx(path: str, seed: int = 0) -> str:
    """Write the model to ``path`` (opset 17, TorchScript exporter) and return ``path``."""
    import os
    import warnings

    import torch

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    model = build_model(seed)
    dummy = torch.from_numpy(example_input(seed))
    with warnings.catch_warnings():  # the TorchScript exporter is deprecated but works
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(model, (dummy,), path, input_names=[INPUT_NAME],
                          output_names=[OUTPUT_NAME], opset_version=OPSET, dynamo=False)
    return path
