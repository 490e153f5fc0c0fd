"""Lowering rules of the primitives that hold a jaxpr to call, and of autodiff's primitives.

JAX: `_custom_jvp_vjp_call_lowering` in jax/_src/custom_derivatives.py and `_remat_lowering` in
ad_checkpoint.py lower the called jaxpr *inline*: the custom rule only matters to autodiff, so
by now it is just the function it wraps. A differentiated checkpoint puts its inputs through a
`stablehlo.optimization_barrier`, so XLA cannot merge its recomputation with the forward pass
(the point of remat). A call that stays a call, stage 7's jit, is a `func.call` of a private
function (`mlir.call_primitive_lowering`; JAX: `_pjit_lowering` in pjit.py).
"""

from __future__ import annotations

from typing import Any

from stages.s02_tracing import core
from stages.s04_autodiff import ad_checkpoint, ad_util, custom_derivatives
from stages.s04_autodiff.custom_calls import custom_lin_p, raise_custom_vjp_error_on_jvp
from stages.s07_caches import jit_p

from . import hlo, ir, mlir
from .mlir import LoweringRuleContext, register_lowering


def _custom_jvp_vjp_call_lowering(ctx: LoweringRuleContext, *args: ir.Value,
                                  call_jaxpr: core.ClosedJaxpr, **params: Any
                                  ) -> list[ir.Value]:
    consts = mlir.ir_consts(call_jaxpr.consts, [v.aval for v in call_jaxpr.jaxpr.constvars])
    return mlir.jaxpr_subcomp(ctx.module_context, call_jaxpr.jaxpr, consts, *args)


def _remat_lowering(ctx: LoweringRuleContext, *args: ir.Value, jaxpr: core.Jaxpr,
                    prevent_cse: Any, differentiated: bool, **params: Any) -> list[ir.Value]:
    if isinstance(prevent_cse, bool):
        prevent_cse = (prevent_cse,) * len(args)
    if differentiated and any(prevent_cse):
        fenced = iter(hlo.optimization_barrier([x for x, p in zip(args, prevent_cse,
                                                                  strict=True) if p]))
        args = tuple(next(fenced) if p else x for x, p in zip(args, prevent_cse, strict=True))
    return mlir.jaxpr_subcomp(ctx.module_context, jaxpr, [], *args)


def _add_jaxvals_lowering(ctx: LoweringRuleContext, x: ir.Value, y: ir.Value) -> list[ir.Value]:
    return [hlo.elementwise("add", x, y)]  # the tangent sum of two paths (JAX: add_any)


def _identity_lowering(ctx: LoweringRuleContext, x: ir.Value, **params: Any) -> list[ir.Value]:
    return [x]  # a name for remat policies, a stopped gradient: nothing left to compute


register_lowering(jit_p, mlir.call_primitive_lowering)
register_lowering(custom_derivatives.custom_jvp_call_p, _custom_jvp_vjp_call_lowering)
register_lowering(custom_derivatives.custom_vjp_call_p, _custom_jvp_vjp_call_lowering)
register_lowering(ad_checkpoint.remat_p, _remat_lowering)
register_lowering(ad_checkpoint.name_p, _identity_lowering)
register_lowering(ad_util.add_jaxvals_p, _add_jaxvals_lowering)
register_lowering(ad_util.stop_gradient_p, _identity_lowering)
# the linear half of a custom_vjp under jvp: JAX's rule raises, and so does ours
register_lowering(custom_lin_p, raise_custom_vjp_error_on_jvp)
