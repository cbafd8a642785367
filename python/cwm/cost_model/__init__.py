"""MetaSchedule cost models backed by CWM (see :mod:`cwm.cost_model.cwm_model`).

Names are re-exported lazily: ``import cwm.cost_model`` does not import TVM or torch.
"""
from __future__ import annotations

from cwm._lazy import lazy_exports

_EXPORTS = {
    "CWMCostModel": "cwm_model", "AdaptConfig": "cwm_model",
    "build_pretrained_xgb": "xgb_pretrained", "pretrained_xgb_path": "xgb_pretrained",
    "load_pretrained_xgb": "xgb_pretrained",
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
