"""sort: several operands reordered by one permutation, the one that sorts the first `num_keys`
(lexicographically), stably; NaNs last.

JAX: jax/_src/lax/lax.py (`sort`, `sort_p`, `_sort_abstract_eval`). argsort is a sort of the
keys with an iota riding along: the iota comes out permuted, and that permutation is the answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import core, dtypes
from .utils import canonicalize_axis

__all__ = ["sort", "sort_p"]


def _sort_abstract_eval(*avals: core.ShapedArray, dimension: int, is_stable: bool,
                        num_keys: int) -> list[core.ShapedArray]:
    if any(a.shape != avals[0].shape for a in avals[1:]):
        shapes = " ".join(str(a.shape) for a in avals)
        raise TypeError(f"Arguments to sort must have equal shapes, got: {shapes}")
    return list(avals)


def _sort_key(x: np.ndarray) -> np.ndarray:
    # -0.0 sorts with 0.0 (np.lexsort already puts NaNs last)
    return np.where(x == 0, np.zeros_like(x), x) if dtypes.dtype_kind(x.dtype) in "fc" else x


def _sort_impl(*operands: np.ndarray, dimension: int, is_stable: bool,
               num_keys: int) -> list[np.ndarray]:
    moved = [np.moveaxis(x, dimension, -1) for x in operands]
    # lexsort sorts by its last key first, and is stable
    keys = [_sort_key(k) for k in moved[:num_keys]][::-1]
    order = np.lexsort(keys, axis=-1) if keys[0].ndim else np.zeros((), int)
    return [np.moveaxis(np.take_along_axis(x, order, -1), -1, dimension) for x in moved]


sort_p = core.Primitive("sort")
sort_p.multiple_results = True
sort_p.def_impl(_sort_impl)
sort_p.def_abstract_eval(_sort_abstract_eval)


def sort(operand: Any, dimension: int = -1, is_stable: bool = True, num_keys: int = 1) -> Any:
    """operand sorted along `dimension`; a sequence of operands sorted by the first num_keys."""
    if isinstance(operand, Sequence):
        if len(operand) == 0:
            raise TypeError("Sort requires at least one operand")
        if not 1 <= num_keys <= len(operand):
            raise ValueError(f"num_keys={num_keys} must be between 1 and "
                             f"len(operand)={len(operand)}")
        dimension = canonicalize_axis(dimension, len(np.shape(operand[0])))
        return tuple(sort_p.bind(*operand, dimension=dimension, is_stable=is_stable,
                                 num_keys=num_keys))
    if num_keys != 1:
        raise ValueError(f"num_keys={num_keys} must equal 1 for a single operand.")
    dimension = canonicalize_axis(dimension, len(np.shape(operand)))
    return sort_p.bind(operand, dimension=dimension, is_stable=is_stable, num_keys=1)[0]
