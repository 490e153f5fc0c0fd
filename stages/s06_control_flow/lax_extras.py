"""Two primitives control flow needs that earlier stages do not define: clamp and stop_gradient.

JAX: `lax.clamp_p` (jax/_src/lax/lax.py), which `switch` uses to keep its index in range, and
`ad_util.stop_gradient_p` (jax/_src/ad_util.py), which cond's batching rule wraps around the
masked-off operands. Their jvp rules are in ad_rules.py with the other stage-6 rules.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stages.s02_tracing import core, lax
from stages.s02_tracing.lax_utils import check_same_dtypes, standard_primitive
from stages.s05_vmap.batching import (
    AxisData,
    BatchDim,
    bdim_at_front,
    defvectorized,
    not_mapped,
    primitive_batchers,
)

# ------------------------------------------------------------------ clamp


def _clamp_shape_rule(min: core.ShapedArray, operand: core.ShapedArray,
                      max: core.ShapedArray) -> tuple:
    if min.shape and min.shape != operand.shape:
        raise TypeError("clamp requires min.shape == operand.shape or min.shape == (), got "
                        f"min.shape={min.shape}, operand.shape={operand.shape}.")
    if max.shape and max.shape != operand.shape:
        raise TypeError("clamp requires max.shape == operand.shape or max.shape == (), got "
                        f"max.shape={max.shape}, operand.shape={operand.shape}.")
    return operand.shape


def _clamp_dtype_rule(min: core.ShapedArray, operand: core.ShapedArray,
                      max: core.ShapedArray) -> np.dtype:
    check_same_dtypes("clamp", min, operand, max)
    return operand.dtype


def _clamp_impl(min: np.ndarray, operand: np.ndarray, max: np.ndarray) -> np.ndarray:
    return np.minimum(np.maximum(operand, min), max)


clamp_p = standard_primitive(_clamp_shape_rule, _clamp_dtype_rule, "clamp", _clamp_impl,
                             weak_type_rule=lambda min, operand, max: operand.weak_type)


def clamp(min: Any, x: Any, max: Any) -> Any:
    """Elementwise min(max(x, min), max); `min` and `max` may be scalars."""
    return clamp_p.bind(min, x, max)


def _clamp_batch_rule(axis_data: AxisData, vals: list[Any], dims: list[BatchDim]
                      ) -> tuple[Any, BatchDim]:
    """Batch axis first on every non-scalar operand; scalar bounds broadcast to the operand."""
    if all(d is not_mapped for d in dims):
        return clamp(*vals), not_mapped
    lo, x, hi = (bdim_at_front(v, d, axis_data.size) if d is not not_mapped or np.ndim(v)
                 else v for v, d in zip(vals, dims, strict=True))
    if np.ndim(x) < max(np.ndim(lo), np.ndim(hi)):
        x = lax.broadcast_in_dim(x, np.shape(lo) if np.ndim(lo) else np.shape(hi), ())
    if 0 < np.ndim(lo) < np.ndim(x):
        lo = lax.broadcast_in_dim(lo, np.shape(x), [0])
    if 0 < np.ndim(hi) < np.ndim(x):
        hi = lax.broadcast_in_dim(hi, np.shape(x), [0])
    return clamp(lo, x, hi), 0


primitive_batchers[clamp_p] = _clamp_batch_rule

# ------------------------------------------------------------------ stop_gradient

stop_gradient_p = core.Primitive("stop_gradient")
stop_gradient_p.def_impl(lambda x: x)
stop_gradient_p.def_abstract_eval(lambda x: x)
defvectorized(stop_gradient_p)


def stop_gradient(x: Any) -> Any:
    """The identity, whose derivative is zero (JAX: lax.stop_gradient, on one array)."""
    return stop_gradient_p.bind(x)
