"""LSTM and GRU on the device: torch calls the fused cells there (no CPU kernel to fall back
to), ours does their gate arithmetic; values and every gradient equal eager CPU torch's."""

from __future__ import annotations

import pytest
import torch

from stages.s10_lazy_tensors import metrics, torch_xla

X, H, C = (torch.randn(3, 4, generator=torch.Generator().manual_seed(1)),
           torch.randn(3, 5, generator=torch.Generator().manual_seed(2)),
           torch.randn(3, 5, generator=torch.Generator().manual_seed(3)))
SEQ = torch.randn(6, 2, 4, generator=torch.Generator().manual_seed(4))

CASES = {
    "lstm_cell": (lambda: torch.nn.LSTMCell(4, 5), lambda m, x, h, c: m(x, (h, c))),
    "lstm_cell_no_state": (lambda: torch.nn.LSTMCell(4, 5), lambda m, x, h, c: m(x)),
    "lstm_cell_no_bias": (lambda: torch.nn.LSTMCell(4, 5, bias=False),
                          lambda m, x, h, c: m(x, (h, c))),
    "gru_cell": (lambda: torch.nn.GRUCell(4, 5), lambda m, x, h, c: m(x, h)),
    "gru_cell_no_bias": (lambda: torch.nn.GRUCell(4, 5, bias=False), lambda m, x, h, c: m(x, h)),
    "lstm_two_layers": (lambda: torch.nn.LSTM(4, 5, num_layers=2), lambda m, x, h, c: m(SEQ_ON[0])),
    "gru_batch_first": (lambda: torch.nn.GRU(4, 5, batch_first=True),
                        lambda m, x, h, c: m(SEQ_ON[0])),
}
SEQ_ON: list[torch.Tensor] = []  # the sequence on the device being run


def _run(name: str, device) -> list[torch.Tensor]:
    make, call = CASES[name]
    torch.manual_seed(0)
    module = make().to(device)
    inputs = [t.clone().to(device).requires_grad_(True) for t in (X, H, C, SEQ)]
    SEQ_ON[:] = [inputs[3]]
    out = call(module, *inputs[:3])
    flat = [t for o in (out if isinstance(out, tuple) else (out,))
            for t in (o if isinstance(o, tuple) else (o,))]
    # every output weighted differently, so that each one's gradient is checked
    sum((t * torch.linspace(-1, 1, t.numel(), device=t.device).reshape(t.shape)).sum()
        for t in flat).backward()
    grads = [t.grad for t in inputs if t.grad is not None] + [p.grad for p in module.parameters()]
    return [t.detach().cpu() for t in flat + grads]


@pytest.mark.parametrize("name", list(CASES))
def test_lstm_and_gru_on_the_device_equal_eager_torch_values_and_gradients(name):
    eager, ours = _run(name, "cpu"), _run(name, torch_xla.device())
    assert len(eager) == len(ours)
    for e, o in zip(eager, ours, strict=True):
        torch.testing.assert_close(o, e, rtol=1e-5, atol=1e-5)
    # the fused cells are ours, not CPU fallbacks (they have no CPU kernel)
    assert not [k for k in metrics.counter_names() if "thnn_fused" in k]
