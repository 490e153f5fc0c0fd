"""Tangent values: symbolic zeros, the float0 dtype, adding tangents, and stop_gradient.

JAX: jax/_src/ad_util.py (`Zero`, `add_jaxvals`, `add_jaxvals_p` printed `add_any`,
`zeros_like_aval`, `instantiate`, `stop_gradient_p`) and the tangent-dtype helpers of
jax/_src/core.py and jax/_src/dtypes.py (`primal_dtype_to_tangent_dtype`, `float0`). The
`stop_gradient` wrapper is JAX's lax.stop_gradient (lax/lax.py), here because stage 2's lax
cannot import stage 4.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stages.s01_pytrees import register_pytree_node, tree_map
from stages.s02_tracing import core, dtypes, lax
from stages.s02_tracing.core import ShapedArray

# The tangent dtype of an integer or boolean value, a dtype with no data at all (JAX:
# dtypes.float0), is stage 2's: avals, jaxprs and jit's signatures may hold it.
float0 = dtypes.float0


def primal_dtype_to_tangent_dtype(dtype: Any) -> np.dtype:
    """Floats (and complex) are their own tangent dtype; ints and bools have float0."""
    dtype = np.dtype(dtype)
    if dtypes.issubdtype(dtype, np.inexact):
        return dtype
    return float0


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    """The aval of a tangent (or cotangent) of a value of type `aval`."""
    # JAX: ShapedArray.to_tangent_aval (and to_ct_aval, the same for arrays)
    dtype = primal_dtype_to_tangent_dtype(aval.dtype)
    return ShapedArray(aval.shape, dtype, aval.weak_type and dtype != float0, aval.vma,
                       aval.sharding)


# --8<-- [start:zero]
class Zero:
    """A tangent known to be zero, without an array: rules skip the work it would cost.

    Zeros flow through JVPTrace (a value whose tangent is Zero is not even a JVPTracer) and
    through the backward pass (an equation whose output cotangents are all Zero is skipped).
    Only `instantiate` turns one into an array, when a rule really needs the numbers.
    """

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    @staticmethod
    def from_primal_value(val: Any) -> Zero:
        return Zero(tangent_aval(core.get_aval(val)))

    def __repr__(self) -> str:
        return f"Zero({self.aval})"
# --8<-- [end:zero]


# a pytree with no leaves, as in JAX: a tree of tangents may hold Zeros (custom_jvp's defjvps)
register_pytree_node(Zero, lambda z: ((), z.aval), lambda aval, _: Zero(aval))


class SymbolicZero:
    """What a custom rule defined with `symbolic_zeros=True` gets for a zero tangent: the
    type, no data (JAX: ad_util.SymbolicZero). `.shape` and `.dtype` read the aval."""

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)

    def __repr__(self) -> str:
        return "SymbolicZero"

    @staticmethod
    def from_primal_value(val: Any) -> SymbolicZero:
        return SymbolicZero(tangent_aval(core.get_aval(val)))


def zeros_like_aval(aval: ShapedArray) -> Any:
    """An array of zeros of `aval`'s shape, dtype and weak type (staged when a trace is
    current). JAX: lax.zeros_like_shaped_array."""
    if aval.dtype != float0:
        zero = lax.convert_element_type(0, aval.dtype, aval.weak_type)
    elif isinstance(core.trace_ctx.trace, core.EvalTrace):
        return np.zeros(aval.shape, float0)  # no eager Array holds float0: numpy's zeros
    else:
        zero = np.zeros((), float0)  # staged, as JAX stages it: broadcast a float0 scalar
    return lax.broadcast(zero, aval.shape, aval.sharding)  # split as the value is, if typed


def instantiate(z: Any) -> Any:
    """A symbolic Zero becomes real zeros; anything else passes through."""
    if type(z) is Zero:
        return zeros_like_aval(z.aval)
    return z


# --8<-- [start:add_jaxvals]
# Cotangents of one value arriving from several uses are summed with this primitive, which
# is why `add_any` (not `add`) appears in the jaxpr of a gradient.
add_jaxvals_p = core.Primitive("add_any")


def _add_jaxvals_impl(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if x.dtype == float0:
        return x
    return np.add(x, y)


def _add_jaxvals_abstract_eval(x: ShapedArray, y: ShapedArray) -> ShapedArray:
    return x  # x's type, weak type included, as JAX's (a transposed loop's carry stays weak)


add_jaxvals_p.def_impl(_add_jaxvals_impl)
add_jaxvals_p.def_abstract_eval(_add_jaxvals_abstract_eval)


def add_jaxvals(x: Any, y: Any) -> Any:
    """x + y for two tangents of the same type; a symbolic Zero adds nothing."""
    if type(x) is Zero:
        return y
    if type(y) is Zero:
        return x
    if getattr(x, "dtype", None) == float0:
        return x  # float0 holds no data: nothing to add (and no Array holds it)
    if core.trace_ctx.is_top_level():  # eagerly JAX's impl is lax.add: weak if both are
        return lax.add(x, y)
    return add_jaxvals_p.bind(x, y)
# --8<-- [end:add_jaxvals]


# ------------------------------------------------------------------ stop_gradient

# The identity, whose jvp rule (jvp_rules.py) says the tangent is zero.
stop_gradient_p = core.Primitive("stop_gradient")
stop_gradient_p.def_impl(lambda x: x)
stop_gradient_p.def_abstract_eval(lambda x: x)


def stop_gradient(x: Any) -> Any:
    """Each leaf of `x` unchanged, with a zero derivative (JAX: lax.stop_gradient)."""
    return tree_map(stop_gradient_p.bind, x)
