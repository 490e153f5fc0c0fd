"""Where every aten op on a lazy tensor lands: an IR node, a decomposition, or the CPU.

torch_xla: torch_xla/csrc/aten_xla_type.cpp (one function per aten op, each calling
tensor_methods.cpp to build IR), aten_fallback.cpp (`xla_fallback`) and
aten_xla_bridge.cpp. An op with a lowering rule (lowering.py) becomes one node: its tensor
arguments are its operands, its numbers become scalar operands (device data, except the special
scalars 0, 1 and -1), everything else (dims, sizes, flags) becomes the node's parameters, hashed.
An op without a rule is decomposed with PyTorch's own decompositions (torch._decomp) into ops
that have one; an op with neither runs on the CPU and is counted `aten::<op>`.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import torch
from torch._decomp import core_aten_decompositions, decomposition_table

from stages.s02_tracing.core import ShapedArray

from . import device_data, graph_executor
from .aten_cpu_fallback import cpu_fallback, local_scalar_dense
from .device_data import scalar_dtype, scalar_value
from .hash import mhash
from .ir import DeviceData, LeafNode, Node, Value
from .kernel_checks import raise_as_cpu_kernel
from .lowering import CHECKS, LOWERINGS
from .nn_lowering import GUARDS
from .op_schema import op_schema
from .shape_inference import infer_outputs
from .tensor import (
    DEVICE_TYPE,
    LazyTensor,
    get_xla_tensor,
    is_lazy,
    make_tensor,
    make_tensor_from_data,
    to_numpy_dtype,
)
from .tensor_impl import refuse_write_through_view, set_view_in_place

aten = torch.ops.aten
_CORE = core_aten_decompositions()
_decomposing: set[Any] = set()
_views_made: weakref.WeakSet = weakref.WeakSet()  # by view ops inside a decomposition


# ------------------------------------------------------------------ building a node


def _operand(x: Any, args: tuple) -> Value | None:
    if x is None:
        return None
    if isinstance(x, torch.Tensor):
        if not x.is_cpu:  # ours (get_xla_tensor refuses any other device)
            return get_xla_tensor(x).get_ir_value()
        if x.dim() == 0:  # a CPU tensor: a wrapped number, or data to upload
            return scalar_value(x.item(), to_numpy_dtype(x.dtype))
        aval = ShapedArray(tuple(x.shape), to_numpy_dtype(x.dtype))
        return Value(DeviceData(device_data.tensor_to_data(x, aval), aval))
    return scalar_value(x, scalar_dtype(x, [a for a in args if is_lazy(a)]))


# --8<-- [start:lower_op]
def lower_op(func: Any, args: tuple, kwargs: dict) -> Any:
    """One aten op as one IR node; returns lazy tensors standing for its outputs."""
    schema = op_schema(func)  # each argument's (name, kind, default), read once per op
    # EXERCISE 10.3 (lower-op): tensors and numbers become operands, the rest parameters
    operands: list[Value | None] = []
    layout: list[tuple[str, int]] = []  # operand name and count (-1: one, not a list)
    params: list[tuple[str, Any]] = []
    for i, (name, kind, default) in enumerate(schema.arguments):
        value = args[i] if i < len(args) else kwargs.get(name, default)
        if kind == "scalar" and (value is None or value == default):
            params.append((name, value))  # alpha=1: no operand, as C++ skips special scalars
        elif kind == "tensor" or kind == "scalar":
            operands.append(_operand(value, args))
            layout.append((name, -1))
        elif kind == "tensors":
            operands.extend(_operand(v, args) for v in value)
            layout.append((name, len(value)))
        else:
            params.append((name, tuple(value) if isinstance(value, list) else value))
    # END EXERCISE
    guard = GUARDS.get(func)
    if guard is not None and not guard(**dict(params)):
        return NotImplemented  # a case our rule does not cover: decompose or fall back
    outs = infer_outputs(func, args, kwargs)
    node = Node(schema.name, operands, [o[0] for o in outs if o is not None], params)
    node.func, node.layout, node.present = func, layout, [o is not None for o in outs]
    index, results = 0, []
    for out in outs:
        results.append(None if out is None else make_tensor(Value(node, index), out[1]))
        index += out is not None
    if schema.returns == "tensor":
        return results[0]
    return results if schema.returns == "list" else tuple(results)
# --8<-- [end:lower_op]


# ------------------------------------------------------------------ ops with their own path


def _clone(x: LazyTensor, **_: Any) -> LazyTensor:
    """The same buffer or IR value under a new tensor: values never change, only tensors do."""
    data = get_xla_tensor(x)
    if data.handle is not None:
        return make_tensor_from_data(data.handle, data.aval, x.dtype)
    return make_tensor(data.get_ir_value(), x.dtype)


def _copy_(dst: Any, src: Any, non_blocking: bool = False) -> Any:
    if not is_lazy(dst):  # lazy to CPU: a graph cut of `src` alone
        dst.copy_(graph_executor.get_tensors([src])[0])
        return dst
    data = get_xla_tensor(dst)
    refuse_write_through_view(dst)  # no functionalization
    if data in _views_made:  # a view a decomposition made (below autograd: no `_base`)
        raise NotImplementedError(f"in place on a view {tuple(dst.shape)} inside a "
                                  f"decomposition: it would not reach the base")
    src = src if isinstance(src, torch.Tensor) else torch.tensor(src)  # copy_(2.5), as eager
    if not is_lazy(src):  # CPU to lazy: an upload (C++: TensorToXlaData)
        host = src.to(dst.dtype).expand(dst.shape).contiguous()
        data.set_data_handle(device_data.tensor_to_data(host, data.aval))
    else:
        if src.dtype != dst.dtype:
            src = aten._to_copy.default(src, dtype=dst.dtype)
        if src.shape != dst.shape:
            src = aten.expand.default(src, list(dst.shape))
        data.set_ir_value(get_xla_tensor(src).get_ir_value())
    data.version += 1  # the views taken of it so far no longer show it
    return dst


def _full_scalar(s: Any, dtype: torch.dtype) -> LazyTensor:
    return make_tensor(scalar_value(s, to_numpy_dtype(dtype)), dtype)


def _write_back(dst: LazyTensor, result: Any) -> Any:
    """An in-place op's result into its first argument, refused as torch refuses it when the
    result's dtype cannot be cast to the argument's (an int tensor `add_(1.5)`)."""
    if isinstance(result, torch.Tensor) and not torch.can_cast(result.dtype, dst.dtype):
        name = {t: torch.empty(0, dtype=t).type().removeprefix("torch.").removesuffix("Tensor")
                for t in (result.dtype, dst.dtype)}  # torch.float32: Float, as torch says it
        raise RuntimeError(f"result type {name[result.dtype]} can't be cast to the desired "
                           f"output type {name[dst.dtype]}")
    return _copy_(dst, result)


def _to_copy(x: Any, **kwargs: Any) -> Any:
    device = kwargs.get("device")
    if device is not None and torch.device(device).type != DEVICE_TYPE:  # .cpu(), .to("cpu")
        out = graph_executor.get_tensors([x])[0]
        return out.to(kwargs["dtype"]) if kwargs.get("dtype") is not None else out
    if not is_lazy(x):  # .to(device) of a CPU tensor: an upload (C++: TensorToXlaData)
        host = x.to(kwargs.get("dtype") or x.dtype)
        aval = ShapedArray(tuple(host.shape), to_numpy_dtype(host.dtype))
        if host.dim() == 0:  # C++ GetIrValueForTensor: 0, 1, -1 a constant, else cached data
            return make_tensor(scalar_value(host.item(), aval.dtype), host.dtype)
        return make_tensor_from_data(device_data.tensor_to_data(host, aval), aval, host.dtype)
    kwargs.pop("device", None)
    return lower_op(aten._to_copy.default, (x,), kwargs)


def empty(size: Any, dtype: Any = None, layout: Any = None, device: Any = None,
          pin_memory: Any = None, memory_format: Any = None, **_: Any) -> LazyTensor:
    """A new tensor on the lazy device (a factory: registered for the device's key in
    register_xla.py): zeros, as torch_xla's `empty` is a `full(size, 0)`."""
    dtype = dtype or torch.get_default_dtype()
    aval = ShapedArray(tuple(size), to_numpy_dtype(dtype))
    node = LeafNode("aten::full", aval, mhash(0), (("fill_value", 0),))
    return make_tensor(Value(node), dtype)


SPECIAL: dict[Any, Callable[..., Any]] = {
    aten.clone.default: _clone,
    aten.copy_.default: _copy_,
    aten._to_copy.default: _to_copy,
    aten._local_scalar_dense.default: local_scalar_dense,
    aten.scalar_tensor.default:  # a wrapped number, `where(c, x, 0)`'s 0 (C++: full({}, s))
        lambda s, dtype=None, **_: _full_scalar(s, dtype or torch.get_default_dtype()),
    aten.empty.memory_format: empty,
    aten.empty_strided.default: lambda size, stride, dtype=None, **_: empty(size, dtype),
    aten.empty_like.default: lambda x, **kw: empty(x.shape, kw.get("dtype") or x.dtype),
    aten.new_empty.default: lambda x, size, **kw: empty(size, kw.get("dtype") or x.dtype),
    aten.new_empty_strided.default:
        lambda x, size, stride, **kw: empty(size, kw.get("dtype") or x.dtype),
}


# ------------------------------------------------------------------ in place, and the CPU


def eager_sync(out: Any) -> Any:
    """Eager mode: compute each op's result at once, a graph per op (C++: ApplyEagerSync)."""
    if not graph_executor.eager_mode_enabled():
        return out
    flat = [get_xla_tensor(t) for t in (out if isinstance(out, (list, tuple)) else [out])
            if is_lazy(t)]
    graph_executor.sync_tensors_graph(flat, graph_executor.SyncTensorsConfig(sync_ltc_data=False))
    return out


# --8<-- [start:dispatch]
def dispatch(func: Any, args: tuple, kwargs: dict) -> Any:
    """Every op on the lazy device lands here: its own path, its rule, its decomposition, CPU."""
    try:
        return _dispatch(func, args, kwargs)
    except (RuntimeError, IndexError, ValueError, TypeError):
        raise_as_cpu_kernel(func, args, kwargs)  # eager torch's words, not a meta kernel's
        raise


def _dispatch(func: Any, args: tuple, kwargs: dict) -> Any:
    if func in CHECKS:  # what torch's kernel checks and its meta kernel does not
        CHECKS[func](*args, **kwargs)
    special = SPECIAL.get(func)
    if special is not None:
        return special(*args, **kwargs)
    if func in LOWERINGS:
        out = lower_op(func, args, kwargs)
        if out is not NotImplemented:
            _note_views(func, out, args)
            return eager_sync(out)
    functional = op_schema(func).functional
    if functional is not None:  # add_: add, then the result written into the first argument
        write = set_view_in_place if op_schema(functional).is_view else _write_back  # t_: shape
        return write(args[0], dispatch(functional, args, kwargs))
    decomposition = _CORE.get(func) or decomposition_table.get(func)
    if decomposition is not None and func not in _decomposing:  # a prim may call func back
        _decomposing.add(func)
        try:
            out = decomposition(*args, **kwargs)
        except NotImplementedError:  # it writes through a view: the CPU runs the op instead
            out = NotImplemented
        finally:
            _decomposing.discard(func)
            if not _decomposing:
                _views_made.clear()
        if out is not NotImplemented:
            return out
    return _note_views(func, cpu_fallback(func, args, kwargs), args)
# --8<-- [end:dispatch]


def _note_views(func: Any, out: Any, args: tuple) -> Any:
    """A view op's outputs hold their own IR value, not an alias of their base's: each records
    its base and the base's version, so a read after a write to the base raises. Inside a
    decomposition (below autograd: torch records no `_base`) a write into one raises too."""
    if op_schema(func).is_view and args and is_lazy(args[0]):
        base = get_xla_tensor(args[0])
        if base.view_of is not None:  # a view of a view: the write to watch is the root's
            base = base.view_of[0]() or base
        for t in out if isinstance(out, (list, tuple)) else [out]:
            if is_lazy(t):
                get_xla_tensor(t).view_of = (weakref.ref(base), base.version)
                if _decomposing:
                    _views_made.add(get_xla_tensor(t))
    return out
