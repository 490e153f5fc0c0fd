"""What an eager CPU kernel refuses that its meta kernel and its decomposition let through.

PyTorch: each kernel's AT_DISPATCH macro (`"threshold_cpu" not implemented for 'Bool'`) and
the checks written in the kernel itself (relu's "Boolean inputs not supported", addcdiv's
integer division, mm's two dtypes). The lazy device builds its graph from meta kernels and
decompositions, which know neither, so such an op's CPU kernel runs first on size-1 stand-ins
of its tensors: whatever it raises, the lazy op raises, word for word. Only where some tensor
is not of one floating dtype: a float op of one dtype costs no kernel call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

aten = torch.ops.aten


def _stand_in(x: Any) -> Any:
    """Ones, not zeros: an integer division by a stand-in must not divide by zero; empty where
    the tensor is empty, as some kernels return before they look at the dtype."""
    if isinstance(x, torch.Tensor):
        return torch.ones([min(n, 1) for n in x.shape], dtype=x.dtype)
    return x


def check_on_cpu(func: Any) -> Callable[..., None]:
    """A check that runs `func`'s CPU kernel on stand-ins of its tensors (each dimension 1, or
    0 where the tensor's is), where some tensor is an integer or a bool, or their dtypes differ."""

    def check(*args: Any, **kwargs: Any) -> None:
        dtypes = {a.dtype for a in args if isinstance(a, torch.Tensor)}
        if len(dtypes) > 1 or not all(d.is_floating_point for d in dtypes):
            func(*[_stand_in(a) for a in args], **kwargs)

    return check


def chain(*tables: dict[Any, Callable[..., None]]) -> dict[Any, Callable[..., None]]:
    """Check tables as one: an op in several runs each of its checks, in the tables' order."""
    merged: dict[Any, list[Callable[..., None]]] = {}
    for table in tables:
        for op, check in table.items():
            merged.setdefault(op, []).append(check)

    def run_all(checks: list[Callable[..., None]]) -> Callable[..., None]:
        def check(*args: Any, **kwargs: Any) -> None:
            for one in checks:
                one(*args, **kwargs)

        return check

    return {op: checks[0] if len(checks) == 1 else run_all(checks) for op, checks in merged.items()}


# the ops whose kernels refuse dtypes (or mixes of them) that their meta kernels accept
ON_CPU = {
    f: check_on_cpu(f)
    for f in (
        aten.mm.default,
        aten.bmm.default,
        aten.addmm.default,
        aten.relu.default,
        aten.abs.default,
        aten.frac.default,
        aten.pow.Tensor_Tensor,
        aten.pow.Tensor_Scalar,
        aten.pow.Scalar,
        aten.div.Tensor_mode,
        aten.div.Scalar_mode,
        aten.floor_divide.default,
        aten.clamp.default,
        aten.clamp.Tensor,
        aten.clamp_min.default,
        aten.clamp_max.default,
        aten.threshold.default,
        aten.addcmul.default,
        aten.addcdiv.default,
        aten.lerp.Scalar,
        aten.lerp.Tensor,
        aten.gelu.default,
        aten.silu.default,
        aten.elu.default,
        aten.softplus.default,
        aten.leaky_relu.default,
        aten._softmax.default,
        aten._log_softmax.default,
    )
}
