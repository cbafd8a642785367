"""MetaSchedule cost models: CWM's (:mod:`cwm.cost_model.cwm_model`), the pre-trained XGBoost
baseline (:mod:`cwm.cost_model.xgb_pretrained`) and the factory that builds them by name
(:mod:`cwm.cost_model.factory`: ``create(name, **options)``, ``registered()``).

Names are re-exported lazily: ``import cwm.cost_model`` does not import TVM or torch.
"""
from __future__ import annotations

from cwm._lazy import lazy_exports

_EXPORTS = {
    "CWMCostModel": "cwm_model", "AdaptConfig": "cwm_model",
    "build_pretrained_xgb": "xgb_pretrained", "pretrained_xgb_path": "xgb_pretrained",
    "load_pretrained_xgb": "xgb_pretrained",
    "create": "factory", "resolve": "factory", "registered": "factory", "register": "factory",
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
