"""Baseline cost models for the offline ranking evaluation (:mod:`cwm.model.evaluate`).

Submodules import TVM / XGBoost lazily; import them directly, e.g.
``from cwm.model.baselines.ms_xgb import MsXgbBaseline``.
"""
