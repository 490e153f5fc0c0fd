"""`x / 3` on the lazy device is XLA's division by a broadcast scalar, which XLA's algebraic
simplifier turns into a multiply by the scalar's reciprocal: about a third of the elements come
out one ulp from eager torch's true division. jax.jit compiles the same HLO and gives the same
bits, so this is XLA's arithmetic, not our rule; divided by a whole tensor, the values are
eager torch's."""

from __future__ import annotations

import jax
import numpy as np
import pytest
import torch

from stages.s10_lazy_tensors import torch_xla

pytestmark = pytest.mark.oracle

X = torch.from_numpy(np.random.default_rng(0).standard_normal(4096).astype(np.float32))


def _ulps(a: torch.Tensor, b: torch.Tensor) -> np.ndarray:
    return np.abs(a.numpy().view(np.int32).astype(np.int64) - b.numpy().view(np.int32))


def test_a_number_divides_as_xla_does_a_multiply_by_its_reciprocal():
    lazy = (X.to(torch_xla.device()) / 3).cpu()
    jitted = np.asarray(jax.jit(lambda a, b: a / b)(X.numpy(), np.float32(3)))
    np.testing.assert_array_equal(lazy.numpy(), jitted)  # XLA's bits, from both front ends
    ulps = _ulps(lazy, X / 3)
    assert ulps.max() == 1 and 0.2 < (ulps == 1).mean() < 0.5  # eager divides exactly
    np.testing.assert_array_equal(lazy.numpy(), (X * (1 / torch.tensor(3.0))).numpy())


def test_a_tensor_divisor_gives_eager_torchs_bits():
    y = torch.full_like(X, 3.0)
    lazy = (X.to(torch_xla.device()) / y.to(torch_xla.device())).cpu()
    np.testing.assert_array_equal(lazy.numpy(), (X / y).numpy())
