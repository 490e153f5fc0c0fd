"""The shapes and dtypes of an op's outputs, from running it once on meta tensors.

PyTorch: torch/csrc/lazy/core/shape_inference.cpp (a shape function per op) and torch_xla's
ShapeCache in ir.cpp (XLA_IR_SHAPE_CACHE_SIZE shapes, by node hash). Ours asks PyTorch's own
meta kernels, once per op and signature of argument shapes, dtypes and parameters.
"""

from __future__ import annotations

from typing import Any

import torch

from stages.s02_tracing.core import ShapedArray

from .tensor import to_numpy_dtype

_META = torch.device("meta")
_shape_cache: dict[Any, Any] = {}


def _key(x: Any) -> Any:
    if isinstance(x, torch.Tensor):  # shapes and dtypes decide the outputs' (not strides)
        return (x.shape, x.dtype)
    if isinstance(x, (list, tuple)):
        return tuple([_key(v) for v in x])
    return type(x), x  # 1 and 1.0 are equal keys, but int + 1.0 is a float tensor


def _to_meta(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return torch.empty(x.shape, dtype=x.dtype, device=_META)
    if isinstance(x, (list, tuple)):
        return type(x)(_to_meta(v) for v in x)
    return x


def infer_outputs(func: Any, args: tuple, kwargs: dict) -> list[Any]:
    """Each output's (device aval, torch dtype), or None for an output the op does not produce:
    the op is run once on meta tensors per signature (C++: the ShapeCache)."""
    key = (func, _key(args), _key(tuple(sorted(kwargs.items()))) if kwargs else ())
    outs = _shape_cache.get(key)
    if outs is None:
        result = func(*_to_meta(args), **{k: _to_meta(v) for k, v in kwargs.items()})
        flat = list(result) if isinstance(result, (tuple, list)) else [result]
        outs = [None if r is None else (ShapedArray(tuple(r.shape), to_numpy_dtype(r.dtype)),
                                         r.dtype) for r in flat]
        _shape_cache[key] = outs
    return outs
