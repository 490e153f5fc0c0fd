"""The lowering rule of each aten op a lazy graph may hold, written with stage 2's lax.

torch_xla: torch_xla/csrc/ops/*.cpp (each node's `Lower`) and the builders they call
(elementwise.cpp, reduction.cpp, matrix.cpp, data_ops.cpp). A rule here is a function of the
node's operands (stage 2 tracers, by argument name) and parameters, plus `out`, the avals of
its outputs; lowering_context.py traces it with stage 8's `lower_fun`, so every rule reuses
stage 8's rules for lax primitives. Rules that need an op lax does not have (convolution) are
in nn_lowering.py with the rest of the neural-network ops. Torch broadcasting and type
promotion are explicit here: operands are converted to the output dtype and broadcast.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from stages.s02_tracing import lax
from stages.s02_tracing.core import ShapedArray, get_aval
from stages.s02_tracing.dtypes import bfloat16, canonicalize_dtype, dtype_kind

from .kernel_checks import IN_KERNELS, ON_CPU, chain
from .tensor_util import numpy_to_tensor, tensor_to_numpy
from .type_cast import FITS

aten = torch.ops.aten
LOWERINGS: dict[Any, Callable[..., Any]] = {}  # aten OpOverload -> rule
DIRECT: set[Any] = set()  # rules that emit StableHLO themselves (nn_lowering.py)


def register(*funcs: Any, direct: bool = False) -> Callable[[Callable], Callable]:
    def wrap(rule: Callable) -> Callable:
        for f in funcs:
            LOWERINGS[f] = rule
            if direct:
                DIRECT.add(f)
        return rule
    return wrap


# ------------------------------------------------------------------ helpers


def cast(x: Any, dtype: Any) -> Any:
    """A float to a narrower integer goes through int32, as C++ casts it: -2.5 as uint8 is
    254 in torch, where a direct conversion saturates to 0. A bool to a float goes through
    uint8: XLA rewrites convert(bool) * y as a select, so False * inf would be 0, not NaN.
    torch's int64 is int32 on the device, as every 64-bit dtype is with x64 off."""
    source, dtype = get_aval(x).dtype, canonicalize_dtype(dtype)
    if dtype_kind(source) == "f" and dtype.kind in "iu" and dtype.itemsize < 4:
        x = lax.convert_element_type(x, np.int32)
    if source == np.bool_ and dtype_kind(dtype) == "f":
        x = lax.convert_element_type(x, np.uint8)
    return x if get_aval(x).dtype == dtype else lax.convert_element_type(x, dtype)


def bcast(x: Any, shape: Sequence[int]) -> Any:
    """NumPy broadcasting of `x` to `shape`: trailing axes line up, size-1 axes stretch."""
    xs = get_aval(x).shape
    if tuple(xs) == tuple(shape):
        return x
    lead = len(shape) - len(xs)
    kept = [i for i, d in enumerate(xs) if d == shape[lead + i]]
    if len(kept) != len(xs):  # drop the size-1 axes that stretch
        x = lax.reshape(x, [xs[i] for i in kept])
    return lax.broadcast_in_dim(x, tuple(shape), [lead + i for i in kept])


def axes(dim: Any, ndim: int) -> list[int]:
    """torch's `dim` argument (an int, a list, or None for all) as sorted positive axes; none
    for a 0-d tensor, whose dim 0 or -1 torch accepts as the tensor itself."""
    if dim is None or (isinstance(dim, (list, tuple)) and not dim) or not ndim:
        return list(range(ndim))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return sorted(d % ndim for d in dims)


def scale(x: Any, factor: Any, dtype: Any) -> Any:
    """`x * factor` for a parameter that may be a plain number (alpha, beta) or an operand."""
    if factor is None or (not hasattr(factor, "aval") and factor == 1):
        return x
    if not hasattr(factor, "aval"):
        factor = np.array(factor, dtype)
    factor = bcast(cast(factor, dtype), get_aval(x).shape)  # bools: torch's alpha && x
    return lax.bitwise_and(x, factor) if np.dtype(dtype) == np.bool_ else lax.mul(x, factor)


# ------------------------------------------------------------------ elementwise


@functools.cache
def result_type(*avals: tuple[np.dtype, bool | None]) -> np.dtype:
    """torch.result_type of operands given as (dtype, is 0-d), or (dtype, None) for a number
    (an argument torch types `Scalar`): a 0-d tensor decides the dtype only when its category
    (bool, integer, float) is higher than the others' (uint8 < int8's 0-d stays uint8), a number
    only when its category is higher than every tensor's (a 0-d uint8 < -3 compares in uint8),
    which np.promote_types does not know (C++: at::result_type)."""
    dummies = [numpy_to_tensor(np.zeros(() if zero_d else (1,), dtype)) if zero_d is not None
               else {"b": True, "f": 1.0}.get(dtype_kind(np.dtype(dtype)), 1)
               for dtype, zero_d in avals]
    return tensor_to_numpy(torch.empty(0, dtype=torch.result_type(*dummies))).dtype


def opmath(dtype: Any) -> np.dtype:
    """The dtype a kernel computes a dtype's values in: float32 for float16 and bfloat16,
    rounded once at the end (C++: at::opmath_type); the dtype itself otherwise."""
    return np.dtype(np.float32 if np.dtype(dtype) in (np.float16, bfloat16) else dtype)


def _binary(fn: Callable[[Any, Any], Any], compare: bool = False, number: bool = False,
            on_bool: Callable[[Any, Any], Any] | None = None,
            wide_other: bool = False) -> Callable[..., Any]:
    """A rule computing in the result's math type (float16's and bfloat16's is float32: rounded
    once) from operands (and alpha) in the result's dtype; a comparison in the operands' result
    type, its `other` a number where `number`; with `wide_other` (mul, div), `other` as it comes,
    as torch's kernel reads a number or a 0-d tensor there: a float16 0 times 1e6 is 0 (a number
    comes in float32: device_data.scalar_dtype), where add's 1e5 is float16's inf."""
    def rule(self, other, alpha=None, *, out, **_):
        o = out[0]  # a comparison's output is bool: it compares in the operands' result type
        a, b = get_aval(self), get_aval(other)
        dtype = result_type((a.dtype, not a.shape), (b.dtype, None if number else not b.shape)) \
            if compare else opmath(o.dtype)
        narrow = dtype if compare else o.dtype
        x = bcast(cast(cast(self, narrow), dtype), o.shape)
        y = bcast(cast(other if wide_other else cast(other, narrow), dtype), o.shape)
        y = scale(y, cast(alpha, narrow) if hasattr(alpha, "aval") else alpha, dtype)
        return [cast((on_bool if on_bool is not None and dtype == np.bool_ else fn)(x, y),
                     o.dtype)]
    return rule


def integer_pow(x: Any, exponent: Any) -> Any:
    """`x ** exponent` for integers of one dtype and shape as torch's kernel computes them
    (C++: powi): a square per bit of the exponent, wrapping as the dtype does (int32 3 ** 300
    is 3 ** 300 mod 2 ** 32); below 0, 1 for 1, -1 or 1 for -1, else 0."""
    aval = get_aval(x)

    def const(v: int) -> Any:
        return lax.full(aval.shape, v, aval.dtype)
    result, base, rest = const(1), x, exponent
    for _ in range(np.iinfo(aval.dtype).bits - (aval.dtype.kind == "i")):  # its value bits
        odd = lax.ne(lax.rem(rest, const(2)), const(0))
        result = lax.select_n(odd, result, lax.mul(result, base))
        base, rest = lax.mul(base, base), lax.div(rest, const(2))
    if aval.dtype.kind == "u":
        return result
    odd = lax.ne(lax.rem(exponent, const(2)), const(0))
    at_one = lax.select_n(lax.eq(x, const(1)), const(0), const(1))
    below = lax.select_n(lax.eq(x, const(-1)), at_one, lax.select_n(odd, const(1), const(-1)))
    return lax.select_n(lax.lt(exponent, const(0)), result, below)


@register(aten.pow.Tensor_Scalar, aten.pow.Tensor_Tensor)
def _pow(self, exponent, *, out, **_):
    """Both operands in the result's dtype: lax.pow for floats, integer_pow for integers
    (lax.pow takes a float base only, JAX's rule; stablehlo.power's integers also differ from
    torch's past an exponent of 63)."""
    o = out[0]
    x, e = (bcast(cast(v, o.dtype), o.shape) for v in (self, exponent))
    return [(integer_pow if np.dtype(o.dtype).kind in "iu" else lax.pow)(x, e)]


# torch's bool + bool is `or`, bool * bool is `and` (lax's add and mul take no bools)
register(aten.add.Tensor, aten.add.Scalar)(_binary(lax.add, on_bool=lax.bitwise_or))
register(aten.sub.Tensor, aten.sub.Scalar)(_binary(lax.sub))
register(aten.mul.Tensor, aten.mul.Scalar)(_binary(lax.mul, on_bool=lax.bitwise_and,
                                                   wide_other=True))
register(aten.div.Tensor, aten.div.Scalar)(_binary(lax.div, wide_other=True))
register(aten.maximum.default)(_binary(lax.max))
register(aten.minimum.default)(_binary(lax.min))
register(aten.atan2.default)(_binary(lax.atan2))  # ints and bools: the float result dtype


CHECKS = chain(ON_CPU, IN_KERNELS, FITS)  # run before the node is built, in this order


for _name, _fn in [("eq", lax.eq), ("ne", lax.ne), ("lt", lax.lt), ("le", lax.le),
                   ("gt", lax.gt), ("ge", lax.ge)]:
    _packet = getattr(aten, _name)
    register(_packet.Tensor)(_binary(_fn, compare=True))
    register(_packet.Scalar)(_binary(_fn, compare=True, number=True))


def _unary(fn: Callable[[Any], Any], wide: bool = True) -> Callable[..., Any]:
    """float16 and bfloat16 math in float32, rounded once, as torch's kernels do (sigmoid in
    float16 would be an ulp off, and sigmoid's backward, 1 - y, magnifies it)."""
    def rule(self, *, out, **_):
        x = cast(self, out[0].dtype)
        return [cast(fn(cast(x, opmath(out[0].dtype) if wide else out[0].dtype)), out[0].dtype)]
    return rule


for _op, _fn in [(aten.neg.default, lax.neg), (aten.exp.default, lax.exp),
                 (aten.log.default, lax.log), (aten.tanh.default, lax.tanh),
                 (aten.sqrt.default, lax.sqrt), (aten.rsqrt.default, lax.rsqrt),
                 (aten.erf.default, lax.erf),
                 (aten.sigmoid.default, lax.logistic), (aten.sin.default, lax.sin),
                 (aten.cos.default, lax.cos)]:
    register(_op)(_unary(_fn))
for _op in (aten.clone.default, aten._to_copy.default):  # float64 to float16: rounded once
    register(_op)(_unary(lambda x: x, wide=False))


@register(aten.abs.default)
def _abs(self, *, out, **_):
    """lax.abs takes no unsigned integers (JAX's rule); torch's abs of a uint8 is itself."""
    return [self if np.dtype(out[0].dtype).kind == "u" else lax.abs(self)]


@register(aten.relu.default)
def _relu(self, *, out, **_):
    return [lax.max(self, lax.full((), 0, out[0].dtype))]


@register(aten.where.self)
def _where(condition, self, other, *, out, **_):
    o = out[0]
    pick = bcast(cast(condition, bool), o.shape)
    return [lax.select_n(pick, bcast(cast(other, o.dtype), o.shape),
                         bcast(cast(self, o.dtype), o.shape))]


@register(aten.constant_pad_nd.default)
def _constant_pad_nd(self, pad, value=0, *, out, **_):
    """torch's `pad` lists (low, high) per dimension from the last one back; negative crops."""
    o = out[0]
    config = [(0, 0, 0)] * len(o.shape)
    for k in range(len(pad) // 2):
        config[-1 - k] = (pad[2 * k], pad[2 * k + 1], 0)
    fill = cast(value, o.dtype) if hasattr(value, "aval") else np.array(value, o.dtype)
    return [lax.pad(cast(self, o.dtype), fill, config)]


@register(aten.fill.Scalar, aten.fill.Tensor)
def _fill(self, value, *, out, **_):
    return [bcast(cast(value, out[0].dtype), out[0].shape)]


@register(aten.full_like.default)
def _full_like(self, fill_value, *, out, **_):
    return [bcast(cast(fill_value, out[0].dtype), out[0].shape)]


@register(aten.zero.default)
def _zero(self, *, out, **_):
    return [lax.full(out[0].shape, 0, out[0].dtype)]


def lower_full(*, out, fill_value, **_):
    """The leaf `aten::full` (torch_xla's `empty` and `full`): a constant, broadcast."""
    return [lax.full(out[0].shape, fill_value, out[0].dtype)]


def lower_scalar(*, out, value, **_):
    """prim::Constant, a special scalar baked into the program."""
    return [lax.full((), value, out[0].dtype)]


# ------------------------------------------------------------------ reductions


@register(aten.sum.dim_IntList, aten.sum.default, aten.mean.dim, aten.mean.default)
def _sum(self, dim=None, keepdim=False, *, out, _op="sum", **_):
    """float16 and bfloat16 accumulate in float32, then round once, as torch's CPU kernel
    does (a mean divides in float32 too: a float16 sum of 100 times 1000.0 would be inf, a
    bfloat16 sum of 1000 ones 256)."""
    o = out[0]
    x = cast(self, opmath(o.dtype))
    reduced = axes(dim, len(get_aval(x).shape))
    total = lax.reduce_sum(x, reduced)
    if _op == "mean":
        count = int(np.prod([get_aval(x).shape[a] for a in reduced]))
        total = lax.div(total, lax.full((), count, get_aval(x).dtype))
    return [lax.reshape(cast(total, o.dtype), o.shape)]


LOWERINGS[aten.mean.dim] = lambda *a, **k: _sum(*a, _op="mean", **k)
LOWERINGS[aten.mean.default] = LOWERINGS[aten.mean.dim]


@register(aten.amax.default)
def _amax(self, dim=(), keepdim=False, *, out, **_):
    reduced = lax.reduce_max(self, axes(dim, len(get_aval(self).shape)))
    return [lax.reshape(reduced, out[0].shape)]


# ------------------------------------------------------------------ matrix products


def _dot(x, y, contract, batch=((), ())):
    """Products summed in the math type (float16's and bfloat16's: float32), as torch's CPU
    gemm accumulates them; the caller rounds once."""
    wide = opmath(get_aval(x).dtype)
    return lax.dot_general(x, y, (contract, batch), preferred_element_type=wide)


@register(aten.mm.default)
def _mm(self, mat2, *, out, **_):
    return [cast(_dot(self, mat2, ((1,), (0,))), out[0].dtype)]


@register(aten.bmm.default)
def _bmm(self, mat2, *, out, **_):
    return [cast(_dot(self, mat2, ((2,), (1,)), ((0,), (0,))), out[0].dtype)]


def addmm_supported(beta=None, alpha=None, **_: Any) -> bool:
    """Our rule is `self + mat1 @ mat2`: other factors take torch's decomposition, which drops
    `self` where beta is 0 (torch_xla sends them to the CPU). A rule taking them would also
    see beta=0 and alpha=0 as nodes of one hash: one factor a parameter, the other an operand."""
    return beta == 1 and alpha == 1


@register(aten.addmm.default)
def _addmm(self, mat1, mat2, *, out, **_):
    """self added to the float32 products before the one rounding, as torch's gemm adds C."""
    product = _dot(mat1, mat2, ((1,), (0,)))
    total = lax.add(bcast(cast(self, get_aval(product).dtype), out[0].shape), product)
    return [cast(total, out[0].dtype)]


# ------------------------------------------------------------------ shapes


@register(aten.view.default, aten._unsafe_view.default, aten.reshape.default,
          aten.unsqueeze.default, aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default)
def _reshape(self, *_, out, **__):
    return [lax.reshape(self, out[0].shape)]


@register(aten.t.default, aten.transpose.int, aten.permute.default)
def _permute(self, dim0=None, dim1=None, dims=None, *, out, **_):
    n = len(get_aval(self).shape)
    perm = list(range(n))
    if dims is not None:
        perm = [d % n for d in dims]
    elif n == 2 or (dim0 is not None and n):  # a 0-d tensor's dims 0 and -1: itself
        a, b = (0, 1) if dim0 is None else (dim0 % n, dim1 % n)
        perm[a], perm[b] = perm[b], perm[a]
    return [lax.transpose(self, perm)]


@register(aten.expand.default)
def _expand(self, size, implicit=False, *, out, **_):
    return [bcast(self, out[0].shape)]


@register(aten.slice.Tensor)
def _slice(self, dim=0, start=None, end=None, step=1, *, out, **_):
    shape = get_aval(self).shape
    dim, n = dim % len(shape), shape[dim % len(shape)]
    # torch clamps the start into [0, n]; an empty slice ends where it starts
    start = 0 if start is None else min(max(start + n if start < 0 else start, 0), n)
    begin, limit, strides = [0] * len(shape), list(shape), [1] * len(shape)
    begin[dim], strides[dim] = start, step
    limit[dim] = start + max((out[0].shape[dim] - 1) * step + 1, 0)
    return [lax.slice(self, begin, limit, strides)]


@register(aten.select.int)
def _select(self, dim, index, *, out, **_):
    shape = get_aval(self).shape
    dim, index = dim % len(shape), index % shape[dim]
    begin, limit = [0] * len(shape), list(shape)
    begin[dim], limit[dim] = index, index + 1
    return [lax.reshape(lax.slice(self, begin, limit), out[0].shape)]


@register(aten.split_with_sizes.default, aten.split.Tensor)
def _split(self, split_sizes=None, dim=0, split_size=None, *, out, **_):
    shape = get_aval(self).shape
    dim, at, pieces = dim % len(shape), 0, []
    for o in out:
        begin, limit = [0] * len(shape), list(shape)
        begin[dim], limit[dim] = at, at + o.shape[dim]
        pieces.append(lax.slice(self, begin, limit))
        at += o.shape[dim]
    return pieces


@register(aten.cat.default)
def _cat(tensors, dim=0, *, out, **_):
    o = out[0]
    parts = [cast(t, o.dtype) for t in tensors if get_aval(t).size]
    if not parts:  # every input empty (lax's concatenate needs one): so is the result
        return [lax.full(o.shape, 0, o.dtype)]
    return [lax.concatenate(parts, dim % len(o.shape))]


def avals_of(out: Sequence[ShapedArray | None]) -> list[ShapedArray]:
    return [o for o in out if o is not None]
