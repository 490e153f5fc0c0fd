"""Ops without a lowering rule or a decomposition run on the CPU, counted `aten::<op>`.

torch_xla: torch_xla/csrc/aten_fallback.cpp (`xla_fallback`, which counts each op under its name,
`aten::<op>`, and calls PyTorch's `at::native::cpu_fallback`). The lazy arguments
are fetched in one graph cut, the op runs on the host, its results are uploaded as device data.
"""

from __future__ import annotations

from typing import Any

import torch

from stages.s02_tracing.core import ShapedArray

from . import device_data, graph_executor, metrics
from .op_schema import is_inplace
from .tensor import DEVICE_TYPE, get_xla_tensor, is_lazy, make_tensor_from_data, to_numpy_dtype
from .tensor_impl import refuse_write_through_view


def _on_cpu(x: Any) -> Any:
    """A factory's `device=` argument: the CPU instead of ours."""
    is_ours = isinstance(x, torch.device) and x.type == DEVICE_TYPE
    return torch.device("cpu") if is_ours else x


def cpu_fallback(func: Any, args: tuple, kwargs: dict) -> Any:
    """Run the op on the CPU: fetch the lazy arguments (one graph), run, upload the results
    (C++: xla_fallback, counted as `aten::<op>`)."""
    if is_inplace(func) and is_lazy(args[0]):
        refuse_write_through_view(args[0])  # else the result would land in the view alone
    # C++: c10::toString(op.operator_name()), the overload included: "aten::sort.stable"
    metrics.counter(func.name()).add_value(1)
    flat, spec = torch.utils._pytree.tree_flatten((args, kwargs))
    lazy = [x for x in flat if is_lazy(x)]
    hosts = iter(graph_executor.get_tensors(lazy))
    cpu_flat = [next(hosts) if is_lazy(x) else _on_cpu(x) for x in flat]
    cpu_args, cpu_kwargs = torch.utils._pytree.tree_unflatten(cpu_flat, spec)
    result = func(*cpu_args, **cpu_kwargs)

    def upload(x: Any) -> Any:
        if not isinstance(x, torch.Tensor) or is_lazy(x):
            return x
        aval = ShapedArray(tuple(x.shape), to_numpy_dtype(x.dtype))
        return make_tensor_from_data(device_data.tensor_to_data(x, aval), aval, x.dtype)
    if is_inplace(func):  # write the CPU result back into the lazy tensor
        data = get_xla_tensor(args[0])
        data.set_data_handle(get_xla_tensor(upload(result)).handle)
        data.version += 1
        return args[0]
    return torch.utils._pytree.tree_map(upload, result)


def local_scalar_dense(x: Any) -> Any:
    """`.item()`: counted as a CPU fallback, as torch_xla counts it, and a graph cut."""
    metrics.fallback_counter("_local_scalar_dense").add_value(1)
    return graph_executor.get_tensors([x])[0].item()
