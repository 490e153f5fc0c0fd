"""tile: an array repeated along each axis, `reps[i]` times along axis i (numpy's `tile`).

JAX: jax/_src/lax/lax.py (`tile`, `tile_p`, `_tile_abstract_eval`). One equation, so a jaxpr
says `tile[reps=(2, 1)]` where the same values could be a broadcast and a reshape; the later
stages give it the rules of a linear primitive (its transpose sums the copies back).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import core
from ..errors import canonicalize_shape

__all__ = ["tile", "tile_p"]


def _tile_shape_rule(x: core.ShapedArray, *, reps: Sequence[int]) -> tuple[int, ...]:
    if x.ndim != len(reps):
        raise TypeError(f"reps length must be equal to the ndim of x, got len(reps)={len(reps)} "
                        f"and x.ndim={x.ndim}.")
    return canonicalize_shape(tuple(np.multiply(x.shape, reps)))  # a float rep: refused


def _tile_abstract_eval(x: core.ShapedArray, *, reps: Sequence[int]) -> core.ShapedArray:
    return core.ShapedArray(_tile_shape_rule(x, reps=reps), x.dtype, weak_type=x.weak_type)


def _tile_impl(x: Any, *, reps: Sequence[int]) -> np.ndarray:
    _tile_shape_rule(core.get_aval(x), reps=reps)  # eager calls check too
    return np.tile(np.asarray(x), reps)


tile_p = core.Primitive("tile")
tile_p.def_impl(_tile_impl)
tile_p.def_abstract_eval(_tile_abstract_eval)
tile_p.shape_rule = _tile_shape_rule  # read by stage 11's sharding rule


def tile(operand: Any, reps: Sequence[int]) -> Any:
    """`operand` repeated reps[i] times along axis i; len(reps) must be its ndim."""
    return tile_p.bind(operand, reps=tuple(reps))
