"""Partitioning: a Relax module legalized and fused into the TIR kernels that are tuned.

:func:`fuse` is the one pass sequence that turns a frontend's Relax module into fused TIR
functions (MetaSchedule's tasks): task extraction (:func:`cwm.frontends.tasks.extract_tasks`),
``cwm.compile``'s ``cwm-partition`` pass, its build-failure diagnosis
(:mod:`cwm.compile.failure_origin`) and the CUDA build (:func:`cwm.targets.cuda.build_cuda`)
all use it, so the task names they see match the tuning database. Imports only TVM.
"""
from __future__ import annotations


def fuse(mod, target):
    """LegalizeOps -> AnnotateTIROpPattern -> FoldConstant -> FuseOps -> FuseTIR under ``target``."""
    import tvm
    from tvm import relax

    passes = [relax.transform.DecomposeOpsForInference(), relax.transform.LegalizeOps(),
              relax.transform.AnnotateTIROpPattern(), relax.transform.FoldConstant(),
              relax.transform.FuseOps(), relax.transform.FuseTIR()]
    with target:
        return tvm.transform.Sequential(passes)(mod)
