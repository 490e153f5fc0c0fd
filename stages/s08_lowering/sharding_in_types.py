"""Where a value's type holds a sharding (stage 11's Explicit mesh axes), its lowering pins it.

JAX: `mlir.lower_with_sharding_in_types`, which most lowering rules in jax/_src/lax/lax.py call
on their results. Before stage 11 no type holds a sharding and every rule's result passes as it
is; stage 11 appends to `sharding_in_types_lowering` the function that writes the constraint
(`sdy.sharding_constraint` or GSPMD's `custom_call @Sharding`), and from then on `_get_rule`
hands back each rule wrapped by `pinned`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stages.s02_tracing import core
from stages.s02_tracing.vma import has_jaxpr

from . import ir

# how stage 11 pins a value to the sharding its type holds (JAX: wrap_with_sharding_op)
sharding_in_types_lowering: list[Callable[[ir.Value, core.ShapedArray], ir.Value]] = []


def lower_with_sharding_in_types(op: ir.Value, aval: core.ShapedArray) -> ir.Value:
    """JAX: mlir.lower_with_sharding_in_types. A result whose type holds a sharding (only on
    stage 11's Explicit meshes) is constrained to it; any other passes as it is."""
    if aval.sharding is None or not sharding_in_types_lowering:
        return op
    return sharding_in_types_lowering[0](op, aval)


def pinned(rule: Callable[..., list[ir.Value]]) -> Callable[..., list[ir.Value]]:
    """The rule, its results constrained to the shardings their types hold (stage 11)."""
    def rule_pinned(ctx: Any, *args: ir.Value, **params: Any) -> list[ir.Value]:
        outs = rule(ctx, *args, **params)
        if has_jaxpr(params):  # a call or a loop: its body's equations are pinned
            return outs
        return [lower_with_sharding_in_types(o, a)
                for o, a in zip(outs, ctx.avals_out, strict=True)]
    return rule_pinned
