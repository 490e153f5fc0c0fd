"""lax: the primitives every jaxpr is made of, each with a numpy impl and an abstract-eval rule.

JAX: jax/_src/lax/lax.py (here: select_n, convert_element_type, full, dot_general). The
other primitives live by concept and are re-exported here, so `lax.add` and `lax.reshape` work as in
`jax.lax`: lax_elementwise.py, lax_structural.py, lax_reductions.py and slicing.py (JAX:
lax/slicing.py), all built with lax_utils.py. Wrappers keep jax.lax's signatures and defaults;
lax never promotes dtypes. This module also installs `ShapedArray._iter` (`for row in tracer`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import core, dtypes
from .lax_elementwise import (  # noqa: F401
    RoundingMethod,
    abs,
    abs_p,
    add,
    add_p,
    and_p,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    ceil,
    ceil_p,
    clamp,
    clamp_p,
    cos,
    cos_p,
    div,
    div_p,
    eq,
    eq_p,
    erf,
    erf_p,
    exp,
    exp_p,
    floor,
    floor_p,
    ge,
    ge_p,
    gt,
    gt_p,
    integer_pow,
    integer_pow_p,
    le,
    le_p,
    log,
    log1p,
    log_p,
    logistic,
    logistic_p,
    lt,
    lt_p,
    max,
    max_p,
    min,
    min_p,
    mul,
    mul_p,
    ne,
    ne_p,
    neg,
    neg_p,
    not_p,
    or_p,
    pow,
    pow_p,
    rem,
    rem_p,
    round,
    round_p,
    rsqrt,
    rsqrt_p,
    shift_left,
    shift_left_p,
    shift_right_arithmetic,
    shift_right_arithmetic_p,
    shift_right_logical,
    shift_right_logical_p,
    sign,
    sign_p,
    sin,
    sin_p,
    sqrt,
    sqrt_p,
    sub,
    sub_p,
    tan,
    tan_p,
    tanh,
    tanh_p,
    xor_p,
)
from .lax_reductions import (  # noqa: F401  (re-exported: jax.lax has them)
    argmax,
    argmax_p,
    argmin,
    argmin_p,
    cumsum,
    cumsum_p,
    reduce_max,
    reduce_max_p,
    reduce_min,
    reduce_min_p,
    reduce_sum,
    reduce_sum_p,
)
from .lax_structural import (  # noqa: F401
    broadcast,
    broadcast_in_dim,
    broadcast_in_dim_p,
    broadcasted_iota,
    concatenate,
    concatenate_p,
    expand_dims,
    iota,
    iota_p,
    pad,
    pad_p,
    reshape,
    reshape_p,
    squeeze,
    squeeze_p,
    transpose,
    transpose_p,
)
from .lax_utils import (  # noqa: F401  (Precision: re-exported, as jax.lax has it)
    Precision,
    _drop_params,
    _same_shape,
    canonicalize_precision,
    check_same_dtypes,
    standard_primitive,
)
from .partial_eval import DynamicJaxprTrace
from .slicing import (  # noqa: F401
    dynamic_index_in_dim,
    dynamic_slice,
    dynamic_slice_in_dim,
    dynamic_slice_p,
    dynamic_update_slice,
    dynamic_update_slice_in_dim,
    dynamic_update_slice_p,
    index_in_dim,
    slice,
    slice_in_dim,
    slice_p,
)

# ------------------------------------------------------------------ select_n, convert_element_type


def _select_n_shape_rule(which: core.ShapedArray, *cases: core.ShapedArray) -> tuple:
    if not cases:
        raise TypeError("select_n must have at least one case")
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
    if which.dtype != np.bool_ and not np.issubdtype(which.dtype, np.integer):
        raise TypeError(f"select `which` must be boolean or integer type, got {which.dtype}.")
    if which.dtype == np.bool_ and len(cases) > 2:
        raise TypeError("select with boolean `which` cannot have > 2 cases.")
    return cases[0].dtype


def _select_n_impl(which: np.ndarray, *cases: np.ndarray) -> np.ndarray:
    return np.choose(which.astype(np.int32), cases)


select_n_p = standard_primitive(
    _select_n_shape_rule,
    _select_n_dtype_rule,
    "select_n",
    _select_n_impl,
    weak_type_rule=lambda which, *cases: all(c.weak_type for c in cases),
)


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
    if np.iscomplexobj(x) and not np.issubdtype(new_dtype, np.complexfloating):
        x = x.real  # JAX warns that the imaginary part is dropped; we drop it quietly
    if np.issubdtype(x.dtype, np.floating) and np.issubdtype(new_dtype, np.integer):
        return _float_to_int(x, new_dtype)
    return x.astype(new_dtype)


class ConvertElementTypePrimitive(core.Primitive):
    """convert_element_type, folded when a jaxpr being staged receives a constant scalar."""

    # JAX: pe.const_fold_rules[convert_element_type_p], which DynamicJaxprTrace consults. So
    # the fold happens only where a jaxpr is staged: under JaxprTrace or JVPTrace the
    # conversion of a known value stays a real application (eager: a computed value).
    def bind_with_trace(self, trace: core.Trace, args: Sequence[Any], params: dict) -> Any:
        (operand,) = args
        if isinstance(trace, DynamicJaxprTrace) and isinstance(operand, _SCALAR_TYPES):
            folded = _convert_element_type_impl(np.asarray(operand), **params)
            if not params["weak_type"]:
                return folded  # a 0-d numpy array: a strong literal
            if core.get_aval(folded.item()).dtype == folded.dtype:
                return folded.item()  # a Python scalar: the weak literal (2 -> 2.0:f32[])
        return super().bind_with_trace(trace, args, params)


_SCALAR_TYPES = (bool, int, float, complex, np.generic)

convert_element_type_p = standard_primitive(
    _same_shape,
    lambda x, *, new_dtype, weak_type, sharding: new_dtype,
    "convert_element_type",
    _convert_element_type_impl,
    weak_type_rule=lambda x, *, new_dtype, weak_type, sharding: weak_type,
    primitive_class=ConvertElementTypePrimitive,
)


def _convert_element_type(operand: Any, new_dtype: Any = None, weak_type: bool = False) -> Any:
    """convert_element_type with a weak_type choice; no equation when nothing would change."""
    # JAX: lax._convert_element_type
    old_dtype = dtypes.dtype(operand)  # canonical: an int64 numpy array counts as int32
    new_dtype = old_dtype if new_dtype is None else dtypes.canonicalize_dtype(new_dtype)
    if old_dtype == new_dtype and dtypes.is_weakly_typed(operand) == bool(weak_type):
        is_64bit_numpy = isinstance(operand, np.ndarray) and operand.dtype != new_dtype
        if is_64bit_numpy and core.trace_ctx.is_top_level():
            return operand.astype(new_dtype)  # eager results have canonical dtypes
        # Traced, a 64-bit numpy array stays as it is: the trace makes it one canonical
        # constvar however often it is used (JAX forwards such a no-op convert away).
        return operand
    return convert_element_type_p.bind(
        operand, new_dtype=new_dtype, weak_type=bool(weak_type), sharding=None
    )


def convert_element_type(operand: Any, new_dtype: Any) -> Any:
    """Cast to `new_dtype` (canonicalized: float64 becomes float32); the result is not weak."""
    return _convert_element_type(operand, new_dtype, weak_type=False)


# ------------------------------------------------------------------ full and friends


def full(shape: Sequence[int], fill_value: Any, dtype: Any = None) -> Any:
    """An array of `shape` filled with a scalar; weak when fill_value is and dtype is None."""
    if np.shape(fill_value):
        raise TypeError(
            "full must be called with scalar fill_value, "
            f"got fill_value.shape {np.shape(fill_value)}."
        )
    weak_type = dtype is None and dtypes.is_weakly_typed(fill_value)
    fill_dtype = dtypes.dtype(fill_value) if dtype is None else dtypes.canonicalize_dtype(dtype)
    return broadcast(_convert_element_type(fill_value, fill_dtype, weak_type), tuple(shape))


def full_like(x: Any, fill_value: Any, dtype: Any = None, shape: Any = None) -> Any:
    """An array like `x` (its shape and dtype unless given) filled with a scalar."""
    fill_shape = np.shape(x) if shape is None else tuple(shape)
    weak_type = dtype is None and dtypes.is_weakly_typed(x)
    dtype = dtypes.dtype(x) if dtype is None else dtypes.canonicalize_dtype(dtype)
    return full(fill_shape, _convert_element_type(fill_value, dtype, weak_type))


def zeros_like_array(x: Any) -> Any:
    """Zeros of x's shape and dtype (JAX: lax_internal.zeros_like_array)."""
    return full_like(x, 0)


# ------------------------------------------------------------------ dot_general


# --8<-- [start:dot_general_shape]
def _dot_general_shape_rule(
    lhs: core.ShapedArray, rhs: core.ShapedArray, *, dimension_numbers, precision,
    preferred_element_type, out_sharding,
) -> tuple:
    """Output dims: batch dims, then lhs free dims, then rhs free dims (each in order)."""
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    # EXERCISE 2.2 (abstract-eval): check the dimension numbers, then build the output shape
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
    real = np.finfo(dtype).dtype if np.issubdtype(dtype, np.complexfloating) else dtype
    inexact = np.issubdtype(real, np.floating)
    return (
        np.issubdtype(dtype, np.complexfloating),
        np.finfo(real).maxexp if inexact else -1,
        np.finfo(real).nmant if inexact else -1,
        real.itemsize * 8 if real != np.bool_ else 1,
        not np.issubdtype(real, np.unsignedinteger),
    )


def _dot_general_dtype_rule(
    lhs: core.ShapedArray, rhs: core.ShapedArray, *, dimension_numbers, precision,
    preferred_element_type, out_sharding,
) -> np.dtype:
    lhs_rank, rhs_rank = _dot_type_rank(lhs.dtype), _dot_type_rank(rhs.dtype)
    if lhs_rank == rhs_rank and lhs.dtype != rhs.dtype:
        raise TypeError(f"lax.dot_general argument type error: {lhs.dtype}, {rhs.dtype}")
    result = lhs.dtype if lhs_rank >= rhs_rank else rhs.dtype
    return result if preferred_element_type is None else preferred_element_type


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


def dot_general(
    lhs: Any, rhs: Any, dimension_numbers: Any, precision: Any = None,
    preferred_element_type: Any = None,
) -> Any:
    """A general tensor contraction.

    dimension_numbers is ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)); the result
    has the batch dims, then lhs's free dims, then rhs's free dims.
    """
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    dims = (
        (tuple(map(int, lhs_contract)), tuple(map(int, rhs_contract))),
        (tuple(map(int, lhs_batch)), tuple(map(int, rhs_batch))),
    )
    if preferred_element_type is not None:
        preferred_element_type = dtypes.canonicalize_dtype(preferred_element_type)
    return dot_general_p.bind(
        lhs, rhs, dimension_numbers=dims, precision=canonicalize_precision(precision),
        preferred_element_type=preferred_element_type, out_sharding=None,
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


# ------------------------------------------------------------------ printing rules


def _dot_general_pp_rule(eqn, context, settings):
    # JAX prints the dimension numbers as lists, and hides None params and out_sharding
    params = {k: v for k, v in eqn.params.items() if v is not None and k != "out_sharding"}
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = params["dimension_numbers"]
    params["dimension_numbers"] = (
        (list(lhs_contract), list(rhs_contract)),
        (list(lhs_batch), list(rhs_batch)),
    )
    return core._pp_eqn(eqn.replace(params=params), context, settings)


core.pp_eqn_rules[convert_element_type_p] = _drop_params("sharding", only_none=False)
core.pp_eqn_rules[dot_general_p] = _dot_general_pp_rule


def _iter(tracer: Any) -> Any:
    # `for row in x` on a tracer: one static index_in_dim per row (JAX: lax._iter)
    if tracer.ndim == 0:
        raise TypeError("iteration over a 0-d array")  # same as numpy's error
    return (index_in_dim(tracer, i, keepdims=False) for i in range(tracer.shape[0]))


core.ShapedArray._iter = staticmethod(_iter)
