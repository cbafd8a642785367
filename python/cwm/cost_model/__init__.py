"""MetaSchedule cost models backed by CWM (see :mod:`cwm.cost_model.cwm_model`).

Names are re-exported lazily: ``import cwm.cost_model`` does not import TVM or torch.
"""
from __future__ import annotations

from importlib import import_module

_EXPORTS = {
    "CWMCostModel": "cwm_model", "AdaptConfig": "cwm_model",
    "build_pretrained_xgb": "xgb_pretrained", "pretrained_xgb_path": "xgb_pretrained",
    "load_pretrained_xgb": "xgb_pretrained",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(import_module(f"cwm.cost_model.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'cwm.cost_model' has no attribute {name!r}")


def __dir__():
    return __all__
