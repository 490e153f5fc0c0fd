"""The samplers' argument checks, with JAX's errors: what random.py asks before drawing.

JAX: jax/_src/random/core.py (`_check_prng_key`, `_check_shape`, the dtype checks of each
sampler). Kept beside the samplers so that random.py reads as the lesson: bits made into floats.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from stages.s02_tracing import dtypes
from stages.s02_tracing import numpy as jnp
from stages.s02_tracing.errors import canonicalize_shape
from stages.s02_tracing.numpy.util import broadcast_shapes


def split_shape(num: Any) -> tuple[int, ...]:
    """split's count (an int, or a sequence of them) as a tuple; a float or None is refused with
    Python's own "cannot be interpreted as an integer", as JAX's split refuses it."""
    if isinstance(num, (tuple, list)):
        return tuple(operator.index(d) for d in num)
    return (operator.index(num),)


def static_shape(shape: Any) -> tuple[int, ...]:
    """A shape argument as a tuple of ints, refused as JAX refuses one of floats or None."""
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    iter(shape)  # None or a float: Python's own "object is not iterable"
    return canonicalize_shape(shape)


def narrowed(dtype: Any, python_type: type, default: type) -> np.dtype:
    """A dtype as JAX takes it with x64 off: None or the Python type is the 32-bit default, and
    a 64-bit one is truncated to 32 bits with JAX's warning (stage 2's check)."""
    if dtype is None or dtype is python_type:
        return np.dtype(default)
    return dtypes.check_and_canonicalize_user_dtype(dtype)


def int_dtype(dtype: Any, name: str) -> np.dtype:
    """An integer dtype, narrowed as JAX narrows it."""
    dtype = narrowed(dtype, int, np.int32)
    if not np.issubdtype(dtype, np.integer):
        raise TypeError(f"{name} only accepts integer dtypes, got {dtype}")
    return dtype


def check_float(dtype: Any, name: str) -> np.dtype:
    """JAX's refusal of an int or bool dtype for a sampler of floats."""
    dtype = np.dtype(dtype)
    if not dtypes.issubdtype(dtype, np.floating) and not (
            name == "normal" and np.issubdtype(dtype, np.complexfloating)):
        kinds = "a float or complex dtype" if name == "normal" else "a float dtype"
        raise ValueError(f"dtype argument to `{name}` must be {kinds}, got {dtype.name}")
    return dtype


def check_shape(name: str, shape: tuple[int, ...], *param_shapes: tuple[int, ...]
                ) -> tuple[int, ...]:
    """`shape`, once JAX's check passes that the parameters broadcast to it exactly:
    broadcasting could otherwise grow the result past the shape asked for."""
    if param_shapes and any(d < 0 for d in shape):  # JAX's lax.broadcast_shapes says so first
        raise TypeError("Only non-negative indices are allowed when broadcasting static shapes, "
                        f"but got shape {shape}.")
    result = broadcast_shapes(shape, *param_shapes)
    if result != shape:
        raise ValueError(f"{name} parameter shapes must be broadcast-compatible with shape "
                         "argument, and the result of broadcasting the shapes must equal the "
                         f"shape argument, but got result {result} for shape argument {shape}.")
    return shape


def float32_dtype(dtype: Any, name: str) -> np.dtype:
    """A float dtype the samplers here are built for: float32 (JAX's refusals first)."""
    dtype = check_float(narrowed(dtype, float, np.float32), name)
    if dtype != np.float32:
        raise TypeError(f"{name} is built here for float32 only, got {dtype.name}")
    return dtype


def check_key(key: Any, api_name: str) -> None:
    """Raw key data is uint32[..., 2], and a function of ours takes one key (JAX's checks)."""
    shape, dtype = np.shape(key), jnp.result_type(key)
    if shape[-1:] != (2,):
        raise TypeError("JAX encountered invalid PRNG key data: expected key_data.shape to end "
                        f"with (2,); got shape={shape}")
    if dtype != np.uint32:
        raise TypeError("JAX encountered invalid PRNG key data: expected key_data.dtype = "
                        f"uint32; got dtype={dtype}")
    if shape != (2,):
        raise ValueError(f"{api_name} accepts a single key, but was given a key array of shape "
                         f"{shape} != (). Use jax.vmap for batching.")
