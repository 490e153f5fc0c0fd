"""Lowering rules of the elementwise primitives: arithmetic, comparisons, select_n, convert.

JAX: the `mlir.register_lowering` calls of jax/_src/lax/lax.py (`_nary_lower_hlo`,
`_compare_lower_hlo`, `_select_hlo_lowering`, `_convert_element_type_lower`,
`_integer_pow_lowering`, `_pow_lower`, `_sign_lower_hlo`, `_round_lower`, logistic's
`lower_fun`) and of lax/special.py (erf). Most primitives are one StableHLO op; a rank-0
operand (`x * 2.0`) is broadcast to the output's shape first, because StableHLO never
broadcasts implicitly. Integer `div` and `rem` are StableHLO's, which are XLA's: they round
toward zero, and x / 0 and MIN / -1 have fixed answers (stage 2's impls follow them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stages.s02_tracing import lax

from . import hlo, ir, mlir
from .mlir import LoweringRuleContext, aval_to_ir_type, register_lowering


# --8<-- [start:nary]
def nary_lower_hlo(op: str, ctx: LoweringRuleContext, *args: ir.Value, **params: Any
                   ) -> list[ir.Value]:
    """One elementwise op (`op` names it: "add", "sine", ...) after broadcasting rank-0 args."""
    # JAX: lax._nary_lower_hlo
    (aval_out,) = ctx.avals_out
    args = mlir.multi_broadcast_in_dim(args, ctx.avals_in, aval_out.shape,
                                       aval_out.sharding)
    return [hlo.elementwise(op, *args, result_type=aval_to_ir_type(aval_out))]
# --8<-- [end:nary]


def _nary(op: str):
    def rule(ctx: LoweringRuleContext, *args: ir.Value, **params: Any) -> list[ir.Value]:
        return nary_lower_hlo(op, ctx, *args)
    rule.__name__ = f"_{op}_lowering"
    return rule


def _erf_lowering(ctx: LoweringRuleContext, x: ir.Value, **params: Any) -> list[ir.Value]:
    return [hlo.chlo("erf", x)]  # a CHLO op: XLA expands it into a polynomial


def _sign_lowering(ctx: LoweringRuleContext, x: ir.Value) -> list[ir.Value]:
    (aval,) = ctx.avals_in
    if aval.dtype.kind != "u":
        return [hlo.elementwise("sign", x)]
    # stablehlo.sign has no unsigned form: 0 stays 0, anything else is 1
    is_zero = mlir.compare_hlo(x, mlir.full_like_aval(0, aval), "EQ", aval.dtype, "UNSIGNED")
    return [hlo.select(is_zero, mlir.full_like_aval(0, aval), mlir.full_like_aval(1, aval))]


def _round_lowering(ctx: LoweringRuleContext, x: ir.Value, *, rounding_method: Any
                    ) -> list[ir.Value]:
    if rounding_method == lax.RoundingMethod.AWAY_FROM_ZERO:
        return [hlo.elementwise("round_nearest_afz", x)]
    return [hlo.elementwise("round_nearest_even", x)]


def _logistic_impl(x: Any, **params: Any) -> Any:
    one = np.array(1, x.dtype)[()]  # JAX: lax._const(x, 1), a strong literal
    return lax.div(one, lax.add(one, lax.exp(lax.neg(x))))


def _integer_pow(x: Any, *, y: int) -> Any:
    """x ** y by repeated squaring, as lax ops (JAX: lax._integer_pow)."""
    if y == 0:
        return lax.full_like(x, 1)
    is_reciprocal = y < 0
    y = -y if is_reciprocal else y
    acc = None
    while y > 0:
        if y & 1:
            acc = x if acc is None else lax.mul(acc, x)
        y >>= 1
        if y > 0:
            x = lax.mul(x, x)
    return lax.div(lax.full_like(acc, 1), acc) if is_reciprocal else acc


def _integer_pow_lowering(ctx: LoweringRuleContext, x: ir.Value, *, y: int) -> list[ir.Value]:
    # the common small powers directly; the rest as the lax program above
    if y == 1:
        return [x]
    if y == 2:
        return [hlo.elementwise("multiply", x, x)]
    if y == 3:
        return [hlo.elementwise("multiply", hlo.elementwise("multiply", x, x), x)]
    if y == -1:
        return [hlo.elementwise("divide", mlir.full_like_aval(1, ctx.avals_in[0]), x)]
    return mlir.lower_fun(_integer_pow, multiple_results=False)(ctx, x, y=y)


def _pow_lowering(ctx: LoweringRuleContext, x: ir.Value, y: ir.Value) -> list[ir.Value]:
    x_aval, y_aval = ctx.avals_in
    if x_aval.dtype != y_aval.dtype:  # an integer exponent: XLA's power wants one dtype
        y_aval = y_aval.update(dtype=ctx.avals_out[0].dtype)
        y = hlo.convert(y, aval_to_ir_type(y_aval))
        ctx = ctx.replace(avals_in=[x_aval, y_aval])
    return nary_lower_hlo("power", ctx, x, y)


def _compare_lowering(direction: str):
    def rule(ctx: LoweringRuleContext, x: ir.Value, y: ir.Value) -> list[ir.Value]:
        (aval_out,) = ctx.avals_out
        x, y = mlir.multi_broadcast_in_dim((x, y), ctx.avals_in, aval_out.shape,
                                            aval_out.sharding)
        return [mlir.compare_hlo(x, y, direction, ctx.avals_in[0].dtype)]
    rule.__name__ = f"_{direction.lower()}_lowering"
    return rule


# --8<-- [start:select_n]
def _select_n_lowering(ctx: LoweringRuleContext, which: ir.Value, *cases: ir.Value
                       ) -> list[ir.Value]:
    which_aval = ctx.avals_in[0]
    if which_aval.dtype == np.dtype(bool):
        return [cases[0]] if len(cases) == 1 else [hlo.select(which, cases[1], cases[0])]

    def _select(offset: int, cases: tuple[ir.Value, ...]) -> ir.Value:
        # a binary tree of selects on `which < offset + mid`
        if len(cases) == 1:
            return cases[0]
        mid = len(cases) // 2
        pred = mlir.compare_hlo(which, mlir.full_like_aval(offset + mid, which_aval), "LT",
                                which_aval.dtype)
        return hlo.select(pred, _select(offset, cases[:mid]), _select(offset + mid, cases[mid:]))

    return [_select(0, cases)]
# --8<-- [end:select_n]


def _convert_element_type_lowering(ctx: LoweringRuleContext, x: ir.Value, **params: Any
                                   ) -> list[ir.Value]:
    (aval_in,), (aval_out,) = ctx.avals_in, ctx.avals_out
    if aval_in.dtype.kind == "c" and aval_out.dtype.kind != "c":
        aval_in = aval_in.update(dtype=np.finfo(aval_in.dtype).dtype)
        x = hlo.elementwise("real", x, result_type=aval_to_ir_type(aval_in))
    return [mlir.convert_hlo(x, aval_in, aval_out)]


_NARY_OPS = {
    lax.neg_p: "negate", lax.floor_p: "floor", lax.ceil_p: "ceil", lax.exp_p: "exponential",
    lax.log_p: "log", lax.log1p_p: "log_plus_one", lax.clz_p: "count_leading_zeros",
    lax.tanh_p: "tanh", lax.tan_p: "tan", lax.atan2_p: "atan2",
    lax.abs_p: "abs", lax.sqrt_p: "sqrt", lax.rsqrt_p: "rsqrt", lax.not_p: "not",
    lax.add_p: "add", lax.sub_p: "subtract", lax.mul_p: "multiply", lax.div_p: "divide",
    lax.rem_p: "remainder", lax.and_p: "and",
    lax.or_p: "or", lax.xor_p: "xor", lax.shift_left_p: "shift_left",
    lax.shift_right_arithmetic_p: "shift_right_arithmetic",
    lax.shift_right_logical_p: "shift_right_logical", lax.clamp_p: "clamp",
    lax.is_finite_p: "is_finite",
}
_COMPARISONS = {lax.eq_p: "EQ", lax.ne_p: "NE", lax.lt_p: "LT", lax.le_p: "LE", lax.gt_p: "GT",
                lax.ge_p: "GE"}

for _prim, _op in _NARY_OPS.items():
    register_lowering(_prim, _nary(_op))
for _prim, _direction in _COMPARISONS.items():
    register_lowering(_prim, _compare_lowering(_direction))
register_lowering(lax.erf_p, _erf_lowering)
register_lowering(lax.sign_p, _sign_lowering)
register_lowering(lax.round_p, _round_lowering)
register_lowering(lax.logistic_p, mlir.lower_fun(_logistic_impl, multiple_results=False))
register_lowering(lax.integer_pow_p, _integer_pow_lowering)
register_lowering(lax.pow_p, _pow_lowering)
register_lowering(lax.select_n_p, _select_n_lowering)
register_lowering(lax.convert_element_type_p, _convert_element_type_lowering)
register_lowering(lax.bitcast_convert_type_p, lambda ctx, x, new_dtype: [hlo.elementwise(
    "bitcast_convert", x, result_type=aval_to_ir_type(ctx.avals_out[0]), functional=True)])
