"""A transpose rule for every linear primitive, registered in `ad.primitive_transposes`.

JAX: the `ad.deflinear2`/`ad.primitive_transposes[...]` lines next to each primitive in
jax/_src/lax/lax.py and slicing.py. A rule gets the output cotangent `ct` and the inputs, the
linear ones as `UndefinedPrimal` (only their aval is known), and returns one cotangent per
input (None for an input that is not linear). `ct` is never a symbolic Zero here: the
backward pass skips an equation whose outputs received no cotangent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from stages.s02_tracing import core, dtypes, lax
from stages.s02_tracing.core import ShapedArray
from stages.s02_tracing.lax.utils import const

from . import ad_util
from .ad import is_undefined_primal, primitive_transposes


def _nonlinear(name: str) -> ValueError:
    # JAX fails here with a bare AssertionError; we say what went wrong.
    return ValueError(f"Transpose of '{name}' with all of its operands linear: the function "
                      "being transposed is not linear in its inputs")


def _zeros(aval: ShapedArray) -> Any:
    return lax.full(aval.shape, 0, aval.dtype)


def unbroadcast(aval: ShapedArray, ct: Any) -> Any:
    """Sum `ct` down to `aval`'s shape: undo lax's implicit rank-0 / size-1 broadcasting."""
    ct_shape = np.shape(ct)
    if ct_shape == aval.shape:
        return ct
    if not aval.shape:
        return lax.reduce_sum(ct, tuple(range(len(ct_shape))))
    dims = tuple(i for i, (a, b) in enumerate(zip(ct_shape, aval.shape, strict=True)) if a != b)
    return lax.reshape(lax.reduce_sum(ct, dims), aval.shape)


# ------------------------------------------------------------------ elementwise


def _neg_transpose(ct, x):
    return [lax.neg(ct)]


def _add_transpose(ct, x, y):
    return [unbroadcast(x.aval, ct) if is_undefined_primal(x) else None,
            unbroadcast(y.aval, ct) if is_undefined_primal(y) else None]


def _sub_transpose(ct, x, y):
    return [unbroadcast(x.aval, ct) if is_undefined_primal(x) else None,
            unbroadcast(y.aval, lax.neg(ct)) if is_undefined_primal(y) else None]


def _add_jaxvals_transpose(ct, x, y):
    return [ct if is_undefined_primal(x) else None, ct if is_undefined_primal(y) else None]


# --8<-- [start:mul_transpose]
def _mul_transpose(ct, x, y, *, out_dtype):
    """z = x * y with y known: x's cotangent is ct * y (summed back to x's shape)."""
    if is_undefined_primal(x) and is_undefined_primal(y):
        raise _nonlinear("mul")
    if is_undefined_primal(x):
        return [unbroadcast(x.aval, lax.mul(ct, y)), None]
    return [None, unbroadcast(y.aval, lax.mul(x, ct))]
# --8<-- [end:mul_transpose]


def _div_transpose(ct, x, y):
    if is_undefined_primal(y):
        raise _nonlinear("div")  # linear in the numerator only
    return [unbroadcast(x.aval, lax.div(ct, y)), None]


def _convert_element_type_transpose(ct, operand, *, new_dtype, weak_type, sharding):
    aval = operand.aval
    if ad_util.primal_dtype_to_tangent_dtype(aval.dtype) == ad_util.float0:
        return [ad_util.Zero(ad_util.tangent_aval(aval))]
    # back to the operand's type; a cotangent already of that type is forwarded, as JAX's is
    ct_aval = core.get_aval(ct)
    if (ct_aval.dtype, ct_aval.weak_type) == (aval.dtype, aval.weak_type):
        return [ct]
    return [lax.convert_element_type_p.bind(ct, new_dtype=aval.dtype, weak_type=aval.weak_type,
                                            sharding=sharding)]


def _select_n_transpose(ct, which, *cases):
    """Each linear case gets ct where it was selected and zeros elsewhere."""
    if is_undefined_primal(which):
        raise _nonlinear("select_n")
    zeros = lax.full_like(ct, 0)
    if dtypes.dtype(which) == np.bool_:  # two cases: which picks ct or zeros directly
        return [None] + [
            lax.select_n(which, *[ct if i == j else zeros for j in range(len(cases))])
            if is_undefined_primal(case) else None
            for i, case in enumerate(cases)]
    # an integer index: compare it with each case's number first, as JAX's rule does
    return [None] + [
        lax.select_n(lax.eq(which, const(which, i)), zeros, ct)
        if is_undefined_primal(case) else None
        for i, case in enumerate(cases)]


primitive_transposes[lax.neg_p] = _neg_transpose
primitive_transposes[lax.add_p] = _add_transpose
primitive_transposes[lax.sub_p] = _sub_transpose
primitive_transposes[ad_util.add_jaxvals_p] = _add_jaxvals_transpose
primitive_transposes[lax.mul_p] = _mul_transpose
primitive_transposes[lax.div_p] = _div_transpose
primitive_transposes[lax.convert_element_type_p] = _convert_element_type_transpose
primitive_transposes[lax.select_n_p] = _select_n_transpose

# ------------------------------------------------------------------ dot_general


# --8<-- [start:dot_general_transpose]
def _dot_general_transpose_lhs(ct, x, y, *, dimension_numbers, precision,
                               preferred_element_type, out_sharding, swap_ans=False):
    """x's cotangent: contract ct with y over y's free dims, then put x's axes back in order.

    ct has the axes (batch..., x free..., y free...) of dot_general's output.
    """
    # EXERCISE 4.5 (dot-transpose): dot ct with y, then transpose into x's axis order
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    x_ndim, y_ndim = x.aval.ndim, np.ndim(y)
    x_free = [d for d in range(x_ndim) if d not in (*x_contract, *x_batch)]
    y_free = [d for d in range(y_ndim) if d not in (*y_contract, *y_batch)]
    n_batch, n_x_free = len(x_batch), len(x_free)
    # ct's y-free axes sit after its batch and x-free axes (before them when swapped)
    if swap_ans:
        ct_y_free = list(range(n_batch, n_batch + len(y_free)))
    else:
        ct_y_free = list(range(n_batch + n_x_free, n_batch + n_x_free + len(y_free)))
    dims = ((tuple(ct_y_free), tuple(y_free)), (tuple(range(n_batch)), tuple(y_batch)))
    # out's axes: batch, x's free axes, then x's contracted axes in y's axis order
    out_axes = [*x_batch, *x_free, *[x_contract[i] for i in np.argsort(y_contract)]]
    out = lax.dot_general(ct, y, dims, precision=precision,
                          preferred_element_type=preferred_element_type,
                          out_sharding=sharding_in_order(x.aval, out_axes))
    out = lax.transpose(out, tuple(np.argsort(out_axes)))
    # END EXERCISE
    if out.dtype != x.aval.dtype:  # mixed-precision dots: back to the operand's dtype
        out = lax.convert_element_type(out, x.aval.dtype)
    return out


def sharding_in_order(aval: Any, axes: Sequence[int]) -> Any:
    """Where shardings are types (stage 11), x's cotangent is split as x is: its sharding with
    the spec read in the dot's axis order. None before then."""
    s = aval.sharding
    return None if s is None else s.update(spec=tuple(s.spec[a] for a in axes))


def _dot_general_transpose_rhs(ct, x, y, *, dimension_numbers, **params):
    """y's cotangent: the lhs rule with the operands' roles swapped."""
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    swapped = ((y_contract, x_contract), (y_batch, x_batch))
    return _dot_general_transpose_lhs(ct, y, x, dimension_numbers=swapped, swap_ans=True,
                                      **params)


def _dot_general_transpose(ct, x, y, **params):
    if is_undefined_primal(x) and is_undefined_primal(y):
        raise _nonlinear("dot_general")
    if is_undefined_primal(x):
        return [_dot_general_transpose_lhs(ct, x, y, **params), None]
    return [None, _dot_general_transpose_rhs(ct, x, y, **params)]
# --8<-- [end:dot_general_transpose]


primitive_transposes[lax.dot_general_p] = _dot_general_transpose

# ------------------------------------------------------------------ reductions and structure


def _reduce_sum_transpose(ct, operand, *, axes, out_sharding):
    kept = tuple(np.delete(np.arange(operand.aval.ndim), axes))  # np.int64s, as JAX prints
    return [lax.broadcast_in_dim(ct, operand.aval.shape, kept)]


def _cumsum_transpose(ct, operand, *, axis, reverse):
    return [lax.cumsum(ct, axis, reverse=not reverse)]


def _broadcast_in_dim_transpose(ct, operand, *, shape, broadcast_dimensions, sharding):
    """Sum over every axis not fed by a non-unit operand axis, then put the unit axes back."""
    aval = operand.aval
    spec = aval.sharding.spec if aval.sharding is not None else (None,) * aval.ndim
    unit_dims = [i for i, (d, p) in enumerate(zip(aval.shape, spec, strict=True))
                 if d == 1 and p is None]
    bdims = [d for i, d in enumerate(broadcast_dimensions) if i not in unit_dims]
    axes = tuple(d for d in range(len(shape)) if d not in bdims)
    return [lax.expand_dims(lax.reduce_sum(ct, axes), unit_dims)]


def _reshape_transpose(ct, operand, *, new_sizes, dimensions, sharding):
    if dimensions is None:
        return [lax.reshape(ct, operand.aval.shape)]
    permuted = tuple(np.take(operand.aval.shape, dimensions))
    return [lax.transpose(lax.reshape(ct, permuted), tuple(np.argsort(dimensions)))]


def _transpose_transpose(ct, operand, *, permutation):
    return [lax.transpose(ct, tuple(np.argsort(permutation)))]


def _rev_transpose(ct, operand, *, dimensions):
    return [lax.rev(ct, dimensions)]


def _squeeze_transpose(ct, operand, *, dimensions):
    return [lax.expand_dims(ct, dimensions)]


def _concatenate_transpose(ct, *operands, dimension):
    """ct cut back into the operands' pieces by one split; each linear operand gets its own."""
    sizes = [(x.aval if is_undefined_primal(x) else core.get_aval(x)).shape[dimension]
             for x in operands]
    pieces = lax.split(ct, sizes, dimension)
    return [p if is_undefined_primal(x) else None for p, x in zip(pieces, operands, strict=True)]


primitive_transposes[lax.reduce_sum_p] = _reduce_sum_transpose
primitive_transposes[lax.cumsum_p] = _cumsum_transpose
primitive_transposes[lax.broadcast_in_dim_p] = _broadcast_in_dim_transpose
primitive_transposes[lax.reshape_p] = _reshape_transpose
primitive_transposes[lax.transpose_p] = _transpose_transpose
primitive_transposes[lax.squeeze_p] = _squeeze_transpose
primitive_transposes[lax.rev_p] = _rev_transpose
primitive_transposes[lax.concatenate_p] = _concatenate_transpose

# ------------------------------------------------------------------ slicing and padding


def _slice_transpose(ct, operand, *, start_indices, limit_indices, strides):
    """Pad ct back to the operand's shape with zeros (interior zeros undo the strides)."""
    shape = operand.aval.shape
    # the high (and interior) pads are computed with numpy, as JAX computes them: the values
    # are the same as Python ints would give; only the printed jaxpr shows the difference,
    # `padding_config=((0, np.int64(2), 0),)`, and it matches JAX's that way
    if strides is None or np.all(np.equal(strides, 1)):
        pads = zip(start_indices, np.subtract(shape, limit_indices), (0,) * len(shape),
                   strict=True)
    else:
        # one past the last element taken along each axis
        n = np.shape(ct)
        real_limits = np.add(start_indices, np.where(
            np.equal(n, 0), 0, np.add(1, np.multiply(np.subtract(n, 1), strides))))
        pads = zip(start_indices, np.subtract(shape, real_limits), np.subtract(strides, 1),
                   strict=True)
    return [lax.pad(ct, np.zeros((), ct.dtype)[()], pads)]


def _pad_transpose(ct, operand, padding_value, *, padding_config):
    """The operand gets the unpadded part of ct; the padding value gets the sum of the rest."""
    lo, hi, interior = np.array(padding_config, int).reshape(-1, 3).T
    # numpy again, for the reason _slice_transpose gives
    unpad = list(zip(np.negative(lo), np.negative(hi), np.zeros_like(interior), strict=True))
    unpadded = lax.pad(ct, np.zeros((), ct.dtype)[()], unpad)
    ct_operand = lax.slice(unpadded, list(np.zeros_like(lo)), np.shape(unpadded),
                           list(np.add(interior, 1)))
    ct_padding = None
    if is_undefined_primal(padding_value):
        everything = tuple(range(np.ndim(ct)))
        ct_padding = lax.sub(lax.reduce_sum(ct, everything),
                             lax.reduce_sum(ct_operand, everything))
    return [ct_operand if is_undefined_primal(operand) else None, ct_padding]


def _dynamic_slice_transpose(ct, operand, *starts, slice_sizes):
    zeros = _zeros(operand.aval)
    return [lax.dynamic_update_slice_p.bind(zeros, ct, *starts)] + [None] * len(starts)


def _dynamic_update_slice_transpose(ct, operand, update, *starts):
    update_aval = update.aval if is_undefined_primal(update) else core.get_aval(update)
    ct_operand = lax.dynamic_update_slice_p.bind(ct, _zeros(update_aval), *starts)
    ct_update = lax.dynamic_slice_p.bind(ct, *starts, slice_sizes=update_aval.shape)
    return [ct_operand if is_undefined_primal(operand) else None,
            ct_update if is_undefined_primal(update) else None] + [None] * len(starts)


primitive_transposes[lax.slice_p] = _slice_transpose
primitive_transposes[lax.pad_p] = _pad_transpose
primitive_transposes[lax.dynamic_slice_p] = _dynamic_slice_transpose
primitive_transposes[lax.dynamic_update_slice_p] = _dynamic_update_slice_transpose
