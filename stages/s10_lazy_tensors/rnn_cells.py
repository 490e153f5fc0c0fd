"""LSTM and GRU cells: the fused kernels torch calls on our device, as the gate arithmetic.

PyTorch: aten/src/ATen/native/RNN.cpp (`lstm_cell`, `gru_cell`) takes the fused path
(`_thnn_fused_lstm_cell`, `_thnn_fused_gru_cell`, kernels in native/cuda/RNN.cu) for a tensor on
CUDA, XPU or a PrivateUse1 device, ours, and the unfused gate arithmetic elsewhere (torch_xla's
`xla` device has a key of its own and takes the unfused path). The fused ops have no CPU kernel,
so they cannot fall back: here each is the arithmetic its CUDA kernel does, in torch ops that
become lazy nodes. The workspace a forward returns is what its backward reads: the gates after
their activations (LSTM: i, f, g, o; GRU: r, z, n, then hx and the hidden n-part).
"""

from __future__ import annotations

from typing import Any

import torch

from .aten_xla_type import SPECIAL

aten = torch.ops.aten


def _lstm_cell(input_gates: Any, hidden_gates: Any, cx: Any, input_bias: Any = None,
               hidden_bias: Any = None) -> tuple[Any, Any, Any]:
    gates = input_gates + hidden_gates
    if input_bias is not None:
        gates = gates + input_bias + hidden_bias
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * cx + i * g
    return o * cy.tanh(), cy, torch.cat([i, f, g, o], 1)


def _lstm_cell_backward(grad_hy: Any, grad_cy: Any, cx: Any, cy: Any, workspace: Any,
                        has_bias: bool) -> tuple[Any, Any, Any]:
    i, f, g, o = workspace.chunk(4, 1)
    tanh_cy = cy.tanh()
    grad_hy = torch.zeros_like(cy) if grad_hy is None else grad_hy
    grad_c = grad_hy * o * (1 - tanh_cy * tanh_cy)
    grad_c = grad_c if grad_cy is None else grad_c + grad_cy
    grad_gates = torch.cat([grad_c * g * i * (1 - i), grad_c * cx * f * (1 - f),
                            grad_c * i * (1 - g * g), grad_hy * tanh_cy * o * (1 - o)], 1)
    grad_bias = grad_gates.sum(0) if has_bias else None
    return grad_gates, grad_c * f, grad_bias


def _gru_cell(input_gates: Any, hidden_gates: Any, hx: Any, input_bias: Any = None,
              hidden_bias: Any = None) -> tuple[Any, Any]:
    if input_bias is not None:
        input_gates, hidden_gates = input_gates + input_bias, hidden_gates + hidden_bias
    ir, iz, in_ = input_gates.chunk(3, 1)
    hr, hz, hn = hidden_gates.chunk(3, 1)
    r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
    n = (in_ + r * hn).tanh()
    return n + z * (hx - n), torch.cat([r, z, n, hx, hn], 1)


def _gru_cell_backward(grad_hy: Any, workspace: Any, has_bias: bool) -> tuple[Any, ...]:
    r, z, n, hx, hn = workspace.chunk(5, 1)
    grad_n = grad_hy * (1 - z) * (1 - n * n)
    grad_z = grad_hy * (hx - n) * z * (1 - z)
    grad_r = grad_n * hn * r * (1 - r)
    grad_input = torch.cat([grad_r, grad_z, grad_n], 1)
    grad_hidden = torch.cat([grad_r, grad_z, grad_n * r], 1)
    biases = (grad_input.sum(0), grad_hidden.sum(0)) if has_bias else (None, None)
    return grad_input, grad_hidden, grad_hy * z, *biases


SPECIAL[aten._thnn_fused_lstm_cell.default] = _lstm_cell
SPECIAL[aten._thnn_fused_lstm_cell_backward_impl.default] = _lstm_cell_backward
SPECIAL[aten._thnn_fused_gru_cell.default] = _gru_cell
SPECIAL[aten._thnn_fused_gru_cell_backward.default] = _gru_cell_backward
