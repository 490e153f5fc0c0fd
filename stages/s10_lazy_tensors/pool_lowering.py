"""Lowering rules of 2-D max pooling, forward and backward, for windows that tile the input.

torch_xla: torch_xla/csrc/pooling.cpp. A window is a reshape here: the input's rows and columns
split into (windows, kernel) pairs, each window's elements moved to one last axis, reduced by
max; the backward spreads each window's gradient back to the position its index names. An
unbatched (C, H, W) input is pooled as a batch of one, as torch's kernel pools it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from stages.s02_tracing import lax
from stages.s02_tracing.core import get_aval

from .lowering import cast, register

aten = torch.ops.aten


def pool_supported(kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False) -> bool:
    """Our pooling rules cover windows that tile the input: stride = kernel, no padding."""
    k = list(kernel_size) * (2 // len(kernel_size))
    s = list(stride or k) * (2 // len(stride or k))
    pad = [padding] * 2 if isinstance(padding, int) else list(padding) * (2 // len(padding))
    dil = [dilation] * 2 if isinstance(dilation, int) else list(dilation) * (2 // len(dilation))
    return s == k and not any(pad) and all(x == 1 for x in dil) and not ceil_mode


def _batched(x: Any) -> Any:
    """(C, H, W) -> (1, C, H, W); a batched input as it is."""
    shape = get_aval(x).shape
    return x if len(shape) == 4 else lax.reshape(x, (1, *shape))


def _windows(x: Any, kh: int, kw: int) -> Any:
    """(N, C, H, W) -> (N, C, H//kh, W//kw, kh*kw): each window's elements on the last axis;
    rows and columns past the last whole window are in none (torch's floor mode)."""
    n, c, h, w = get_aval(x).shape
    x = lax.slice(x, (0, 0, 0, 0), (n, c, h // kh * kh, w // kw * kw))
    x = lax.reshape(x, (n, c, h // kh, kh, w // kw, kw))
    return lax.reshape(lax.transpose(x, (0, 1, 2, 4, 3, 5)), (n, c, h // kh, w // kw, kh * kw))


@register(aten.max_pool2d_with_indices.default)
def _max_pool(self, kernel_size, *, out, **_):
    kh, kw = list(kernel_size) * (2 // len(kernel_size))
    win = _windows(_batched(self), kh, kw)
    last = len(get_aval(win).shape) - 1
    values = lax.reduce_max(win, [last])
    local = lax.argmax(win, last, np.int32)  # the first maximum, as torch's CPU kernel picks
    shape, width = get_aval(local).shape, get_aval(self).shape[-1]
    rows = lax.add(lax.mul(lax.broadcasted_iota(np.int32, shape, 2), lax.full(shape, kh, np.int32)),
                   lax.div(local, lax.full(shape, kw, np.int32)))
    cols = lax.add(lax.mul(lax.broadcasted_iota(np.int32, shape, 3), lax.full(shape, kw, np.int32)),
                   lax.rem(local, lax.full(shape, kw, np.int32)))
    flat = lax.add(lax.mul(rows, lax.full(shape, width, np.int32)), cols)
    return [lax.reshape(values, out[0].shape), lax.reshape(cast(flat, out[1].dtype), out[1].shape)]


@register(aten.max_pool2d_with_indices_backward.default)
def _max_pool_backward(grad_output, self, kernel_size, indices, *, out, **_):
    kh, kw = list(kernel_size) * (2 // len(kernel_size))
    grad_output, indices = _batched(grad_output), _batched(indices)
    n, c, ho, wo = get_aval(grad_output).shape
    h, w = get_aval(self).shape[-2:]
    shape, dt = (n, c, ho * kh, wo * kw), get_aval(indices).dtype

    def spread(x: Any) -> Any:  # each window's value copied to all its positions
        x = lax.broadcast_in_dim(x, (n, c, ho, kh, wo, kw), (0, 1, 2, 4))
        return lax.reshape(x, shape)
    flat = lax.add(lax.mul(lax.broadcasted_iota(dt, shape, 2), lax.full(shape, w, dt)),
                   lax.broadcasted_iota(dt, shape, 3))
    chosen = lax.eq(spread(indices), flat)
    grad = lax.select_n(chosen, lax.full(shape, 0, out[0].dtype), spread(grad_output))
    grad = lax.pad(grad, np.array(0, out[0].dtype),  # rows and columns in no window: no gradient
                   [(0, 0, 0)] * 2 + [(0, h - shape[2], 0), (0, w - shape[3], 0)])
    return [lax.reshape(grad, out[0].shape)]
