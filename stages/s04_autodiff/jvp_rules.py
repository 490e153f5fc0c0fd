"""A jvp rule for every stage-2 primitive, registered in `ad.primitive_jvps`.

JAX: the `ad.defjvp(...)` lines next to each primitive in jax/_src/lax/lax.py and slicing.py
(and the helpers `defjvp`, `defjvp2`, `defjvp_zero` of interpreters/ad.py). A rule runs with
the parent trace current, so the lax calls in its body are recorded or evaluated there. Rules
are short named functions of the tangent `g` of one input; `defjvp` sums their contributions.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from stages.s02_tracing import core, dtypes, lax, vma
from stages.s02_tracing.lax import add, div, eq, mul, neg, select, sub
from stages.s02_tracing.lax.lax import one as _one
from stages.s02_tracing.lax.utils import const

from . import ad_util
from .ad import instantiate_zeros, primitive_jvps
from .ad_util import Zero, add_jaxvals

# ------------------------------------------------------------------ helpers (JAX: ad.py)


# --8<-- [start:defjvp]
def standard_jvp(rules: tuple, primitive: core.Primitive, pass_ans: bool, primals: Any,
                 tangents: Any, **params: Any) -> tuple[Any, Any]:
    """The primal output, and the sum of each nonzero input tangent's contribution: each rule
    is rule(g, *primals) or, with pass_ans, rule(g, primal_out, *primals)."""
    # JAX: standard_jvp and standard_jvp2, one for each form
    primal_out = primitive.bind(*primals, **params)
    args = (primal_out, *primals) if pass_ans else primals
    contributions = [rule(g, *args, **params)
                     for rule, g in zip(rules, tangents, strict=True)
                     if rule is not None and type(g) is not Zero]
    return primal_out, functools.reduce(add_jaxvals, contributions,
                                        Zero.from_primal_value(primal_out))


def defjvp(primitive: core.Primitive, *rules: Callable | None) -> None:
    """One rule per input, rule(g, *primals, **params); None for an input with no tangent."""
    primitive_jvps[primitive] = functools.partial(standard_jvp, rules, primitive, False)
# --8<-- [end:defjvp]


def defjvp2(primitive: core.Primitive, *rules: Callable | None) -> None:
    """Like defjvp, but each rule also gets the primal output: rule(g, ans, *primals)."""
    primitive_jvps[primitive] = functools.partial(standard_jvp, rules, primitive, True)


def zero_jvp(primitive: core.Primitive, primals: Any, tangents: Any, **params: Any):
    primal_out = primitive.bind(*primals, **params)
    if primitive.multiple_results:
        return primal_out, [Zero.from_primal_value(p) for p in primal_out]
    return primal_out, Zero.from_primal_value(primal_out)


def defjvp_zero(primitive: core.Primitive) -> None:
    """A primitive whose output does not move when its inputs do (floor, eq, argmax, ...)."""
    primitive_jvps[primitive] = functools.partial(zero_jvp, primitive)


def linear_jvp(primitive: core.Primitive, primals: Any, tangents: Any, **params: Any):
    """A linear primitive's tangent is the primitive applied to the tangents."""
    primal_out = primitive.bind(*primals, **params)
    return primal_out, primitive.bind(*map(instantiate_zeros, tangents), **params)


def deflinear(primitive: core.Primitive) -> None:
    """Register the jvp of a linear primitive (neg, reduce_sum, reshape, ...): the primitive
    applied to the tangents. Only the jvp: its transpose rule is in transpose_rules.py."""
    # JAX: ad.deflinear(primitive, transpose_rule) (and deflinear2) register both at once
    primitive_jvps[primitive] = functools.partial(linear_jvp, primitive)


def _maybe_broadcast(shape: tuple[int, ...], t: Any) -> Any:
    """`t` broadcast to `shape` (lax broadcasts rank-0 and size-1 operands implicitly)."""
    if np.shape(t) == tuple(shape):
        return t
    return lax.broadcast_in_dim(t, shape, tuple(range(np.ndim(t))))


def _broadcast_shape(*xs: Any) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(*(np.shape(x) for x in xs)))


# ------------------------------------------------------------------ elementwise, one operand


# --8<-- [start:sin_cos_jvp]
def _sin_jvp(g, x, *, accuracy):
    return mul(g, lax.cos(x))


def _cos_jvp(g, x, *, accuracy):
    return neg(mul(g, lax.sin(x)))
# --8<-- [end:sin_cos_jvp]


def _tan_jvp(g, ans, x, *, accuracy):
    return mul(g, add(const(x, 1), lax.square(ans)))


def _tanh_jvp(g, ans, x, *, accuracy):
    # g * (1 - ans**2), written (g + g*ans) * (1 - ans) as JAX does
    return mul(add(g, mul(g, ans)), sub(_one(x), ans))


def _exp_jvp(g, ans, x, *, accuracy):
    return mul(g, ans)


def _log_jvp(g, x, *, accuracy):
    return div(g, x)


def _log1p_jvp(g, x, *, accuracy):
    return div(g, add(x, _one(x)))


def _sqrt_jvp(g, ans, x, *, accuracy):
    return mul(g, div(const(x, 0.5), ans))


def _rsqrt_jvp(g, ans, x, *, accuracy):
    return mul(g, mul(const(x, -0.5), div(ans, x)))


def _logistic_jvp(g, ans, x, *, accuracy):
    return mul(g, mul(ans, sub(_one(ans), ans)))


def _erf_jvp(g, x):
    return mul(const(x, 2.0 / np.sqrt(np.pi)), mul(g, lax.exp(neg(lax.square(x)))))


def _integer_pow_jvp(g, x, *, y):
    if y == 0:
        return ad_util.zeros_like_aval(ad_util.tangent_aval(core.get_aval(x)))
    if y == 1:
        return g
    if y == 2:
        return mul(g, mul(const(x, 2), x))
    return mul(g, mul(const(x, y), lax.integer_pow(x, y - 1)))


defjvp(lax.sin_p, _sin_jvp)
defjvp(lax.cos_p, _cos_jvp)
defjvp2(lax.tan_p, _tan_jvp)
defjvp2(lax.tanh_p, _tanh_jvp)
defjvp2(lax.exp_p, _exp_jvp)
defjvp(lax.log_p, _log_jvp)
defjvp(lax.log1p_p, _log1p_jvp)
defjvp2(lax.sqrt_p, _sqrt_jvp)
defjvp2(lax.rsqrt_p, _rsqrt_jvp)
defjvp2(lax.logistic_p, _logistic_jvp)
defjvp(lax.erf_p, _erf_jvp)
defjvp(lax.integer_pow_p, _integer_pow_jvp)
deflinear(lax.neg_p)
for _p in (lax.sign_p, lax.floor_p, lax.ceil_p, lax.round_p, lax.not_p, lax.is_finite_p):
    defjvp_zero(_p)

# ------------------------------------------------------------------ elementwise, two operands


def _add_or_sub_jvp(op: Callable, primals, tangents):
    """op (add or sub) of the tangents; a Zero tangent drops out (a Zero x's: -ydot for sub)."""
    x, y = primals
    xdot, ydot = tangents
    out = op(x, y)
    if type(xdot) is Zero:
        return out, _maybe_broadcast(np.shape(out), ydot if op is add else neg(ydot))
    if type(ydot) is Zero:
        return out, _maybe_broadcast(np.shape(out), xdot)
    return out, op(xdot, ydot)


# --8<-- [start:mul_jvp]
def _mul_jvp(primals, tangents, *, out_dtype):
    """d(x * y) = dx * y + x * dy; a symbolic Zero tangent drops its term."""
    x, y = primals
    xdot, ydot = tangents
    # EXERCISE 4.2 (mul-jvp): the product rule, skipping the term of a Zero tangent
    out = lax.mul_p.bind(x, y, out_dtype=out_dtype)
    if type(xdot) is Zero:
        return out, lax.mul_p.bind(x, ydot, out_dtype=out_dtype)
    if type(ydot) is Zero:
        return out, lax.mul_p.bind(xdot, y, out_dtype=out_dtype)
    return out, add_jaxvals(lax.mul_p.bind(xdot, y, out_dtype=out_dtype),
                            lax.mul_p.bind(x, ydot, out_dtype=out_dtype))
    # END EXERCISE
# --8<-- [end:mul_jvp]


def _div_jvp_lhs(g, x, y):
    return div(g, y)


def _div_jvp_rhs(g, x, y):
    return mul(mul(neg(g), x), lax.integer_pow(y, -2))


def _rem_jvp_lhs(g, x, y):
    return _maybe_broadcast(_broadcast_shape(x, y), g)


def _rem_jvp_rhs(g, x, y):
    # rem(x, y) = x - y * trunc(x / y)
    return mul(neg(g), mul(lax.sign(div(x, y)), lax.floor(lax.abs(div(x, y)))))


def replace_zero(x):
    """x with its zeros replaced by ones (a safe divisor; JAX: lax._replace_zero)."""
    return select(eq(x, const(x, 0)), lax.full_like(x, 1), x)


def _pow_jvp_lhs(g, ans, x, y):
    # y * x ** (y - 1), both converted to the result dtype first (so strongly typed, as in
    # JAX); an integer y of 0 gives 0, not 0 * x ** -1
    y_dtype, result_dtype = dtypes.dtype(y), dtypes.result_type(x, y)
    result_dtype = np.dtype(np.int32) if result_dtype == np.bool_ else result_dtype
    x, y = lax.convert_element_type(x, result_dtype), lax.convert_element_type(y, result_dtype)
    if not dtypes.issubdtype(y_dtype, np.integer):
        return mul(g, mul(y, lax.pow(x, sub(y, lax.full_like(y, 1)))))
    shape = _broadcast_shape(x, y)
    x, y = _maybe_broadcast(shape, x), _maybe_broadcast(shape, y)
    return mul(g, select(eq(y, const(y, 0)), lax.full_like(y, 0),
                         mul(replace_zero(y), lax.pow(x, sub(y, lax.full_like(y, 1))))))


def _pow_jvp_rhs(g, ans, x, y):
    return mul(g, mul(lax.log(replace_zero(x)), ans))


def _balanced_eq(x, z, y):
    """1 where x is the chosen value z, 1/2 where y is chosen too (a tie splits the tangent)."""
    return div(select(eq(x, z), lax.full_like(z, 1), lax.full_like(z, 0)),
               select(eq(y, z), lax.full_like(z, 2), lax.full_like(z, 1)))


def _max_jvp_lhs(g, ans, x, y):
    return mul(g, _balanced_eq(x, ans, y))


def _max_jvp_rhs(g, ans, x, y):
    return mul(g, _balanced_eq(y, ans, x))


primitive_jvps[lax.add_p] = functools.partial(_add_or_sub_jvp, add)
primitive_jvps[lax.sub_p] = functools.partial(_add_or_sub_jvp, sub)
primitive_jvps[lax.mul_p] = _mul_jvp
defjvp(lax.div_p, _div_jvp_lhs, _div_jvp_rhs)
defjvp(lax.rem_p, _rem_jvp_lhs, _rem_jvp_rhs)
defjvp2(lax.pow_p, _pow_jvp_lhs, _pow_jvp_rhs)
defjvp2(lax.max_p, _max_jvp_lhs, _max_jvp_rhs)
defjvp2(lax.min_p, _max_jvp_lhs, _max_jvp_rhs)  # the same balanced rule picks the min
for _p in (lax.and_p, lax.or_p, lax.xor_p, lax.shift_left_p, lax.shift_right_logical_p,
           lax.shift_right_arithmetic_p, lax.eq_p, lax.ne_p, lax.lt_p, lax.le_p, lax.gt_p,
           lax.ge_p, lax.reduce_or_p, lax.reduce_and_p, lax.reduce_xor_p):  # bool/int out
    defjvp_zero(_p)


deflinear(ad_util.add_jaxvals_p)  # a zero tangent is instantiated first, as JAX's deflinear2


def _stop_gradient_jvp(primals, tangents):
    # binding stop_gradient again (not returning x) also stops any outer jvp traces' tangents
    (x,) = primals
    return ad_util.stop_gradient(x), Zero.from_primal_value(x)


primitive_jvps[ad_util.stop_gradient_p] = _stop_gradient_jvp

# ------------------------------------------------------------------ select, clamp, convert, dot


def _select_n_jvp(primals, tangents):
    """Selected like the value; a missing tangent is zeros like the first one (weak or not)."""
    which, *cases = primals
    _, *case_tangents = tangents
    out = lax.select_n(which, *cases)
    if all(type(t) is Zero for t in case_tangents):
        return out, Zero(case_tangents[0].aval)
    zeros = lax.full_like(next(t for t in case_tangents if type(t) is not Zero), 0)
    return out, lax.select_n(which, *(zeros if type(t) is Zero else t for t in case_tangents))


def _convert_element_type_jvp(primals, tangents, *, new_dtype, weak_type, sharding):
    (operand,), (g,) = primals, tangents

    def changes(x):  # a conversion that changes nothing is forwarded (JAX's staging does too)
        aval = core.get_aval(x)
        return (aval.dtype, aval.weak_type) != (new_dtype, weak_type)

    out = operand if not changes(operand) else lax.convert_element_type_p.bind(
        operand, new_dtype=new_dtype, weak_type=weak_type, sharding=sharding)
    if not dtypes.issubdtype(new_dtype, np.inexact):
        return out, Zero.from_primal_value(out)  # an int or bool result has no tangent
    if isinstance(g, core.Tracer) and not changes(g):
        return out, g  # (an eager tangent is converted all the same: an Array, as in JAX)
    return out, lax.convert_element_type_p.bind(g, new_dtype=new_dtype, weak_type=weak_type,
                                                sharding=sharding)


def _dot_general_jvp_lhs(g, x, y, **params):
    return lax.dot_general_p.bind(g, y, **params)


def _dot_general_jvp_rhs(g, x, y, **params):
    return lax.dot_general_p.bind(x, g, **params)


def _clamp_jvp(primals, tangents):
    """The tangent of whichever input the output equals (JAX's three defjvp terms)."""
    lo, x, hi = primals
    g_lo, g_x, g_hi = tangents
    out = lax.clamp_p.bind(lo, x, hi)
    zeros = lax.full_like(x, 0)

    def spread(g):  # a scalar bound's tangent, spread over the operand's shape
        if core.get_aval(g).shape == zeros.shape:
            return g
        return lax.broadcast_in_dim(g, zeros.shape, ())

    terms = []
    if type(g_lo) is not Zero:
        below = lax.bitwise_and(lax.gt(lo, x), lax.lt(lo, hi))
        terms.append(select(below, spread(g_lo), zeros))
    if type(g_x) is not Zero:
        terms.append(select(lax.bitwise_and(lax.gt(x, lo), lax.lt(x, hi)), g_x, zeros))
    if type(g_hi) is not Zero:
        terms.append(select(lax.lt(hi, x), spread(g_hi), zeros))
    tangent = Zero.from_primal_value(out)
    for term in terms:
        tangent = add_jaxvals(tangent, term)
    return out, tangent


primitive_jvps[lax.select_n_p] = _select_n_jvp
primitive_jvps[lax.clamp_p] = _clamp_jvp
primitive_jvps[lax.convert_element_type_p] = _convert_element_type_jvp
defjvp(lax.dot_general_p, _dot_general_jvp_lhs, _dot_general_jvp_rhs)

# ------------------------------------------------------------------ reductions


def _reduce_chooser_jvp(g, ans, operand, *, axes):
    """max/min over axes: the tangent of the chosen element(s), averaged over ties."""
    kept_shape = [1 if i in axes else d for i, d in enumerate(np.shape(operand))]
    chosen = lax.convert_element_type(eq(operand, lax.reshape(ans, kept_shape)),
                                      dtypes.dtype(g))
    counts = lax.reduce_sum(chosen, axes)
    return div(lax.reduce_sum(mul(g, chosen), axes), counts)


defjvp2(lax.reduce_max_p, _reduce_chooser_jvp)
defjvp2(lax.reduce_min_p, _reduce_chooser_jvp)
for _p in (lax.reduce_sum_p, lax.cumsum_p):
    deflinear(_p)
for _p in (lax.argmax_p, lax.argmin_p, lax.iota_p):
    defjvp_zero(_p)

# ------------------------------------------------------------------ structure and slicing

for _p in (lax.broadcast_in_dim_p, lax.reshape_p, lax.transpose_p, lax.squeeze_p,
           lax.concatenate_p, lax.pad_p, lax.slice_p, lax.rev_p, vma.pvary_p):  # (a cast)
    deflinear(_p)


def _dynamic_slice_jvp(primals, tangents, *, slice_sizes):
    """Linear in the operand; the start indices are integers with no tangent."""
    operand, *starts = primals
    g = tangents[0]
    if type(g) is not Zero:  # the tangent is sliced first, as JAX's rule does it
        g = lax.dynamic_slice_p.bind(g, *starts, slice_sizes=slice_sizes)
    out = lax.dynamic_slice_p.bind(operand, *starts, slice_sizes=slice_sizes)
    return out, Zero.from_primal_value(out) if type(g) is Zero else g


def _dynamic_update_slice_jvp(primals, tangents):
    operand, update, *starts = primals
    g_operand, g_update = tangents[:2]
    out = lax.dynamic_update_slice_p.bind(operand, update, *starts)
    if type(g_operand) is Zero and type(g_update) is Zero:
        return out, Zero.from_primal_value(out)
    return out, lax.dynamic_update_slice_p.bind(instantiate_zeros(g_operand),
                                                instantiate_zeros(g_update), *starts)


primitive_jvps[lax.dynamic_slice_p] = _dynamic_slice_jvp
primitive_jvps[lax.dynamic_update_slice_p] = _dynamic_update_slice_jvp
