"""The lazy device in PyTorch's dispatcher: a kernel for each op we take, then the fallback.

torch_xla: the generated RegisterXLA.cpp (a kernel under the XLA dispatch key for each op that
xla_native_functions.yaml lists) and aten_fallback.cpp's `TORCH_LIBRARY_IMPL(_, XLA, m)`, the
boxed fallback every other op reaches. Ours registers Python kernels under PrivateUse1 (the
`ltc` device) with torch.library. The dispatcher prefers an op's CompositeExplicitAutograd
kernel to a backend's fallback, and those kernels work on storage (a transpose is an
`as_strided` of its input), so each such op gets our kernel too. Three keep PyTorch's: `detach`,
`alias` and `lift_fresh` return a tensor on the same storage, which shares the XLATensorData, as
torch_xla's shallow copies share one XLATensor. Autograd sits above all of this: it runs its own
kernel, then calls ours, so `backward()` and optimizers need nothing from us. An op with a
CompositeImplicitAutograd kernel is never registered: autograd decomposes it before it reaches a
backend, and a backend kernel for it would take that decomposition (and its gradient) away;
unless it has an autograd kernel of its own (silu_backward): then, as on the CPU, that runs.
"""

from __future__ import annotations

import types
from typing import Any

import torch
from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

DEVICE_TYPE = "ltc"  # torch_xla's is "xla"
KEY = "PrivateUse1"
KEEP_PYTORCHS = ("aten::detach", "aten::alias", "aten::lift_fresh")
_COMPOSITE = ("CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional")
_IMPLICIT = "CompositeImplicitAutograd"  # decomposed above us, by autograd: never ours
_libraries: list[torch.library.Library] = []
_registered = [0]  # how many kernels


def _device_module() -> types.ModuleType:
    """`torch.ltc`, what PyTorch asks a device about (torch.cuda is CUDA's): one device."""
    module = types.ModuleType(f"torch.{DEVICE_TYPE}")
    module.is_available = module.is_initialized = lambda: True
    module.current_device, module.device_count = lambda: 0, lambda: 1
    module._is_in_bad_fork, module.manual_seed_all = lambda: False, lambda seed: None
    return module


if torch._C._get_privateuse1_backend_name() != DEVICE_TYPE:  # once per process
    _setup_privateuseone_for_python_backend(DEVICE_TYPE, backend_module=_device_module())


def _kernel(op: Any) -> Any:
    from .aten_xla_type import dispatch

    if op._schema.name.startswith("aten::_foreach_"):
        return lambda *args, **kwargs: _foreach(op, args, kwargs)
    return lambda *args, **kwargs: dispatch(op, args, kwargs)


def _fallback(op: Any, *args: Any, **kwargs: Any) -> Any:
    return _kernel(op)(*args, **kwargs)


def _foreach(op: Any, args: tuple, kwargs: dict) -> Any:
    """An optimizer's `_foreach_add_(params, grads)` as one op per tensor: PyTorch's slow path
    for a device without foreach kernels (torch_xla's optimizers loop instead: `xla` is not
    on the list of devices they run foreach on, and PrivateUse1 is). An in-place foreach op whose
    per-tensor op has no in-place form (`_foreach_maximum_`: aten has `maximum`, no `maximum_`)
    runs out of place, then copies."""
    name = op._schema.name.removeprefix("aten::_foreach_")
    copy = name.endswith("_") and not hasattr(torch.ops.aten, name)
    each = getattr(torch.ops.aten, name.removesuffix("_") if copy else name)
    schema = min((getattr(each, name)._schema for name in each.overloads()),
                 key=lambda s: sum(not a.kwarg_only for a in s.arguments))
    n_positional = sum(not a.kwarg_only for a in schema.arguments)
    keyword = [a.name for a in schema.arguments if a.kwarg_only]  # addcdiv's `value`
    n = len(args[0])

    def nth(x: Any, i: int) -> Any:
        return x[i] if isinstance(x, (list, tuple)) and len(x) == n else x
    out = [each(*(nth(a, i) for a in args[:n_positional]), **kwargs,
                **{k: nth(a, i) for k, a in zip(keyword, args[n_positional:], strict=False)})
           for i in range(n)]
    for dst, src in zip(args[0], out, strict=True) if copy else ():
        dst.copy_(src)
    return None if op._schema.name.endswith("_") else out


def storage_use_count(t: torch.Tensor) -> int:
    """How many tensors hold `t`'s storage (its XLATensorData): more than one where `detach`,
    `.data`, an `nn.Parameter` or a tensor saved for backward shares it. The storage's Python
    object, where the data hangs, holds one reference of its own and is not counted."""
    return torch._C._storage_Use_Count(t.untyped_storage()._cdata) - 1


def _overload(name: str) -> Any:
    """'aten::add.Tensor' -> torch.ops.aten.add.Tensor, or None where Python has no handle."""
    packet, _, overload = name.removeprefix("aten::").partition(".")
    try:
        return getattr(getattr(torch.ops.aten, packet), overload or "default")
    except (AttributeError, RuntimeError):
        return None


# --8<-- [start:ops_to_register]
def ops_to_register() -> dict[str, Any]:
    """Every aten op with a rule or a path of its own, and every op whose composite kernel
    would otherwise run first, by name (rules keyed by a name are the IR's own: SPMD's)."""
    # imported here, not above: both import tensor.py, which imports this module
    from . import pointwise_ops, rnn_cells  # noqa: F401 - they add their ops to SPECIAL
    from .aten_xla_type import SPECIAL
    from .lowering import LOWERINGS

    ops = {op.name(): op for op in [*LOWERINGS, *SPECIAL] if not isinstance(op, str)}
    for name in torch._C._dispatch_get_all_op_names():
        if name.startswith("aten::") and name not in ops and any(
                torch._C._dispatch_has_kernel_for_dispatch_key(name, k) for k in _COMPOSITE):
            op = _overload(name)
            if op is not None:
                ops[name] = op
    return {n: op for n, op in ops.items() if n.split(".")[0] not in KEEP_PYTORCHS
            and (not torch._C._dispatch_has_kernel_for_dispatch_key(n, _IMPLICIT)
                 or torch._C._dispatch_has_kernel_for_dispatch_key(n, "Autograd"))}
# --8<-- [end:ops_to_register]


def register() -> int:
    """Register our kernels and the fallback, once per process; returns how many kernels."""
    if _libraries:
        return _registered[0]
    kernels, fallback = torch.library.Library("aten", "IMPL"), torch.library.Library("_", "IMPL")
    ops = ops_to_register()
    for name, op in ops.items():
        kernels.impl(name.removeprefix("aten::"), _kernel(op), KEY)
    fallback.fallback(_fallback, KEY)
    _libraries.extend([kernels, fallback])  # kept: a Library's registrations die with it
    _registered[0] = len(ops)
    return len(ops)


_torch_str = torch._tensor_str._str


def _str(self: torch.Tensor, *, tensor_contents: Any = None) -> str:
    """Print a lazy tensor as PyTorch prints `xla` and `lazy` ones: fetched once (one graph),
    formatted on the host. torch/_tensor_str.py names those device types in a list that a
    PrivateUse1 device is not on; without this, printing runs its formatting ops on the device
    and reads every element on its own."""
    from .tensor import is_lazy

    real = is_lazy(self) and hasattr(self.untyped_storage(), "_xla")  # not a fake tensor
    if tensor_contents is None and real and self.numel() and not self.is_sparse:
        host = self.detach().to("cpu")
        tensor_contents = torch._tensor_str._tensor_str(host, len("tensor("))
    return _torch_str(self, tensor_contents=tensor_contents)


torch._tensor_str._str = _str
