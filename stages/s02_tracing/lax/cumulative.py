"""Running reductions (cumprod, cummax, cummin, cumlogsumexp), reduce_prod, and
associative_scan, the parallel prefix scan they are all instances of.

JAX: jax/_src/lax/control_flow/loops.py (`associative_scan`, `_interleave`, the `cum*_p`
primitives) and lax.py (`reduce_prod_p`). associative_scan never loops: with an associative
`fn`, it combines neighbouring pairs (halving the problem), scans the halves recursively, and
fixes up the other half with one more combine, O(log n) levels of array ops.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from stages.s01_pytrees import tree_flatten, tree_leaves, tree_unflatten

from .. import dtypes
from .bitwise import bitwise_or
from .elementwise import add
from .kernels import max_impl, min_impl
from .reductions import cumred_shape_rule, number_dtype_rule, reduce_op_shape_rule
from .slicing import slice_in_dim
from .structural import concatenate, pad, rev
from .utils import canonicalize_axis, const, standard_primitive

__all__ = ["associative_scan", "cumlogsumexp", "cumlogsumexp_p", "cummax", "cummax_p",
           "cummin", "cummin_p", "cumprod", "cumprod_p", "reduce_prod", "reduce_prod_p"]


def _cumulative_impl(ufunc: Any, complex_op: Callable | None = None):
    def impl(x: np.ndarray, *, axis: int, reverse: bool) -> np.ndarray:
        if reverse:
            x = np.flip(x, axis)
        if not x.shape[axis]:
            out = x
        elif complex_op is not None and np.iscomplexobj(x):  # a fold numpy has no loop for
            # cumlogsumexp from the init, -inf, as XLA's reduce_window folds: the first element
            # is combined too (logaddexp wraps its imaginary part); max and min from the first,
            # in XLA's complex order (numpy's NaN rules differ)
            out = np.moveaxis(x, axis, 0).copy()
            if reverse and complex_op is not _complex_logaddexp and np.isnan(out).any():
                out = _suffix_folds(complex_op, out)  # XLA's order, which NaNs tell apart
            else:
                acc = np.full_like(out[0], -np.inf) if complex_op is _complex_logaddexp else \
                    out[0]
                for i in range(out.shape[0]):
                    out[i] = acc = complex_op(acc, out[i])
            out = np.moveaxis(out, 0, axis)
        else:
            out = ufunc.accumulate(x, axis=axis, dtype=x.dtype)
        return np.flip(out, axis) if reverse else out
    return impl


def _suffix_folds(op: Callable, flipped: np.ndarray) -> np.ndarray:
    """A reversed complex cummax or cummin with NaNs, as XLA's reduce_window computes it: each
    output folds its window in the array's own order, which no running fold reproduces (with
    NaNs, XLA's complex max is not commutative). `flipped` is the array reversed."""
    out = flipped.copy()
    for i in range(1, out.shape[0]):
        acc = flipped[i]
        for j in range(i - 1, -1, -1):
            acc = op(acc, flipped[j])
        out[i] = acc
    return out


def _complex_logaddexp(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """JAX's complex logaddexp, op by op: the larger (as max_p orders complex values) plus
    log1p(exp(a + b - 2 * larger)), its imaginary part wrapped into [-pi, pi]."""
    amax = max_impl(a, b)
    out = amax + np.log1p(np.exp(a + b - amax * 2))
    turn = np.fmod(out.imag + np.pi, 2 * np.pi)
    turn = np.where(turn < 0, turn + 2 * np.pi, turn) - np.pi
    result = np.empty_like(out)
    result.real, result.imag = out.real, turn
    return result


def _cumulative(name: str, ufunc: Any, dtype_rule: Any, complex_op: Callable | None = None
                ) -> tuple[Any, Callable]:
    prim = standard_primitive(cumred_shape_rule, dtype_rule, name,
                              _cumulative_impl(ufunc, complex_op))

    def op(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
        return prim.bind(operand, axis=int(axis), reverse=bool(reverse))
    op.__name__ = name
    op.__doc__ = f"The running {name[3:]} along `axis` (from the end if `reverse`)."
    return prim, op


cumprod_p, cumprod = _cumulative("cumprod", np.multiply, number_dtype_rule("cumprod"))
cummax_p, cummax = _cumulative("cummax", np.maximum, number_dtype_rule("cummax"), max_impl)
cummin_p, cummin = _cumulative("cummin", np.minimum, number_dtype_rule("cummin"), min_impl)
cumlogsumexp_p, cumlogsumexp = _cumulative("cumlogsumexp", np.logaddexp,
                                           number_dtype_rule("cumlogsumexp"),
                                           complex_op=_complex_logaddexp)


def _reduce_prod_impl(x: np.ndarray, *, axes: tuple[int, ...]) -> np.ndarray:
    return np.prod(x, axis=axes, dtype=x.dtype)


reduce_prod_p = standard_primitive(reduce_op_shape_rule, number_dtype_rule("reduce_prod"),
                                   "reduce_prod", _reduce_prod_impl)


def reduce_prod(operand: Any, axes: Any) -> Any:
    """The product over `axes`."""
    return reduce_prod_p.bind(operand, axes=tuple(int(a) for a in axes))


# ------------------------------------------------------------------ associative_scan


def _interleave(a: Any, b: Any, axis: int) -> Any:
    """[a0, b0, a1, b1, ...] along axis: each padded with zeros between, then added."""
    same = np.shape(a)[axis] == np.shape(b)[axis]
    a_pad = [(0, 0, 0)] * np.ndim(a)
    b_pad = [(0, 0, 0)] * np.ndim(b)
    a_pad[axis] = (0, 1 if same else 0, 1)
    b_pad[axis] = (1, 0 if same else 1, 1)
    op = bitwise_or if dtypes.dtype(a) == np.bool_ else add
    return op(pad(a, const(a, 0), a_pad), pad(b, const(b, 0), b_pad))


# --8<-- [start:associative_scan]
def associative_scan(fn: Callable, elems: Any, reverse: bool = False, axis: int = 0) -> Any:
    """All prefix combinations of `elems` along `axis`: [e0, fn(e0, e1), fn(fn(e0, e1), e2),
    ...], for an associative `fn` of two pytrees like `elems` (applied elementwise)."""
    if not callable(fn):
        raise TypeError("lax.associative_scan: fn argument should be callable.")
    flat, tree = tree_flatten(elems)
    if reverse:  # before the axis is canonicalized: rev refuses a negative one (JAX: same)
        flat = [rev(x, [axis]) for x in flat]
    axis = canonicalize_axis(axis, np.ndim(flat[0]))  # no leaves: an IndexError, as JAX's
    num = int(np.shape(flat[0])[axis])
    if not all(int(np.shape(x)[axis]) == num for x in flat[1:]):
        raise ValueError("Array inputs to associative_scan must have the same first "
                         f"dimension. (saw: {[np.shape(x) for x in flat]})")

    def combine(a: list, b: list) -> list:
        # only fn's leaves count: a list for a tuple is taken, as JAX takes it
        return tree_leaves(fn(tree_unflatten(tree, a), tree_unflatten(tree, b)))

    def scan(elems: list) -> list:
        n = np.shape(elems[0])[axis]
        if n < 2:
            return elems
        pairs = combine([slice_in_dim(e, 0, -1, stride=2, axis=axis) for e in elems],
                        [slice_in_dim(e, 1, None, stride=2, axis=axis) for e in elems])
        odd = scan(pairs)  # the prefixes ending at odd positions 1, 3, 5, ...
        # JAX's order: the prefixes' slices first, then elems' (the printed jaxpr shows it)
        head = [slice_in_dim(e, 0, -1, axis=axis) for e in odd] if n % 2 == 0 else odd
        later = [slice_in_dim(e, 2, None, stride=2, axis=axis) for e in elems]
        even = [concatenate([slice_in_dim(e, 0, 1, axis=axis), r], axis)
                for e, r in zip(elems, combine(head, later), strict=True)]
        return [_interleave(e, o, axis) for e, o in zip(even, odd, strict=True)]

    out = scan(flat)
    if reverse:
        out = [rev(x, [axis]) for x in out]
    return tree_unflatten(tree, out)
# --8<-- [end:associative_scan]
