"""Sorting: numpy's sort and argsort spelled in lax.sort, the stable variadic sort.

JAX: jax/_src/numpy/sorting.py. `lax.sort` sorts several operands together by the first
`num_keys` of them, so argsort is a sort of (keys, iota) that keeps the iota; NaNs sort last,
as XLA's total order puts them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import lax
from ..lax.utils import canonicalize_axis
from .lax_numpy import asarray, ravel
from .util import check_arraylike

__all__ = ["argsort", "sort"]


def check_sort_options(name: str, kind: Any, order: Any) -> None:
    """numpy's sort options JAX refuses: lax.sort has one algorithm, and no record arrays."""
    if kind is not None:
        raise TypeError(f"'kind' argument to {name} is not supported. Use stable=True or "
                        "stable=False to specify sort stability.")
    if order is not None:
        raise TypeError(f"'order' argument to {name} is not supported.")


def _sort_operand(name: str, a: Any, axis: int | None, kind: Any, order: Any
                  ) -> tuple[Any, int]:
    """The array to sort and its axis (the flattened array's 0 if None), after the checks."""
    check_arraylike(name, a)
    check_sort_options(name, kind, order)
    a = asarray(a)
    if axis is None:
        a, axis = ravel(a), 0
    return a, canonicalize_axis(axis, np.ndim(a))


def sort(a: Any, axis: int | None = -1, *, kind: None = None, order: None = None,
         stable: bool = True, descending: bool = False) -> Any:
    """a sorted along `axis` (of the flattened array if None); NaNs last."""
    a, axis = _sort_operand("sort", a, axis, kind, order)
    out = lax.sort(a, dimension=axis, is_stable=stable)
    # JAX: descending is the ascending sort reversed
    return lax.rev(out, [axis]) if descending else out


def argsort(a: Any, axis: int | None = -1, *, kind: None = None, order: None = None,
            stable: bool = True, descending: bool = False) -> Any:
    """The indices that sort a along `axis`: an iota sorted along with the keys."""
    a, axis = _sort_operand("argsort", a, axis, kind, order)
    iota = lax.broadcasted_iota(np.int32, np.shape(a), axis)
    if descending and stable:
        # reversed in, reversed out: equal keys keep their first-come order
        a, iota = lax.rev(a, [axis]), lax.rev(iota, [axis])
    indices = lax.sort((a, iota), dimension=axis, is_stable=stable, num_keys=1)[1]
    return lax.rev(indices, [axis]) if descending else indices
