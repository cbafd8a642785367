"""Partitioning: a Relax module legalized and fused into the TIR kernels that are tuned.

:func:`fuse` is the one pass sequence that turns a frontend's Relax module into fused TIR
functions (MetaSchedule's tasks): task extraction (:func:`cwm.frontends.tasks.extract_tasks`),
``cwm.compile``'s ``cwm-partition`` pass, its build-failure diagnosis
(:mod:`cwm.compile.failure_origin`) and the CUDA build (:func:`cwm.targets.cuda.build_cuda`)
all use it, so the task names they see match the tuning database. Imports only TVM.
"""
from __future__ import annotations


def legalize_passes(custom=None) -> list:
    """DecomposeOpsForInference -> LegalizeOps (``custom``: ``{op name: legalization}`` overrides)."""
    from tvm import relax

    return [relax.transform.DecomposeOpsForInference(), relax.transform.LegalizeOps(custom)]


def fusion_passes() -> list:
    """AnnotateTIROpPattern -> FoldConstant -> FuseOps: the grouping, before FuseTIR merges each group."""
    from tvm import relax

    return [relax.transform.AnnotateTIROpPattern(), relax.transform.FoldConstant(), relax.transform.FuseOps()]


def fuse(mod, target, custom_legalize=None):
    """LegalizeOps -> AnnotateTIROpPattern -> FoldConstant -> FuseOps -> FuseTIR under ``target``
    (``custom_legalize``: ``{op name: legalization}`` overrides, e.g. ``cwm.compile``'s reshape)."""
    import tvm
    from tvm import relax

    with target:
        return tvm.transform.Sequential(legalize_passes(custom_legalize) + fusion_passes()
                                        + [relax.transform.FuseTIR()])(mod)
