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
from .tensor import DEVICE_TYPE, get_xla_tensor, is_lazy, make_tensor_from_data, to_numpy_dtype
from .tensor_impl import refuse_write_through_view, set_view_in_place


def _on_cpu(x: Any) -> Any:
    """A factory's `device=` argument: the CPU instead of ours."""
    is_ours = isinstance(x, torch.device) and x.type == DEVICE_TYPE
    return torch.device("cpu") if is_ours else x


def cpu_fallback(func: Any, args: tuple, kwargs: dict) -> Any:
    """Run the op on the CPU: fetch the lazy arguments (one graph), run, upload the results
    and what it wrote (C++: xla_fallback, counted as `aten::<op>`)."""
    written = _written_arguments(func, args, kwargs)  # add_'s self, mm.out's out, sort's pair
    for t in written:
        refuse_write_through_view(t)  # else the result would land in the view alone
    # C++: c10::toString(op.operator_name()), the overload included: "aten::sort.stable"
    metrics.counter(func.name()).add_value(1)
    flat, spec = torch.utils._pytree.tree_flatten((args, kwargs))
    lazy = [x for x in flat if is_lazy(x)]
    hosts = iter(graph_executor.get_tensors(lazy))
    cpu_flat = [next(hosts) if is_lazy(x) else _on_cpu(x) for x in flat]
    cpu_of: dict[int, Any] = {}  # each lazy tensor's first CPU copy, the one a kernel writes
    for x, cpu in zip(flat, cpu_flat, strict=True):  # (`x.add_(x)` passes x twice)
        if is_lazy(x):
            cpu_of.setdefault(id(x), cpu)
    cpu_args, cpu_kwargs = torch.utils._pytree.tree_unflatten(cpu_flat, spec)
    result = func(*cpu_args, **cpu_kwargs)
    lazy_of = {}  # a written CPU copy -> its lazy tensor, which the op returns (`out is o`)
    for t in written:  # the CPU kernel wrote (and may have resized: nonzero's out) the copy
        host = cpu_of[id(t)]
        _write_back(t, host)
        lazy_of[id(host)] = t
    return torch.utils._pytree.tree_map(
        lambda x: lazy_of[id(x)] if id(x) in lazy_of else _upload(x), result)


def _written_arguments(func: Any, args: tuple, kwargs: dict) -> list[Any]:
    """The lazy tensors the op writes: its schema's arguments marked `(a!)`."""
    out = []
    for i, a in enumerate(func._schema.arguments):
        if a.alias_info is None or not a.alias_info.is_write:
            continue
        value = kwargs.get(a.name) if a.kwarg_only or i >= len(args) else args[i]
        out += [t for t in (value if isinstance(value, (list, tuple)) else [value]) if is_lazy(t)]
    return out


def _upload(x: Any) -> Any:
    if not isinstance(x, torch.Tensor) or is_lazy(x):
        return x
    aval = ShapedArray(tuple(x.shape), to_numpy_dtype(x.dtype))
    return make_tensor_from_data(device_data.tensor_to_data(x, aval), aval, x.dtype)


def _write_back(dst: Any, host: torch.Tensor) -> None:
    """The CPU kernel's values of a written argument, now the lazy tensor's own."""
    new = _upload(host)
    if tuple(host.shape) != tuple(dst.shape):  # resized by the kernel: new sizes too
        set_view_in_place(dst, new)
    else:
        get_xla_tensor(dst).set_data_handle(get_xla_tensor(new).handle)
    get_xla_tensor(dst).version += 1


def local_scalar_dense(x: Any) -> Any:
    """`.item()`: counted as a CPU fallback, as torch_xla counts it, and a graph cut."""
    metrics.fallback_counter("_local_scalar_dense").add_value(1)
    return graph_executor.get_tensors([x])[0].item()
