"""split: one array cut into consecutive pieces along an axis (the inverse of concatenate).

JAX: jax/_src/lax/lax.py (`split`, `split_p`, `_split_shape_rule`). It is a primitive with
several results, not a series of slices, so that the transpose of a concatenate is one
equation: `split[axis=0 sizes=(2, 3)]`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import core
from .utils import canonicalize_axis

__all__ = ["split", "split_p"]


def _split_shape_rule(operand: core.ShapedArray, *, sizes: Sequence[int], axis: int
                      ) -> list[tuple[int, ...]]:
    if any(s < 0 for s in sizes):
        raise ValueError(f"Sizes passed to split must be nonnegative, got {list(sizes)}")
    if operand.shape[axis] != np.sum(sizes):
        raise ValueError(f"Sum of sizes {np.sum(sizes)} must be equal to dimension {axis} of "
                         f"the operand shape {list(operand.shape)}")
    return [operand.shape[:axis] + (s,) + operand.shape[axis + 1:] for s in sizes]


def _split_abstract_eval(operand: core.ShapedArray, *, sizes: Sequence[int], axis: int
                         ) -> list[core.ShapedArray]:
    # each piece keeps the operand's dtype and weak type
    return [core.ShapedArray(s, operand.dtype, weak_type=operand.weak_type)
            for s in _split_shape_rule(operand, sizes=sizes, axis=axis)]


def _split_impl(x: Any, *, sizes: Sequence[int], axis: int) -> list[np.ndarray]:
    _split_shape_rule(core.get_aval(x), sizes=sizes, axis=axis)  # eager calls check too
    return [p.copy() for p in np.split(np.asarray(x), np.cumsum(sizes)[:-1], axis=axis)]


split_p = core.Primitive("split")
split_p.multiple_results = True
split_p.def_impl(_split_impl)
split_p.def_abstract_eval(_split_abstract_eval)
split_p.shape_rule = _split_shape_rule  # read by stage 11's sharding rule


def split(operand: Any, sizes: Sequence[int], axis: int = 0) -> list[Any]:
    """Cut `operand` along `axis` into len(sizes) pieces, of sizes[i] elements each."""
    axis = canonicalize_axis(axis, np.ndim(operand))
    return split_p.bind(operand, sizes=tuple(sizes), axis=axis)
