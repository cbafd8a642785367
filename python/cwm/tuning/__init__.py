"""Fast MetaSchedule tuning on small CPU machines (see :mod:`cwm.tuning.tune`).

Names are re-exported lazily, so ``import cwm.tuning`` does not import TVM.
"""
from cwm._lazy import lazy_exports

_EXPORTS = {
    "tune_tir": "tune", "TuneOutcome": "tune", "make_cost_model": "tune", "summarize": "tune",
    "tune": "tune", "TuneResult": "tune", "COST_MODELS": "tune", "check_workload": "tune",
    "host_target": "target", "resolve_target": "target", "DEFAULT_CUDA_TAG": "target",
    "FastSettings": "settings", "STOCK": "settings",
    "InProcessBuilder": "builder", "PooledBuilder": "pooled_builder",
    "InProcessRunner": "runner", "PooledRunner": "pooled_runner",
    "fuse": "relax_model", "tune_model": "relax_model", "apply_database": "relax_model",
    "ModelTuneOutcome": "relax_model",
    "UntunableTaskError": "design_space", "check_tunable": "design_space",
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
