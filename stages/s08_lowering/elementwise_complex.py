"""The complex parts (real, imag, complex, conj), and the elementwise rules whose complex case
is a small program: sin, cos, max and min; and square, CHLO's (XLA expands a complex one with
care), but an integer's a plain multiply, as JAX's `_square_lower_hlo` has it.

JAX: lax.py's `_sin_lowering` and `_cos_lowering` (`lower_fun` of `_sin_complex` and
`_cos_complex`, which compute through real parts with expm1 to stay accurate near zero) and
mlir.py's `_minmax_hlo` (complex numbers compare lexicographically, real part first). For real
dtypes each is one op, as in elementwise.py. The complex cases are emitted op by op, in JAX's
order: for sin and cos, the order its traced programs emit them; max and min, as `_minmax_hlo`
emits them directly.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stages.s02_tracing import lax

from . import hlo, ir, mlir
from .elementwise import nary_lower_hlo
from .mlir import LoweringRuleContext, aval_to_ir_type, register_lowering


def minmax_hlo(op: str, direction: str, x: ir.Value, y: ir.Value, aval: Any) -> ir.Value:
    """max or min of two values of `aval`'s type; complex: by real part, then imaginary."""
    if aval.dtype.kind != "c":
        return hlo.elementwise(op, x, y)
    real = aval.update(dtype=np.finfo(aval.dtype).dtype)
    rx, ry = (hlo.elementwise("real", v, result_type=aval_to_ir_type(real)) for v in (x, y))
    real_eq = mlir.compare_hlo(rx, ry, "EQ", real.dtype)
    real_cmp = mlir.compare_hlo(rx, ry, direction, real.dtype)
    ix, iy = (hlo.elementwise("imag", v, result_type=aval_to_ir_type(real)) for v in (x, y))
    imag_cmp = mlir.compare_hlo(ix, iy, direction, real.dtype)
    return hlo.select(hlo.select(real_eq, imag_cmp, real_cmp), x, y)


def _minmax_lowering(op: str, direction: str):
    def rule(ctx: LoweringRuleContext, x: ir.Value, y: ir.Value) -> list[ir.Value]:
        (aval_out,) = ctx.avals_out
        if aval_out.dtype.kind != "c":
            return nary_lower_hlo(op, ctx, x, y)
        x, y = mlir.multi_broadcast_in_dim((x, y), ctx.avals_in, aval_out.shape,
                                            aval_out.sharding)
        return [minmax_hlo(op, direction, x, y, aval_out)]
    rule.__name__ = f"_{op}_lowering"
    return rule


def _sin_cos_complex(ctx: LoweringRuleContext, x: ir.Value, cosine: bool) -> ir.Value:
    """sin or cos of a complex x = a + bi from real ops, with expm1 for accuracy near 0:
    sin x = sin a cosh b + i cos a sinh b, cos x = cos a cosh b - i sin a sinh b."""
    # JAX: lax._sin_complex and _cos_complex, lowered with lower_fun; ours emits the same ops
    real = ctx.avals_in[0].update(dtype=np.finfo(ctx.avals_in[0].dtype).dtype)
    real_t, complex_t = aval_to_ir_type(real), aval_to_ir_type(ctx.avals_in[0])

    def f(op: str, *args: ir.Value) -> ir.Value:
        return hlo.elementwise(op, *args, result_type=real_t)

    a, b = f("real", x), f("imag", x)
    a_is_zero = mlir.compare_hlo(a, mlir.full_like_aval(0, real), "EQ", real.dtype)
    sn, cs = f("sine", a), f("cosine", a)
    e1m, e2m = f("exponential_minus_one", b), f("exponential_minus_one", f("negate", b))
    snh = f("divide", f("subtract", e1m, e2m), mlir.full_like_aval(2, real))
    csh = f("divide", f("add", f("add", e1m, e2m), mlir.full_like_aval(2, real)),
            mlir.full_like_aval(2, real))
    if cosine:
        re, im = f("multiply", cs, csh), f("multiply", f("negate", sn), snh)
        on_zero = hlo.complex(re, mlir.full_like_aval(0, real), complex_t)
    else:
        re, im = f("multiply", sn, csh), f("multiply", cs, snh)
        on_zero = hlo.complex(mlir.full_like_aval(0, real), im, complex_t)
    return hlo.select(a_is_zero, on_zero, hlo.complex(re, im, complex_t))


def _sin_cos_lowering(op: str):
    def rule(ctx: LoweringRuleContext, x: ir.Value, **params: Any) -> list[ir.Value]:
        if ctx.avals_in[0].dtype.kind == "c":
            return [_sin_cos_complex(ctx, x, cosine=op == "cosine")]
        return nary_lower_hlo(op, ctx, x)
    rule.__name__ = f"_{op}_lowering"
    return rule


def _square_lowering(ctx: LoweringRuleContext, x: ir.Value) -> list[ir.Value]:
    if ctx.avals_in[0].dtype.kind in "iu":
        return [hlo.elementwise("multiply", x, x)]
    return [hlo.chlo("square", x)]


register_lowering(lax.square_p, _square_lowering)
register_lowering(lax.sin_p, _sin_cos_lowering("sine"))
register_lowering(lax.cos_p, _sin_cos_lowering("cosine"))
register_lowering(lax.max_p, _minmax_lowering("maximum", "GT"))
register_lowering(lax.min_p, _minmax_lowering("minimum", "LT"))


def _conj_lowering(ctx: LoweringRuleContext, x: ir.Value, **params: Any) -> list[ir.Value]:
    """conj x = complex(real x, -imag x); of a real x, complex(x, 0)."""
    # JAX: lower_fun of lax._conj_impl
    (aval_in,), (aval_out,) = ctx.avals_in, ctx.avals_out
    complex_t = aval_to_ir_type(aval_out)
    if aval_in.dtype.kind != "c":
        return [hlo.complex(x, mlir.full_like_aval(0, aval_in), complex_t)]
    real_t = aval_to_ir_type(aval_in.update(dtype=np.finfo(aval_in.dtype).dtype))
    re = hlo.elementwise("real", x, result_type=real_t)
    im = hlo.elementwise("negate", hlo.elementwise("imag", x, result_type=real_t))
    return [hlo.complex(re, im, complex_t)]


def _complex_lowering(ctx: LoweringRuleContext, re: ir.Value, im: ir.Value) -> list[ir.Value]:
    """`stablehlo.complex`, after broadcasting a rank-0 part; it prints only its result type."""
    # JAX: lax._nary_lower_hlo with hlo.complex
    (aval_out,) = ctx.avals_out
    re, im = mlir.multi_broadcast_in_dim((re, im), ctx.avals_in, aval_out.shape,
                                         aval_out.sharding)
    return [hlo.complex(re, im, aval_to_ir_type(aval_out))]


for _p, _op in ((lax.real_p, "real"), (lax.imag_p, "imag")):
    register_lowering(_p, lambda ctx, *args, _op=_op, **params: nary_lower_hlo(_op, ctx, *args))
register_lowering(lax.complex_p, _complex_lowering)
register_lowering(lax.conj_p, _conj_lowering)
