"""The samplers' argument checks, with JAX's errors: what random.py asks before drawing.

JAX: jax/_src/random/core.py (`_check_prng_key`, `_check_shape`, the dtype checks of each
sampler). Kept beside the samplers so that random.py reads as the lesson: bits made into floats.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stages.s02_tracing import numpy as jnp
from stages.s02_tracing.numpy.util import broadcast_shapes


def canonical_shape(shape: Any) -> tuple[int, ...]:
    """A shape argument (an int, or a sequence of them) as a tuple of ints."""
    return (int(shape),) if np.ndim(shape) == 0 and not isinstance(shape, tuple) else \
        tuple(int(d) for d in shape)


def check_float(dtype: Any, name: str) -> np.dtype:
    """JAX's refusal of an int or bool dtype for a sampler of floats."""
    dtype = np.dtype(dtype)
    if not np.issubdtype(dtype, np.floating) and not (
            name == "normal" and np.issubdtype(dtype, np.complexfloating)):
        kinds = "a float or complex dtype" if name == "normal" else "a float dtype"
        raise ValueError(f"dtype argument to `{name}` must be {kinds}, got {dtype.name}")
    return dtype


def check_shape(name: str, shape: tuple[int, ...], *param_shapes: tuple[int, ...]
                ) -> tuple[int, ...]:
    """`shape`, once JAX's check passes that the parameters broadcast to it exactly:
    broadcasting could otherwise grow the result past the shape asked for."""
    result = broadcast_shapes(shape, *param_shapes)
    if result != shape:
        raise ValueError(f"{name} parameter shapes must be broadcast-compatible with shape "
                         "argument, and the result of broadcasting the shapes must equal the "
                         f"shape argument, but got result {result} for shape argument {shape}.")
    return shape


def float32_dtype(dtype: Any, name: str) -> np.dtype:
    """A float dtype the samplers here are built for: float32 (JAX's refusals first)."""
    dtype = check_float(dtype, name)
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
