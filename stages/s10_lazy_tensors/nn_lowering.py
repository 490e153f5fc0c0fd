"""Lowering rules of the neural-network ops: softmax, layer norm, gathers and scatters by
one-hot, embedding and convolution, forward and backward (max pooling: pool_lowering.py;
GELU and the other activations: activation_lowering.py).

torch_xla: torch_xla/csrc/softmax_builder.cpp, aten_xla_type.cpp (`native_layer_norm`, PyTorch's
composite `math_native_layer_norm`, which lands in batch_norm.cpp), data_ops.cpp,
convolution.cpp. Gather and scatter are written here as a one-hot comparison and a sum, at a
cost that is fine for the small index ranges of a course; embedding, whose weights may hold inf,
is a gather and its backward a scatter-add. Convolution is the one op lax lacks: its rules emit
`stablehlo.convolution` directly.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import torch

from stages.s02_tracing import lax
from stages.s02_tracing.core import get_aval
from stages.s08_lowering import hlo, mlir

from .lowering import addmm_supported, bcast, cast, opmath, register
from .pool_lowering import pool_supported

aten = torch.ops.aten


# ------------------------------------------------------------------ softmax and friends


def _shifted(x: Any, dim: int) -> tuple[Any, Any]:
    """x - max(x) along dim, and the sum of its exponentials (kept as a size-1 axis)."""
    shape = get_aval(x).shape
    d = _axis(dim, shape)
    peak = bcast(lax.reshape(lax.reduce_max(x, d), _keep(shape, d)), shape)
    shifted = lax.sub(x, peak)
    total = lax.reshape(lax.reduce_sum(lax.exp(shifted), d), _keep(shape, d))
    return shifted, total


def _axis(dim: int, shape: tuple) -> list[int]:
    """torch's softmax `dim` as the axes to reduce: none for a 0-d tensor (dim 0 or -1)."""
    return [dim % len(shape)] if shape else []


def _rounded(x: Any, dtype: Any) -> Any:
    """x (computed in opmath(dtype)) rounded to dtype, as a kernel's buffer of dtype rounds it."""
    return cast(cast(x, dtype), opmath(dtype))


def _keep(shape: tuple, d: list[int]) -> tuple:
    return tuple(1 if i in d else n for i, n in enumerate(shape))


@register(aten._softmax.default)
def _softmax(self, dim, half_to_float=False, *, out, **_):
    """float16 is computed in float32 and rounded once, as torch's CPU kernel does."""
    shifted, total = _shifted(cast(self, opmath(out[0].dtype)), dim)
    return [cast(lax.div(lax.exp(shifted), bcast(total, get_aval(shifted).shape)), out[0].dtype)]


@register(aten._log_softmax.default)
def _log_softmax(self, dim, half_to_float=False, *, out, **_):
    """float16 in float32, rounded once, as softmax; but along the last dim torch's kernel
    (_vec_log_softmax_lastdim) keeps the sum and its log in float16 buffers."""
    dtype, shape = out[0].dtype, out[0].shape
    shifted, total = _shifted(cast(self, opmath(dtype)), dim)
    log_total = lax.log(total)
    if shape and _axis(dim, shape) == [len(shape) - 1]:  # each rounded to dtype on the way
        log_total = _rounded(lax.log(_rounded(total, dtype)), dtype)
    return [cast(lax.sub(shifted, bcast(log_total, get_aval(shifted).shape)), dtype)]


@register(aten._log_softmax_backward_data.default)
def _log_softmax_backward(grad_output, output, dim, input_dtype, *, out, **_):
    """torch_xla: ops/log_softmax_backward.cpp. grad - exp(output) * sum(grad) along dim,
    float16 in float32 as torch's CPU kernel computes it."""
    grad_output, output = (cast(x, opmath(out[0].dtype)) for x in (grad_output, output))
    shape = get_aval(output).shape
    d = _axis(dim, shape)
    total = bcast(lax.reshape(lax.reduce_sum(grad_output, d), _keep(shape, d)), shape)
    return [cast(lax.sub(grad_output, lax.mul(lax.exp(output), total)), out[0].dtype)]


@register(aten._softmax_backward_data.default)
def _softmax_backward(grad_output, output, dim, input_dtype, *, out, **_):
    """torch_xla: ops/softmax_backward.cpp. output * (grad - sum(grad * output)) along dim,
    float16 in float32 as torch's CPU kernel computes it."""
    grad_output, output = (cast(x, opmath(out[0].dtype)) for x in (grad_output, output))
    shape = get_aval(output).shape
    d = _axis(dim, shape)
    dot = lax.reduce_sum(lax.mul(grad_output, output), d)
    total = bcast(lax.reshape(dot, _keep(shape, d)), shape)
    return [cast(lax.mul(output, lax.sub(grad_output, total)), out[0].dtype)]


@register(aten.threshold_backward.default)
def _threshold_backward(grad_output, self, threshold, *, out, **_):
    """torch_xla: ops/threshold_backward.cpp. 0 where self <= threshold, else the gradient (a
    NaN self keeps it), compared in float32 for float16 as torch's kernel does."""
    shape, dtype = out[0].shape, opmath(get_aval(self).dtype)
    below = lax.le(cast(self, dtype), bcast(cast(threshold, dtype), shape))
    return [lax.select_n(below, grad_output, lax.full(shape, 0, out[0].dtype))]


@register(aten.native_layer_norm.default)
def _layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, *, out, **_):
    shape = get_aval(input).shape
    reduced = list(range(len(shape) - len(normalized_shape), len(shape)))
    count = float(np.prod([shape[a] for a in reduced]))
    # float16 and bfloat16 are computed in float32, as torch's CPU kernel does; mean and rstd
    # come out in the dtypes the meta kernel gives them (float32), y in the input's
    dtype = opmath(out[0].dtype)
    input = cast(input, dtype)
    mean = lax.div(lax.reduce_sum(input, reduced), lax.full((), count, dtype))
    mean = lax.reshape(mean, out[1].shape)
    centered = lax.sub(input, bcast(mean, shape))
    var = lax.div(lax.reduce_sum(lax.mul(centered, centered), reduced),
                  lax.full((), count, dtype))
    rstd = lax.rsqrt(lax.add(lax.reshape(var, out[2].shape), lax.full((), eps, dtype)))
    y = lax.mul(centered, bcast(rstd, shape))
    if weight is not None:
        y = lax.mul(y, bcast(cast(weight, dtype), shape))
    if bias is not None:
        y = lax.add(y, bcast(cast(bias, dtype), shape))
    return [cast(y, out[0].dtype), cast(mean, out[1].dtype), cast(rstd, out[2].dtype)]


# ------------------------------------------------------------------ gather and scatter


def one_hot(index: Any, n: int) -> Any:
    """`index[..., None] == arange(n)`: a bool array with one more (last) axis of size n."""
    shape = (*get_aval(index).shape, n)
    positions = lax.broadcasted_iota(get_aval(index).dtype, shape, len(shape) - 1)
    return lax.eq(bcast(lax.reshape(index, (*get_aval(index).shape, 1)), shape), positions)


def _to_last(x: Any, dim: int) -> Any:
    n = len(get_aval(x).shape)
    return lax.transpose(x, [a for a in range(n) if a != dim] + [dim])


def _0d_as_1d(rule: Any) -> Any:
    """torch gathers and scatters along dim 0 (or -1) of a 0-d tensor, or by a 0-d index, as if
    it had shape (1,): the rule sees such operands so, and its result gets the output's shape."""
    @functools.wraps(rule)
    def wrapped(*, out, **kw):  # rules are called with keywords only (lowering_context.py)
        if get_aval(kw["self"]).shape and get_aval(kw["index"]).shape:
            return rule(out=out, **kw)
        kw = {k: lax.reshape(x, (1,)) if hasattr(x, "aval") and not get_aval(x).shape else x
              for k, x in kw.items()}
        return [lax.reshape(y, out[0].shape) for y in rule(out=out, **kw)]
    return wrapped


@register(aten.gather.default)
@_0d_as_1d
def _gather(self, dim, index, sparse_grad=False, *, out, **_):
    """out[..., j, ...] = self[..., index[..., j, ...], ...] along `dim`; bools are summed
    as int32 (lax sums no bools), one hit each."""
    shape, ishape = get_aval(self).shape, get_aval(index).shape
    d, n = dim % len(shape), shape[dim % len(shape)]
    dtype = np.int32 if out[0].dtype == np.bool_ else out[0].dtype
    limits = [n if a == d else ishape[a] for a in range(len(shape))]
    values = _to_last(lax.slice(cast(self, dtype), [0] * len(shape), limits), d)
    target = (*ishape, n)
    values = lax.broadcast_in_dim(values, target, [a for a in range(len(target)) if a != d])
    picked = lax.select_n(one_hot(index, n), lax.full(target, 0, dtype), values)
    return [cast(lax.reduce_sum(picked, [len(ishape)]), out[0].dtype)]


@register(aten.scatter.value)
@_0d_as_1d
def _scatter_value(self, dim, index, value, *, out, **_):
    """self with `value` written at index[..., j, ...] along `dim`; an index smaller than
    self elsewhere covers the leading block, as in scatter_add."""
    shape = get_aval(self).shape
    d, n = dim % len(shape), shape[dim % len(shape)]
    hit = lax.reduce_max(lax.convert_element_type(one_hot(index, n), np.int32), [d])
    order = list(range(len(shape) - 1))
    hit = lax.transpose(hit, order[:d] + [len(shape) - 1] + order[d:])
    pads = [(0, shape[a] - get_aval(hit).shape[a], 0) for a in range(len(shape))]
    if any(hi for _, hi, _ in pads):
        hit = lax.pad(hit, lax.full((), 0, np.int32), pads)
    hit = lax.ne(hit, lax.full(shape, 0, np.int32))
    return [lax.select_n(hit, self, bcast(cast(value, out[0].dtype), shape))]


@register(aten.scatter_add.default)
@_0d_as_1d
def _scatter_add(self, dim, index, src, *, out, **_):
    """self plus src[..., j, ...] added at index[..., j, ...] along `dim` (gather's transpose):
    each source element lands on the row its one-hot picks; an index smaller than self
    elsewhere covers the leading block."""
    shape, ishape = get_aval(self).shape, get_aval(index).shape
    d, n = dim % len(shape), shape[dim % len(shape)]
    values = lax.slice(cast(src, out[0].dtype), [0] * len(ishape), list(ishape))
    target = (*ishape, n)
    values = lax.broadcast_in_dim(values, target, list(range(len(ishape))))
    summed = lax.reduce_sum(lax.select_n(one_hot(index, n), lax.full(target, 0, out[0].dtype),
                                         values), [d])  # (..., n), the index's dim d gone
    order = list(range(len(shape) - 1))
    summed = lax.transpose(summed, order[:d] + [len(shape) - 1] + order[d:])
    pads = [(0, shape[a] - get_aval(summed).shape[a], 0) for a in range(len(shape))]
    if any(hi for _, hi, _ in pads):
        summed = lax.pad(summed, lax.full((), 0, out[0].dtype), pads)
    return [lax.add(self, summed)]


@register(aten.select_scatter.default)
def _select_scatter(self, src, dim, index, *, out, **_):
    """src written at `index` along `dim`, in self's dtype, as torch_xla lowers it: torch's
    decomposition (a `where`) would promote an int self and a float src to the float."""
    o = out[0]
    d = dim % len(o.shape)
    at = lax.eq(lax.broadcasted_iota(np.int32, o.shape, d),
                lax.full(o.shape, index % o.shape[d], np.int32))
    keep = tuple(1 if a == d else n for a, n in enumerate(o.shape))
    return [lax.select_n(at, self, bcast(lax.reshape(cast(src, o.dtype), keep), o.shape))]


@register(aten.slice_scatter.default)
def _slice_scatter(self, src, dim=0, start=None, end=None, step=1, *, out, **_):
    """src spread over self's dim by padding (`start` before, `step - 1` between elements),
    in self's dtype as select_scatter is."""
    o, shape = out[0], get_aval(src).shape
    d = dim % len(o.shape)
    n, m = o.shape[d], shape[d]
    if not m:
        return [self]
    start = 0 if start is None else min(max(start + n if start < 0 else start, 0), n)
    config = [(0, 0, 0)] * len(o.shape)
    config[d] = (start, n - start - (m - 1) * step - 1, step - 1)
    hit = lax.pad(lax.full(shape, 1, np.int32), np.array(0, np.int32), config)
    spread = lax.pad(cast(src, o.dtype), np.array(0, o.dtype), config)
    return [lax.select_n(lax.ne(hit, lax.full(o.shape, 0, np.int32)), self, spread)]


@register(aten.embedding.default)
def _embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False, *,
               out, **_):
    """torch_xla: an index_select of weight's rows, a gather (a one-hot matmul would read
    0 * inf as NaN); an index out of range reads a row of zeros."""
    ishape, width = get_aval(indices).shape, get_aval(weight).shape[1]
    dn = lax.GatherDimensionNumbers(offset_dims=(len(ishape),), collapsed_slice_dims=(0,),
                                    start_index_map=(0,))
    return [lax.gather(weight, lax.reshape(indices, (*ishape, 1)), dn, (1, width),
                       mode="fill", fill_value=0)]


@register(aten.embedding_dense_backward.default)
def _embedding_backward(grad_output, indices, num_weights, padding_idx=-1,
                        scale_grad_by_freq=False, *, out, **_):
    """Each gradient row added onto its index's row, a scatter-add; none onto padding_idx's
    row, nor for an index out of range."""
    count, width = int(np.prod(get_aval(indices).shape)), out[0].shape[1]
    index = lax.reshape(indices, (count, 1))
    grads = lax.reshape(grad_output, (count, width))
    if padding_idx >= 0:  # the padding row gets no gradient: select, as 0 * inf is NaN
        pad = lax.eq(index, lax.full((count, 1), padding_idx, get_aval(index).dtype))
        grads = lax.select_n(bcast(pad, (count, width)), grads,
                             lax.full((count, width), 0, out[0].dtype))
    dn = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))

    def add_rows(rows: Any, n: int) -> Any:
        zeros = lax.full((num_weights, n), 0, get_aval(rows).dtype)
        return lax.scatter_add(zeros, index, rows, dn, mode="drop")
    grad = add_rows(grads, width)
    if scale_grad_by_freq:  # each row's gradient over how often its index occurs
        times = add_rows(lax.full((count, 1), 1, out[0].dtype), 1)
        times = lax.max(times, lax.full((num_weights, 1), 1, out[0].dtype))
        grad = lax.div(grad, bcast(times, out[0].shape))
    return [grad]


# ------------------------------------------------------------------ the negative log likelihood


def _target_weights(target: Any, weight: Any, n: int, ignore_index: int, dtype: Any
                    ) -> tuple[Any, Any, Any]:
    """The one-hot of each target over the n classes, whether it counts (not ignore_index),
    and its weight: weight[t] (1 without weights), 0 where it does not count."""
    hits = one_hot(target, n)
    t = get_aval(target)
    keep = lax.ne(target, lax.full(t.shape, ignore_index, t.dtype))
    if weight is None:
        w = lax.full(t.shape, 1, dtype)
    else:
        zeros = lax.full(get_aval(hits).shape, 0, dtype)
        w = lax.reduce_sum(lax.select_n(hits, zeros, bcast(weight, get_aval(hits).shape)),
                           [len(get_aval(hits).shape) - 1])
    return hits, keep, lax.select_n(keep, lax.full(t.shape, 0, dtype), w)


@register(aten.nll_loss_forward.default)
def _nll_loss(self, target, weight=None, reduction=1, ignore_index=-100, *, out, **_):
    """torch_xla: ops/nll_loss.cpp. -self[n, target[n]] * weight[target[n]] over the targets
    that are not ignore_index, kept (reduction 0), summed (2) or averaged by weight (1)."""
    dtype, shape = out[0].dtype, get_aval(self).shape
    hits, _, w = _target_weights(target, weight, shape[-1], ignore_index, dtype)
    picked = lax.reduce_sum(lax.select_n(hits, lax.full(shape, 0, dtype), self), [len(shape) - 1])
    loss = lax.neg(lax.mul(picked, w))
    if reduction == 0 and len(shape) > 1:
        return [loss, lax.full((), 0, dtype)]
    every = list(range(len(get_aval(w).shape)))
    total = lax.reduce_sum(w, every)
    summed = lax.reduce_sum(loss, list(range(len(get_aval(loss).shape))))
    return [lax.div(summed, total) if reduction == 1 else summed, total]


@register(aten.nll_loss_backward.default)
def _nll_loss_backward(grad_output, self, target, weight=None, reduction=1, ignore_index=-100,
                       total_weight=None, *, out, **_):
    """torch_xla: ops/nll_loss_backward.cpp. -grad (over the total weight for a mean) times
    the target's weight, at each target's class; 0 elsewhere."""
    dtype, shape = out[0].dtype, get_aval(self).shape
    if len(shape) == 1 and get_aval(target).shape:  # no batch: torch reads target[0]
        target = lax.reshape(lax.slice(target, [0], [1]), ())
    hits, keep, w = _target_weights(target, weight, shape[-1], ignore_index, dtype)
    g = lax.div(grad_output, total_weight) if reduction == 1 else grad_output
    per = lax.neg(lax.mul(bcast(g, get_aval(w).shape), w))  # 0/0 where nothing counts:
    per = lax.select_n(keep, lax.full(get_aval(w).shape, 0, dtype), per)  # masked after
    spread = lax.broadcast_in_dim(per, shape, list(range(len(get_aval(per).shape))))
    return [lax.select_n(hits, lax.full(shape, 0, dtype), spread)]


# ------------------------------------------------------------------ convolution, in StableHLO


def conv_supported(stride=(1, 1), padding=(0, 0), dilation=(1, 1), transposed=False,
                   output_padding=(0, 0), groups=1, **_: Any) -> bool:
    """Our convolution rules cover 2-D, ungrouped, undilated, untransposed convolutions."""
    return not transposed and groups == 1 and all(d == 1 for d in dilation) and \
        len(stride) == 2


def _conv(lhs, rhs, dims, strides, padding, lhs_dilation, rhs_dilation, aval):
    return hlo.convolution(lhs, rhs, dims, strides, padding, lhs_dilation, rhs_dilation,
                           mlir.aval_to_ir_type(aval))


@register(aten.convolution.default, direct=True)
def _convolution(ctx, input, weight, bias=None, stride=(1, 1), padding=(0, 0), *, out, **_):
    nchw = ("[b, f, 0, 1]", "[o, i, 0, 1]", "[b, f, 0, 1]")
    y = _conv(input, weight, nchw, stride, [(p, p) for p in padding], (1, 1), (1, 1), out[0])
    if bias is not None:
        y = hlo.elementwise("add", y, hlo.broadcast_in_dim(bias, [1], y.type))
    return [y]


@register(aten.convolution_backward.default, direct=True)
def _convolution_backward(ctx, grad_output, input, weight, stride=(1, 1), padding=(0, 0), *,
                          out, **_):
    """The three gradients of a strided, padded 2-D convolution; the first two are
    convolutions themselves, the third a sum."""
    (ho, wo), (h, w), (kh, kw) = (a.shape[2:] for a in ctx.avals_in[:3])
    results = []
    if out[0] is not None:  # d input: grad_output dilated by the stride, against W flipped
        pads = [(k - 1 - p, size - (o - 1) * s + p - 1)
                for k, p, s, size, o in ((kh, padding[0], stride[0], h, ho),
                                         (kw, padding[1], stride[1], w, wo))]
        dims = ("[b, f, 0, 1]", "[i, o, 0, 1]", "[b, f, 0, 1]")
        results.append(_conv(grad_output, hlo.reverse(weight, [2, 3]), dims, (1, 1), pads,
                             stride, (1, 1), out[0]))
    if out[1] is not None:  # d weight: input against grad_output, the batch as the feature
        pads = [(p, (o - 1) * s + k - size - p)
                for k, p, s, size, o in ((kh, padding[0], stride[0], h, ho),
                                         (kw, padding[1], stride[1], w, wo))]
        dims = ("[f, b, 0, 1]", "[i, o, 0, 1]", "[f, b, 0, 1]")
        results.append(_conv(input, grad_output, dims, (1, 1), pads, (1, 1), stride, out[1]))
    if out[2] is not None:  # d bias: a sum, lowered through stage 8 as any lax function
        bias_ctx = ctx.replace(avals_in=[ctx.avals_in[0]], avals_out=[out[2]])
        results += mlir.lower_fun(_sum_nhw, multiple_results=False)(bias_ctx, grad_output)
    return results


def _sum_nhw(grad_output: Any) -> Any:
    return lax.reduce_sum(grad_output, [0, 2, 3])


GUARDS = {aten.addmm.default: addmm_supported,
          aten.max_pool2d_with_indices.default: pool_supported,
          aten.max_pool2d_with_indices_backward.default: pool_supported,
          aten.convolution.default: conv_supported,
          aten.convolution_backward.default: conv_supported}
