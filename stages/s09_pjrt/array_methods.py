"""The operators and methods of a device array, each going through the primitives.

JAX: jax/_src/numpy/array_methods.py (`_set_array_base_attributes`, `_defer_to_unrecognized_arg`).
As on a tracer, `x.sum()`, `x.reshape(...)`, `x[1:]`, `-x` forward to the aval's methods, which
stage 2 installed; the binary operators call stage 2's numpy facade here, because the aval's
versions accept tracers, numpy values and scalars but no device array. Under stage 7's op-by-op
dispatch (`use_pjrt()` turns it on) each primitive then runs as a tiny jit on the device; without
it, on the host values, through the primitive's numpy impl.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from stages.s02_tracing import core
from stages.s02_tracing import numpy as jnp

from .array import ArrayImpl

_BINARY = {
    "add": jnp.add, "sub": jnp.subtract, "mul": jnp.multiply, "truediv": jnp.true_divide,
    "floordiv": jnp.floor_divide, "mod": jnp.remainder, "pow": jnp.power,
    "matmul": jnp.matmul, "and": jnp.bitwise_and, "or": jnp.bitwise_or,
    "xor": jnp.bitwise_xor, "lshift": jnp.left_shift, "rshift": jnp.right_shift,
}
_COMPARISONS = {"eq": jnp.equal, "ne": jnp.not_equal, "lt": jnp.less, "le": jnp.less_equal,
                "gt": jnp.greater, "ge": jnp.greater_equal}
_UNARY = ("neg", "pos", "abs", "invert", "getitem")  # the aval's own, as a tracer's
_METHODS = ("reshape transpose sum mean max min argmax argmin cumsum astype squeeze ravel "
            "flatten dot clip swapaxes").split()
_ACCEPTED = (ArrayImpl, core.Tracer, np.ndarray, np.generic, bool, int, float, complex)


def _defer_to_unrecognized_arg(fun: Callable, swap: bool = False) -> Callable:
    # `x + [1, 2]` returns NotImplemented, so Python tries list.__radd__ and then fails
    def method(self: ArrayImpl, other: Any) -> Any:
        if not isinstance(other, _ACCEPTED):
            return NotImplemented
        return fun(other, self) if swap else fun(self, other)

    return method


def _forward_to_aval(name: str) -> Callable:
    def method(self: ArrayImpl, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.aval, name)(self, *args, **kwargs)

    method.__name__ = name.lstrip("_")
    return method


def _set_array_attributes(array: type) -> None:
    for name, fun in _BINARY.items():
        setattr(array, f"__{name}__", _defer_to_unrecognized_arg(fun))
        setattr(array, f"__r{name}__", _defer_to_unrecognized_arg(fun, swap=True))
    for name, fun in _COMPARISONS.items():
        setattr(array, f"__{name}__", _defer_to_unrecognized_arg(fun))
    for name in _UNARY:
        setattr(array, f"__{name}__", _forward_to_aval(f"_{name}"))
    for name in _METHODS:
        setattr(array, name, _forward_to_aval(f"_{name}"))
    array.T = property(_forward_to_aval("_T"))


_set_array_attributes(ArrayImpl)
