"""Fast MetaSchedule tuning on small CPU machines (see :mod:`cwm.tuning.tune`).

Names are re-exported lazily, so ``import cwm.tuning`` does not import TVM. Target resolution
(:mod:`cwm.target_spec`) and partitioning (:mod:`cwm.partition`) live lower in the package;
their names are re-exported here too. Cost models are built by :mod:`cwm.cost_model.factory`.
"""
from cwm._lazy import lazy_exports

_EXPORTS = {
    "tune_tir": "tune", "TuneOutcome": "tune", "summarize": "tune",
    "tune": "tune", "TuneResult": "tune", "check_workload": "tune",
    "host_target": "cwm.target_spec", "resolve_target": "cwm.target_spec", "DEFAULT_CUDA_TAG": "cwm.target_spec",
    "FastSettings": "settings", "STOCK": "settings", "SEARCH_PROFILES": "settings",
    "search_settings": "settings",
    "InProcessBuilder": "builder", "PooledBuilder": "pooled_builder",
    "InProcessRunner": "runner", "PooledRunner": "pooled_runner",
    "fuse": "cwm.partition", "tune_model": "relax_model", "apply_database": "relax_model",
    "ModelTuneOutcome": "relax_model",
    "UntunableTaskError": "design_space", "check_tunable": "design_space",
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
