"""select_n, convert_element_type, full, dot_general and clamp: the primitives that are not
simply elementwise, structural, reductions or slices.

JAX: jax/_src/lax/lax.py. convert_element_type of a constant scalar is folded while a jaxpr is
staged, through the `const_fold_rules` table of partial_eval.py, as in JAX.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import core, dtypes, vma
from .. import partial_eval as pe
from ..array import Array
from ..axis_env import vma_axes
from .structural import broadcast
from .utils import (
    canonicalize_precision,
    check_same_dtypes,
    drop_params,
    maybe_upcast,
    same_shape,
    standard_primitive,
)

__all__ = [
    "clamp", "clamp_p", "convert_element_type", "convert_element_type_p", "dot", "dot_general",
    "dot_general_p", "full", "full_like", "select", "select_n", "select_n_p", "zeros_like_array",
]


# ------------------------------------------------------------------ select_n, convert_element_type


def _select_n_shape_rule(which: core.ShapedArray, *cases: core.ShapedArray) -> tuple:
    if not cases:
        raise ValueError("select_n() must have at least one case")
    if any(c.shape != cases[0].shape for c in cases[1:]):
        shapes = ", ".join(str(c.shape) for c in cases)
        raise TypeError(f"select cases must have the same shapes, got [{shapes}].")
    if which.shape and which.shape != cases[0].shape:
        raise TypeError(
            "select `which` must be scalar or have the same shape as cases, "
            f"got `which` shape {which.shape} but case shape {cases[0].shape}."
        )
    return cases[0].shape


def _select_n_dtype_rule(which: core.ShapedArray, *cases: core.ShapedArray) -> np.dtype:
    if any(c.dtype != cases[0].dtype for c in cases[1:]):
        got = ", ".join(str(c.dtype) for c in cases)
        raise TypeError(
            f"lax.select requires arguments to have the same dtypes, got {got}. "
            "(Tip: jnp.where is a similar function that does automatic type promotion "
            "on inputs)."
        )
    if which.dtype != np.bool_ and not dtypes.issubdtype(which.dtype, np.integer):
        raise TypeError(f"select `which` must be boolean or integer type, got {which.dtype}.")
    if which.dtype == np.bool_ and len(cases) > 2:
        raise TypeError("select with boolean `which` cannot have > 2 cases.")
    return cases[0].dtype


def _select_n_impl(which: np.ndarray, *cases: np.ndarray) -> np.ndarray:
    # XLA's tree of selects: an index past the last case picks the last, below 0 the first
    return np.choose(np.clip(which.astype(np.int32), 0, len(cases) - 1), cases)


select_n_p = standard_primitive(
    _select_n_shape_rule, _select_n_dtype_rule, "select_n", _select_n_impl,
    weak_type_rule=lambda which, *cases: all(c.weak_type for c in cases))


def select_n(which: Any, *cases: Any) -> Any:
    """cases[which] elementwise: bool `which` picks cases[0] where False, cases[1] where True."""
    return select_n_p.bind(which, *cases)


def select(pred: Any, on_true: Any, on_false: Any) -> Any:
    """Elementwise `on_true if pred else on_false`; note select_n's reversed case order."""
    return select_n_p.bind(pred, on_false, on_true)


def _float_to_int(x: np.ndarray, new_dtype: np.dtype) -> np.ndarray:
    # XLA saturates: out-of-range values clamp to the integer range, NaN becomes 0 (numpy's
    # astype leaves them undefined). Compare in float64, which holds every int32 bound exactly.
    info = np.iinfo(new_dtype)
    wide = x.astype(np.float64)
    low, high = wide < float(info.min), wide >= float(info.max)
    inside = np.where(np.isnan(wide) | low | high, 0, wide).astype(new_dtype)
    return np.where(low, info.min, np.where(high, info.max, inside)).astype(new_dtype)


def _convert_element_type_impl(x: np.ndarray, *, new_dtype, weak_type, sharding) -> np.ndarray:
    if np.iscomplexobj(x) and not dtypes.issubdtype(new_dtype, np.complexfloating):
        x = x.real  # JAX warns that the imaginary part is dropped; we drop it quietly
    if dtypes.issubdtype(x.dtype, np.floating) and dtypes.issubdtype(new_dtype, np.integer):
        return _float_to_int(x, new_dtype)
    if new_dtype == dtypes.bfloat16 and dtypes.issubdtype(x.dtype, np.integer):
        x = x.astype(np.float32)  # as XLA's CPU backend: an int reaches bfloat16 through float32
    return x.astype(new_dtype)


def _convert_element_type_fold(consts: list[Any], params: dict) -> list[Any] | None:
    """Staged with a constant operand, a conversion of a scalar happens now (no equation), and
    one that changes nothing is the constant itself."""
    # JAX: _convert_elt_type_folding_rule, which returns a typed literal, and the forwarding
    # rule of a no-op conversion; ours returns a 0-d numpy array (a strong literal) or, for a
    # weak result, a Python scalar (2 -> 2.0:f32[])
    (operand,) = consts
    if isinstance(operand, np.ndarray) and operand.ndim:
        unchanged = dtypes.canonicalize_dtype(operand.dtype) == params["new_dtype"]
        # a constvar, as it would be without the conversion; else stage the equation
        return [operand] if unchanged and not params["weak_type"] else None
    if not isinstance(operand, (bool, int, float, complex, np.generic, np.ndarray)):
        return None  # a tracer (None here) or an Array: stage the equation
    if type(operand) in (float, complex) and core.get_aval(operand).dtype == params["new_dtype"] \
            and params["weak_type"]:
        return [operand]  # a no-op: JAX stages the scalar as written (0.1, not 0.100000001...)
    folded = _convert_element_type_impl(np.asarray(operand), **params)
    if not params["weak_type"]:
        return [folded]
    if core.get_aval(folded.item()).dtype == folded.dtype:
        return [folded.item()]
    return None


convert_element_type_p = standard_primitive(
    same_shape,
    lambda x, *, new_dtype, weak_type, sharding: new_dtype,
    "convert_element_type",
    _convert_element_type_impl,
    weak_type_rule=lambda x, *, new_dtype, weak_type, sharding: weak_type,
)
# Folded only where a jaxpr is staged: under JaxprTrace or JVPTrace the conversion of a known
# value stays a real application (eager: a computed value).
pe.const_fold_rules[convert_element_type_p] = _convert_element_type_fold


def convert_element_type(operand: Any, new_dtype: Any = None, weak_type: bool = False) -> Any:
    """Cast to `new_dtype` (canonicalized: float64 becomes float32; None keeps the dtype), weakly
    typed if asked; no equation when nothing would change."""
    # JAX: lax._convert_element_type; jax.lax.convert_element_type is it with weak_type=False
    old_dtype = dtypes.dtype(operand)  # canonical: an int64 numpy array counts as int32
    new_dtype = (old_dtype if new_dtype is None else  # a 64-bit one: JAX's warning
                 dtypes.check_and_canonicalize_user_dtype(new_dtype, "convert_element_type"))
    unchanged = old_dtype == new_dtype and dtypes.is_weakly_typed(operand) == bool(weak_type)
    # (as JAX, a tracer that knows its value is converted all the same: under jvp at the top
    # level this makes the tangent's weak type the primal's)
    concrete = isinstance(operand, core.Tracer) and operand.to_concrete_value() is not None
    if unchanged and isinstance(operand, (core.Tracer, Array)) and not concrete:
        return operand
    # anything else is bound: eager, it becomes an Array; staged, a literal or a constvar
    if type(operand) is int:
        # Python ints are unbounded: 2**100 converts to float32 directly, not through int32
        operand = np.asarray(operand).astype(new_dtype)[()]
    elif isinstance(operand, (complex, np.complexfloating)) and not weak_type and \
            not dtypes.issubdtype(new_dtype, np.complexfloating):
        # numpy converts a scalar, as in JAX: 1j is True, 1j as a float32 is refused
        operand = np.asarray(operand, new_dtype)[()]  # (an array's 1j is dropped, as by XLA)
    return convert_element_type_p.bind(
        operand, new_dtype=new_dtype, weak_type=bool(weak_type), sharding=None
    )


# ------------------------------------------------------------------ full and friends


def full(shape: Sequence[int], fill_value: Any, dtype: Any = None, sharding: Any = None) -> Any:
    """An array of `shape` filled with a scalar; weak when fill_value is and dtype is None."""
    if np.shape(fill_value):
        raise TypeError("full must be called with scalar fill_value, "
                        f"got fill_value.shape {np.shape(fill_value)}.")
    weak_type = dtype is None and dtypes.is_weakly_typed(fill_value)
    fill_dtype = (dtypes.dtype(fill_value) if dtype is None else
                  dtypes.check_and_canonicalize_user_dtype(dtype, "full"))
    return broadcast(convert_element_type(fill_value, fill_dtype, weak_type), tuple(shape),
                     sharding)


def full_like(x: Any, fill_value: Any, dtype: Any = None, shape: Any = None) -> Any:
    """An array like `x` (its shape and dtype unless given) filled with a scalar."""
    fill_shape = np.shape(x) if shape is None else tuple(shape)
    weak_type = dtype is None and dtypes.is_weakly_typed(x)
    # (JAX's warning for a 64-bit dtype here says "requested in dtype": its helper's name)
    dtype = dtypes.dtype(x) if dtype is None else dtypes.check_and_canonicalize_user_dtype(
        dtype, "dtype")
    # a same-shaped result is split as x is, where shardings are types (stage 11)
    sharding = core.get_aval(x).sharding if shape is None else None
    out = full(fill_shape, convert_element_type(fill_value, dtype, weak_type), sharding=sharding)
    if vma_axes() and (varying := core.get_aval(x).vma):
        out = vma.pvary(out, tuple(varying))  # like x, it varies (JAX: _full_like_insert_pvary)
    return out


def one(x: Any) -> Any:
    """A scalar 1 of x's dtype, weak whenever x is, at any rank (JAX: lax._one; `const` keeps
    weak only for a scalar example, as JAX's `_const` does)."""
    return full_like(x, 1, shape=())


def zeros_like_array(x: Any) -> Any:
    """Zeros of x's shape and dtype (JAX: ad_util.zeros_like_jaxval; lax_internal's
    zeros_like_shaped_array takes the aval instead)."""
    return full_like(x, 0)


# ------------------------------------------------------------------ dot_general


# --8<-- [start:dot_general_shape]
def _dot_general_shape_rule(
    lhs: core.ShapedArray, rhs: core.ShapedArray, *, dimension_numbers, precision,
    preferred_element_type, out_sharding,
) -> tuple:
    """Output dims: batch dims, then lhs free dims, then rhs free dims (each in order)."""
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    # EXERCISE 2.4 (abstract-eval): check the dimension numbers, then build the output shape
    sides = (("lhs", lhs, lhs_contract, lhs_batch), ("rhs", rhs, rhs_contract, rhs_batch))
    # the checks come in JAX's order, so a call breaking two rules gets JAX's message
    for side, aval, contract, batch in sides:
        if not all(0 <= d < aval.ndim for d in (*contract, *batch)):
            raise TypeError(
                f"dot_general requires {side} dimension numbers to be nonnegative and less "
                f"than the number of axes of the {side} value, got {side}_batch of {batch} "
                f"and {side}_contracting of {contract} for {side} of rank {aval.ndim}"
            )
    if len(lhs_batch) != len(rhs_batch):
        raise TypeError(
            "dot_general requires equal numbers of lhs_batch and rhs_batch dimensions, "
            f"got lhs_batch {lhs_batch} and rhs_batch {rhs_batch}."
        )
    for kind, side, dims in (("batch", "lhs", lhs_batch), ("batch", "rhs", rhs_batch),
                             ("contracting", "lhs", lhs_contract),
                             ("contracting", "rhs", rhs_contract)):
        if len(set(dims)) != len(dims):
            raise TypeError(
                f"dot_general requires {side} {kind} dimensions to be distinct, "
                f"got {side}_{kind} {dims}."
            )
    for side, _, contract, batch in sides:
        if set(contract) & set(batch):
            raise TypeError(
                f"dot_general requires {side} batch dimensions to be disjoint from "
                f"contracting dimensions, got {side}_batch {batch} and "
                f"{side}_contracting {contract}."
            )
    lhs_batch_shape = tuple(lhs.shape[d] for d in lhs_batch)
    rhs_batch_shape = tuple(rhs.shape[d] for d in rhs_batch)
    if lhs_batch_shape != rhs_batch_shape:
        raise TypeError(
            "dot_general requires lhs batch dimensions and rhs batch dimensions to have the "
            f"same shape, got {lhs_batch_shape} and {rhs_batch_shape}."
        )
    lhs_contract_shape = tuple(lhs.shape[d] for d in lhs_contract)
    rhs_contract_shape = tuple(rhs.shape[d] for d in rhs_contract)
    if lhs_contract_shape != rhs_contract_shape:
        raise TypeError(
            "dot_general requires contracting dimensions to have the same shape, "
            f"got {lhs_contract_shape} and {rhs_contract_shape}."
        )
    lhs_free = [s for d, s in enumerate(lhs.shape) if d not in (*lhs_contract, *lhs_batch)]
    rhs_free = [s for d, s in enumerate(rhs.shape) if d not in (*rhs_contract, *rhs_batch)]
    return (*lhs_batch_shape, *lhs_free, *rhs_free)
    # END EXERCISE
# --8<-- [end:dot_general_shape]


def _dot_type_rank(dtype: np.dtype) -> tuple:
    # XLA's "higher precision type" order for mixed dots: complex, exponent, mantissa, bits
    real = np.finfo(dtype).dtype if dtypes.issubdtype(dtype, np.complexfloating) else dtype
    inexact = dtypes.issubdtype(real, np.floating)
    return (
        dtypes.issubdtype(dtype, np.complexfloating),
        np.finfo(real).maxexp if inexact else -1,
        np.finfo(real).nmant if inexact else -1,
        real.itemsize * 8 if real != np.bool_ else 1,
        not dtypes.issubdtype(real, np.unsignedinteger),
    )


def _dot_general_dtype_rule(
    lhs: core.ShapedArray, rhs: core.ShapedArray, *, dimension_numbers, precision,
    preferred_element_type, out_sharding,
) -> np.dtype:
    lhs_rank, rhs_rank = _dot_type_rank(lhs.dtype), _dot_type_rank(rhs.dtype)
    if lhs_rank == rhs_rank and lhs.dtype != rhs.dtype:
        raise TypeError(f"lax.dot_general argument type error: {lhs.dtype}, {rhs.dtype}")
    result = lhs.dtype if lhs_rank >= rhs_rank else rhs.dtype
    return maybe_upcast(result, preferred_element_type)


def _dot_general_impl(lhs, rhs, *, dimension_numbers, precision, preferred_element_type,
                      out_sharding):
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    # einsum with one letter per axis: shared letters for batch and contracting pairs
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    lhs_sub = [next(letters) for _ in range(lhs.ndim)]
    rhs_sub = [next(letters) for _ in range(rhs.ndim)]
    for ld, rd in zip((*lhs_contract, *lhs_batch), (*rhs_contract, *rhs_batch), strict=False):
        rhs_sub[rd] = lhs_sub[ld]
    batch = [lhs_sub[d] for d in lhs_batch]
    lhs_free = [c for d, c in enumerate(lhs_sub) if d not in (*lhs_contract, *lhs_batch)]
    rhs_free = [c for d, c in enumerate(rhs_sub) if d not in (*rhs_contract, *rhs_batch)]
    spec = f"{''.join(lhs_sub)},{''.join(rhs_sub)}->{''.join(batch + lhs_free + rhs_free)}"
    wanted = [] if preferred_element_type is None else [preferred_element_type]
    out_dtype = np.result_type(lhs.dtype, rhs.dtype, *wanted)
    return np.einsum(spec, lhs.astype(out_dtype), rhs.astype(out_dtype))


dot_general_p = standard_primitive(
    _dot_general_shape_rule, _dot_general_dtype_rule, "dot_general", _dot_general_impl
)


def dot_general(lhs: Any, rhs: Any, dimension_numbers: Any, precision: Any = None,
                preferred_element_type: Any = None, out_sharding: Any = None) -> Any:
    """A general tensor contraction. dimension_numbers is ((lhs_contracting, rhs_contracting),
    (lhs_batch, rhs_batch)); the result has the batch dims, then lhs's free dims, then rhs's."""
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    dims = ((tuple(map(int, lhs_contract)), tuple(map(int, rhs_contract))),
            (tuple(map(int, lhs_batch)), tuple(map(int, rhs_batch))))
    if preferred_element_type is not None:  # JAX's warning names dot
        preferred_element_type = dtypes.check_and_canonicalize_user_dtype(
            preferred_element_type, "dot")
    return dot_general_p.bind(
        lhs, rhs, dimension_numbers=dims, precision=canonicalize_precision(precision),
        preferred_element_type=preferred_element_type, out_sharding=out_sharding,
    )


def dot(lhs: Any, rhs: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """Vector/matrix products: contract lhs's last axis with rhs's first (ranks 1 or 2)."""
    lhs_ndim, rhs_ndim = np.ndim(lhs), np.ndim(rhs)
    if not (1 <= lhs_ndim <= 2 and 1 <= rhs_ndim <= 2):
        raise ValueError(
            "jax.lax.dot: dimension_numbers must be specified when not performing simple "
            "un-batched matrix-matrix, matrix-vector, or vector-vector products; "
            f"got lhs_shape={np.shape(lhs)} rhs_shape={np.shape(rhs)}"
        )
    dims = (((lhs_ndim - 1,), (0,)), ((), ()))
    return dot_general(lhs, rhs, dims, precision, preferred_element_type)


# ------------------------------------------------------------------ clamp


def _clamp_shape_rule(lo: core.ShapedArray, operand: core.ShapedArray,
                      hi: core.ShapedArray) -> tuple:
    if lo.shape and lo.shape != operand.shape:
        raise TypeError("clamp requires min.shape == operand.shape or min.shape == (), got "
                        f"min.shape={lo.shape}, operand.shape={operand.shape}.")
    if hi.shape and hi.shape != operand.shape:
        raise TypeError("clamp requires max.shape == operand.shape or max.shape == (), got "
                        f"max.shape={hi.shape}, operand.shape={operand.shape}.")
    return operand.shape


def _clamp_dtype_rule(lo: core.ShapedArray, operand: core.ShapedArray,
                      hi: core.ShapedArray) -> np.dtype:
    check_same_dtypes("clamp", lo, operand, hi)
    return operand.dtype


def _clamp_impl(lo: np.ndarray, operand: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return np.minimum(np.maximum(operand, lo), hi)


clamp_p = standard_primitive(_clamp_shape_rule, _clamp_dtype_rule, "clamp", _clamp_impl,
                             weak_type_rule=lambda lo, operand, hi: operand.weak_type)


# jax.lax.clamp's parameter names, which shadow lax.min and lax.max inside the body only
def clamp(min: Any, x: Any, max: Any) -> Any:  # noqa: F811
    """Elementwise min(max(x, min), max); `min` and `max` may be scalars of x's dtype."""
    return clamp_p.bind(min, x, max)


# ------------------------------------------------------------------ printing rules


def _dot_general_pp_rule(eqn, context, settings):
    # JAX prints the dimension numbers as lists, and hides None params and out_sharding
    params = {k: v for k, v in eqn.params.items() if v is not None and k != "out_sharding"}
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = params["dimension_numbers"]
    params["dimension_numbers"] = (
        (list(lhs_contract), list(rhs_contract)),
        (list(lhs_batch), list(rhs_batch)),
    )
    return core.default_pp_eqn(eqn.replace(params=params), context, settings)


core.pp_eqn_rules[convert_element_type_p] = drop_params("sharding", only_none=False)
core.pp_eqn_rules[dot_general_p] = _dot_general_pp_rule
