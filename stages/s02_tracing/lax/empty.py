"""empty2: a rank-0 value whose contents no one reads, to fill a slot a type asks for.

JAX: jax/_src/lax/lax.py (`empty2`, `empty2_p`, `empty_like_shaped_array`) and core.py
(`MemorySpace`). A split cond's known branches must all return every residual; a branch
returns `empty2` broadcast to the residual's shape in each slot it does not fill. The value is
never read, so any value will do: the impl and the lowering give zeros.
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from .. import core
from .structural import broadcast

__all__ = ["MemorySpace", "empty2", "empty2_p"]


class MemorySpace(enum.Enum):
    """Where a value lives (JAX: core.MemorySpace); ours are all on the device."""
    Device = enum.auto()
    Host = enum.auto()
    Any = enum.auto()

    def __repr__(self) -> str:
        return f"MemorySpace.{self.name}"


def _empty2_abstract_eval(*, dtype: np.dtype, memory_space: MemorySpace) -> core.ShapedArray:
    return core.ShapedArray((), dtype)


empty2_p = core.Primitive("empty2")
empty2_p.def_impl(lambda *, dtype, memory_space: np.zeros((), dtype))
empty2_p.def_abstract_eval(_empty2_abstract_eval)


def empty2(dtype: Any, *, memory_space: MemorySpace = MemorySpace.Device) -> Any:
    """A rank-0 value of `dtype` whose contents are unspecified."""
    return empty2_p.bind(dtype=np.dtype(dtype), memory_space=memory_space)


def empty_like_shaped_array(aval: core.ShapedArray) -> Any:
    """A value of aval's type whose contents are unspecified: empty2, broadcast to its shape."""
    out = empty2(aval.dtype)
    return broadcast(out, aval.shape, out_sharding=aval.sharding) if aval.shape else out
