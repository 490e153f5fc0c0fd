"""einsum: a contraction written as subscripts, computed as a chain of dot_generals.

JAX: jax/_src/numpy/einsum.py. As JAX does, ours asks `opt_einsum.contract_path` for the order
of pairwise contractions (which also parses `...` and the implicit output), then walks that
path: an index only one side holds is summed away first, a repeated index within one operand
(a diagonal) is masked with a Kronecker delta and summed, and each pair meets in one
dot_general that accumulates in the result dtype.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import opt_einsum

from .. import dtypes, lax
from . import lax_numpy

__all__ = ["einsum"]


class _LeftToRight(opt_einsum.paths.PathOptimizer):
    """optimize=False: operand 0 with operand 1, that result with the next, and so on."""

    def __call__(self, inputs: Any, output: Any, size_dict: Any, memory_limit: Any = None):
        return [(0, 1)] * (len(inputs) - 1)


def _drop(names: str, chars: Any) -> str:
    return "".join(c for c in names if c not in chars)


def _delta(shape: tuple, axes: list[int]) -> Any:
    """A boolean array of `shape`, True where the indices along `axes` are all equal."""
    base = tuple(shape[a] for a in axes)
    iotas = [lax.broadcasted_iota(np.uint32, base, i) for i in range(len(base))]
    eye = lax.eq(iotas[0], iotas[1])
    for a, b in zip(iotas[1:-1], iotas[2:], strict=True):
        eye = lax.bitwise_and(eye, lax.eq(a, b))
    return lax.broadcast_in_dim(eye, shape, axes)


class _Contraction:
    """One einsum's sums and dot_generals, accumulating in `dtype`."""

    def __init__(self, dtype: np.dtype, precision: Any):
        self.dtype, self.precision = dtype, precision

    def sum(self, x: Any, axes: list[int]) -> Any:
        if dtypes.promote_types(dtypes.dtype(x), self.dtype) != dtypes.dtype(x):
            x = lax.convert_element_type(x, self.dtype)
        if dtypes.dtype(x) == np.bool_:  # a boolean sum is an `or`
            return lax.reduce_or(x, tuple(axes))
        return lax.reduce_sum(x, tuple(axes))

    def sum_uniques(self, x: Any, names: str, uniques: list[str]) -> tuple[Any, str]:
        """Sum away indices nothing else holds, in one reduction."""
        if not uniques:
            return x, names
        return self.sum(x, [names.index(c) for c in uniques]), _drop(names, uniques)

    def sum_repeats(self, x: Any, names: str, counts: Counter, keep: str) -> tuple[Any, str]:
        """A repeated index takes the diagonal: zero off it, then sum all copies but one (all
        of them when nothing later needs the index)."""
        for name, count in counts.items():
            if count < 2:
                continue
            axes = [i for i, c in enumerate(names) if c == name]
            x = lax.select(_delta(np.shape(x), axes), x, lax.full_like(x, 0))
            if name in keep:
                x, names = self.sum(x, axes[:-1]), names.replace(name, "", count - 1)
            else:
                x, names = self.sum(x, axes), names.replace(name, "")
        return x, names

    def one(self, x: Any, names: str, contracted: list[str], result: str) -> tuple[Any, str]:
        counts = Counter(names)
        x, names = self.sum_uniques(x, names, [c for c in contracted if counts[c] == 1])
        return self.sum_repeats(x, names, counts, result)

    def two(self, lhs: Any, lnames: str, rhs: Any, rnames: str, contracted: list[str],
            result: str) -> tuple[Any, str]:
        lhs, lnames = _squeeze_unmatched_ones(lhs, lnames, np.shape(rhs), rnames)
        rhs, rnames = _squeeze_unmatched_ones(rhs, rnames, np.shape(lhs), lnames)
        lcounts, rcounts = Counter(lnames), Counter(rnames)
        lhs, lnames = self.sum_uniques(
            lhs, lnames, [c for c in contracted if lcounts[c] == 1 and rcounts[c] == 0])
        rhs, rnames = self.sum_uniques(
            rhs, rnames, [c for c in contracted if rcounts[c] == 1 and lcounts[c] == 0])
        lhs, lnames = self.sum_repeats(lhs, lnames, lcounts, result + rnames)
        rhs, rnames = self.sum_repeats(rhs, rnames, rcounts, result + lnames)
        contracted = [c for c in contracted if c in lnames or c in rnames]
        batch = "".join(c for c in result if c in lnames and c in rnames)
        lfree, rfree = _drop(lnames, batch + "".join(contracted)), \
            _drop(rnames, batch + "".join(contracted))
        lc, rc = [lnames.index(c) for c in contracted], [rnames.index(c) for c in contracted]
        lb, rb = [lnames.index(c) for c in batch], [rnames.index(c) for c in batch]
        # rhs first when that lands the axes in the result's order (no transpose after)
        if batch + rfree + lfree == result:
            out = lax.dot_general(rhs, lhs, ((rc, lc), (rb, lb)), self.precision, self.dtype)
            return out, batch + rfree + lfree
        out = lax.dot_general(lhs, rhs, ((lc, rc), (lb, rb)), self.precision, self.dtype)
        return out, batch + lfree + rfree


def _squeeze_unmatched_ones(x: Any, names: str, other_shape: tuple, other: str
                            ) -> tuple[Any, str]:
    """Drop size-1 axes whose index the other side holds at a size other than 1."""
    shape = np.shape(x)
    drop = [i for i, c in enumerate(names)
            if shape[i] == 1 and c in other and other_shape[other.index(c)] != 1]
    if not drop:
        return x, names
    return lax.squeeze(x, drop), "".join(c for i, c in enumerate(names) if i not in drop)


def einsum(subscripts: str, *operands: Any, optimize: Any = "auto",
           precision: Any = None, preferred_element_type: Any = None) -> Any:
    """Sum of products over the indices missing from the output, e.g. 'ij,jk->ik'."""
    path_type = "optimal" if optimize is True else \
        _LeftToRight() if optimize is False else optimize
    # JAX: the same call; each step is (operand positions, indices summed away, 'ab,bc->ac')
    operands, steps = opt_einsum.contract_path(subscripts, *operands, einsum_call=True,
                                               use_blas=True, optimize=path_type)
    ops = [lax_numpy.asarray(x) for x in operands]
    if preferred_element_type is None:
        dtype, weak = dtypes.result_type(*ops, return_weak_type_flag=True)
    else:
        dtype = dtypes.check_and_canonicalize_user_dtype(preferred_element_type, "einsum")
        weak = False
    contraction = _Contraction(dtype, precision)
    for positions, removed, step, *_ in steps:
        contracted = sorted(removed)
        inputs, result = step.split("->")
        names = inputs.split(",")
        if len(positions) == 1:
            x, xnames = contraction.one(ops.pop(positions[0]), names[0], contracted, result)
        else:  # opt_einsum lists the later position first: that operand is lhs
            lhs, rhs = ops.pop(positions[0]), ops.pop(positions[1])
            x, xnames = contraction.two(lhs, names[0], rhs, names[1], contracted, result)
        if xnames != result:
            x = lax.transpose(x, tuple(xnames.index(c) for c in result))
        ops.append(x)
    return lax.convert_element_type(ops[0], dtype, weak)
