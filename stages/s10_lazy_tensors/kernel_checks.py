"""What an eager CPU kernel refuses that its meta kernel and its decomposition let through.

PyTorch: each kernel's AT_DISPATCH macro (`"threshold_cpu" not implemented for 'Bool'`) and
the checks written in the kernel itself (relu's "Boolean inputs not supported", addcdiv's
integer division, mm's two dtypes). The lazy device builds its graph from meta kernels and
decompositions, which know neither, so such an op's CPU kernel runs first on size-1 stand-ins
of its tensors: whatever it raises, the lazy op raises, word for word. Only where some tensor
is not of one floating dtype: a float op of one dtype costs no kernel call. A few checks are
written out instead (IN_KERNELS): those a float op makes too (add's alpha, a float16 `pow`'s
exponent, which the kernel converts to float16), and those the stand-ins cannot show.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .type_cast import check_fits

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


def _ones_like(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return torch.ones(x.shape, dtype=x.dtype)
    if isinstance(x, (list, tuple)):
        return type(x)(_ones_like(v) for v in x)
    return torch.device("cpu") if isinstance(x, torch.device) else x


def raise_as_cpu_kernel(func: Any, args: tuple, kwargs: dict) -> None:
    """Where a meta kernel or a decomposition refused an op, its CPU kernel, run on ones of the
    same shapes and dtypes, raises in eager torch's words (a meta kernel's differ); if it
    accepts them, nothing is raised here and the caller's error stands."""
    func(*_ones_like(args), **{k: _ones_like(v) for k, v in kwargs.items()})


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
        aten.mv.default,
        aten.dot.default,
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


def _check_sub(self: Any, other: Any, *_: Any, **__: Any) -> None:
    """torch's sub_check, in its CPU kernel, not its meta one (C++: CheckSubOperandTypes)."""
    bools = [x.dtype == torch.bool if isinstance(x, torch.Tensor) else isinstance(x, bool)
             for x in (self, other)]
    if all(bools):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if any(bools):
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")


def _check_pow(self: Any, exponent: Any) -> None:
    """torch's pow refuses an integer tensor to a negative integer number; its float16 and
    bfloat16 kernels convert an exponent other than 0 and 1 (which copy or fill) to the dtype,
    checked: 1e6 raises for float16, 1e39 for bfloat16 (an integer kernel's conversion the
    stand-ins show)."""
    if isinstance(exponent, int) and exponent < 0 and not self.dtype.is_floating_point \
            and not self.dtype.is_complex:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    if self.dtype in (torch.float16, torch.bfloat16) and exponent not in (0, 1):
        check_fits(exponent, self.dtype)


def _check_alpha(self: Any, other: Any, alpha: Any = 1, sign: int = 1) -> None:
    """torch's alpha_check (a float alpha, an int result), then its kernel's conversion of
    alpha (sub's: -alpha) to the result's dtype, checked: float16 refuses 1e6, uint8 300."""
    if type(alpha) is int and alpha == 1:  # the default: every result takes it (asked per add)
        return
    dtype = torch.result_type(self, other)
    if isinstance(alpha, bool) and dtype != torch.bool:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if isinstance(alpha, float) and not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")
    check_fits(sign * alpha, dtype)


def _check_sub_alpha(self: Any, other: Any, alpha: Any = 1) -> None:
    _check_sub(self, other)  # torch's sub checks its operands first, then add's alpha
    _check_alpha(self, other, alpha, sign=-1)  # sub(a, b, alpha) is add(a, b, -alpha)


def _check_scatter(view: Any) -> Callable[..., None]:
    """torch's select_scatter and slice_scatter check the index, the step and src's size
    against the view they write (their meta kernels do not): the view op on a meta self."""
    def check(self: Any, src: Any, *args: Any, **kwargs: Any) -> None:
        size = list(view(torch.empty(self.shape, device="meta"), *args, **kwargs).shape)
        if list(src.shape) != size:
            raise RuntimeError(f"expected src to have a size equal to the slice of self. src "
                               f"size = {list(src.shape)}, slice size = {size}")
    return check


def _check_softmax_dim(self: Any, dim: int, *_: Any) -> None:
    """torch's maybe_wrap_dim, which softmax's kernel calls and its meta kernel does not
    (log_softmax's meta kernel does): a 0-d tensor takes the dims of a 1-d one."""
    n = max(self.dim(), 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")


def _check_target(self: Any, target: Any, *_: Any) -> None:
    """nll_loss's kernel takes an int64 or uint8 target (its meta kernel, int32 and int64)."""
    if target.dtype not in (torch.int64, torch.uint8):
        name = torch.empty(0, dtype=target.dtype).type()  # torch.IntTensor: Int
        raise RuntimeError("expected target dtype to be Long or Byte, but got "
                           + name.removeprefix("torch.").removesuffix("Tensor"))


IN_KERNELS = {  # the checks each kernel writes out, by the op's functional form
    aten.sub.Tensor: _check_sub_alpha, aten.sub.Scalar: _check_sub_alpha,
    aten.add.Tensor: _check_alpha, aten.add.Scalar: _check_alpha,
    aten.pow.Tensor_Scalar: _check_pow,
    aten._softmax.default: _check_softmax_dim,
    aten.nll_loss_forward.default: _check_target,
    aten.select_scatter.default: _check_scatter(aten.select.int),
    aten.slice_scatter.default: _check_scatter(aten.slice.Tensor)}
