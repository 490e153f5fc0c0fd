"""ravel_pytree: a pytree of arrays as one flat vector, and the function that undoes it.

JAX: jax/_src/flatten_util.py. The leaves are raveled and concatenated in tree order, in the
dtype they all promote to; `unravel` slices the vector back into leaves of their own shapes
and dtypes. An empty tree ravels to an empty float32 vector.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from stages.s01_pytrees import tree_flatten, tree_unflatten

from . import dtypes, lax


def _unravel(treedef: Any, sizes: Sequence[int], shapes: Sequence[tuple],
             from_dtypes: Sequence[np.dtype] | None, to_dtype: np.dtype | None,
             flat: Any) -> Any:
    if from_dtypes is not None and dtypes.dtype(flat) != to_dtype:
        raise TypeError(f"unravel function given array of dtype {dtypes.dtype(flat)}, "
                        f"but expected dtype {to_dtype}")
    leaves, start = [], 0
    for i, (size, shape) in enumerate(zip(sizes, shapes, strict=True)):
        chunk = lax.reshape(lax.slice_in_dim(flat, start, start + size), shape)
        if from_dtypes is not None:
            chunk = lax.convert_element_type(chunk, from_dtypes[i])
        leaves.append(chunk)
        start += size
    return tree_unflatten(treedef, leaves)


def ravel_pytree(pytree: Any) -> tuple[Any, Callable[[Any], Any]]:
    """(flat, unravel): the leaves as one 1-D array, and the function back to the pytree."""
    leaves, treedef = tree_flatten(pytree)
    if not leaves:
        return lax.full([0], 0, np.float32), functools.partial(_unravel, treedef, (), (), None,
                                                                None)
    from_dtypes = tuple(dtypes.dtype(x) for x in leaves)
    to_dtype = dtypes.result_type(*from_dtypes)
    sizes = tuple(int(np.size(x)) for x in leaves)
    shapes = tuple(np.shape(x) for x in leaves)
    flat = lax.concatenate([lax.reshape(lax.convert_element_type(x, to_dtype), (size,))
                            for x, size in zip(leaves, sizes, strict=True)], 0)
    if all(dt == to_dtype for dt in from_dtypes):
        # one dtype: unravel converts nothing, so it takes any dtype (JAX's choice too)
        from_dtypes, to_dtype = None, None
    return flat, functools.partial(_unravel, treedef, sizes, shapes, from_dtypes, to_dtype)
