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

from stages.s01_pytrees import tree_flatten, tree_unflatten

from .. import dtypes
from .bitwise import bitwise_or
from .elementwise import add
from .reductions import cumred_shape_rule, number_dtype_rule, reduce_op_shape_rule
from .slicing import slice_in_dim
from .structural import concatenate, pad, rev
from .utils import canonicalize_axis, const, standard_primitive

__all__ = ["associative_scan", "cumlogsumexp", "cumlogsumexp_p", "cummax", "cummax_p",
           "cummin", "cummin_p", "cumprod", "cumprod_p", "reduce_prod", "reduce_prod_p"]


def _cumulative_impl(ufunc: Any):
    def impl(x: np.ndarray, *, axis: int, reverse: bool) -> np.ndarray:
        if reverse:
            x = np.flip(x, axis)
        out = ufunc.accumulate(x, axis=axis, dtype=x.dtype) if x.shape[axis] else x
        return np.flip(out, axis) if reverse else out
    return impl


def _cumulative(name: str, ufunc: Any, dtype_rule: Any) -> tuple[Any, Callable]:
    prim = standard_primitive(cumred_shape_rule, dtype_rule, name, _cumulative_impl(ufunc))

    def op(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
        return prim.bind(operand, axis=int(axis), reverse=bool(reverse))
    op.__name__ = name
    op.__doc__ = f"The running {name[3:]} along `axis` (from the end if `reverse`)."
    return prim, op


cumprod_p, cumprod = _cumulative("cumprod", np.multiply, number_dtype_rule("cumprod"))
cummax_p, cummax = _cumulative("cummax", np.maximum, number_dtype_rule("cummax"))
cummin_p, cummin = _cumulative("cummin", np.minimum, number_dtype_rule("cummin"))
cumlogsumexp_p, cumlogsumexp = _cumulative("cumlogsumexp", np.logaddexp,
                                           number_dtype_rule("cumlogsumexp"))


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
    flat, tree = tree_flatten(elems)
    if not flat:
        return elems
    axis = canonicalize_axis(axis, np.ndim(flat[0]))
    num = int(np.shape(flat[0])[axis])
    if not all(int(np.shape(x)[axis]) == num for x in flat[1:]):
        raise ValueError("Array inputs to associative_scan must have the same first "
                         f"dimension. (saw: {[np.shape(x) for x in flat]})")
    if reverse:
        flat = [rev(x, [axis]) for x in flat]

    def combine(a: list, b: list) -> list:
        out, out_tree = tree_flatten(fn(tree_unflatten(tree, a), tree_unflatten(tree, b)))
        if out_tree != tree:
            raise ValueError(f"combine function output must have same structure as input: "
                             f"{out_tree} vs {tree}")
        return out

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
