"""Running one of the ``cwm-*`` Relax rewriters over a module (shared by their passes)."""
from __future__ import annotations


def rewrite_relax_functions(mutator, mod):
    """Visit every Relax function of ``mod`` with ``mutator`` (a ``PyExprMutator`` built on
    ``mod``), put the results back, and return ``(rewritten module, mutator)``; PrimFuncs are kept."""
    from tvm import relax

    for gv, func in mod.functions_items():
        if isinstance(func, relax.Function):
            mutator.builder_.update_func(gv, mutator.visit_expr(func))
    return mutator.builder_.get(), mutator
