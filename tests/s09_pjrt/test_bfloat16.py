"""bfloat16 through PJRT: buffers transferred to and from the device keep their bits, and stage
7's jit runs a bfloat16 program (stage 8's module, compiled by XLA) equal to jax.jit bit for bit:
both compile the same StableHLO with the same compiler."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import ml_dtypes
import numpy as np

import stages.s07_caches as s07
import stages.s09_pjrt as s09
from stages.s02_tracing import numpy as jnp
from stages.s04_autodiff import grad

BF16 = np.dtype(ml_dtypes.bfloat16)
_rng = np.random.default_rng(3)
W = _rng.standard_normal((16, 8)).astype(np.float32).astype(BF16)
X = _rng.standard_normal((4, 16)).astype(np.float32).astype(BF16)


def _bits(x) -> bytes:
    return np.asarray(x).tobytes()


def layer(ns):
    def f(w, x):
        return ns.tanh(ns.matmul(x, w) * 0.5 + 1.0).sum(axis=1)
    return f


def test_bfloat16_buffers_round_trip_through_the_device_bit_for_bit():
    edge = np.array([1e-40, 3.4e38, np.nan, -np.inf, -0.0, 0.1, 1.0 + 2.0**-7],
                    np.float32).astype(BF16)
    x = s09.device_put(edge)
    assert isinstance(x, s09.ArrayImpl) and x.dtype == BF16
    assert np.asarray(x).dtype == BF16 and _bits(x) == _bits(edge)
    assert repr(x) == repr(jax.device_put(edge))


def test_a_bfloat16_jit_through_pjrt_equals_jax_jit_bit_for_bit():
    ours, theirs = s07.jit(layer(jnp))(W, X), jax.jit(layer(jjnp))(W, X)
    assert isinstance(ours, s09.ArrayImpl) and ours.dtype == theirs.dtype == BF16
    assert _bits(ours) == _bits(theirs)
    lowered = s07.jit(layer(jnp)).lower(W, X).as_text()
    assert lowered == jax.jit(layer(jjnp)).lower(W, X).as_text()
    assert "tensor<4x16xbf16>" in lowered
    again = s07.jit(lambda a, b: a * b + 1.0)(ours, ours)  # device buffers passed back in
    assert _bits(again) == _bits(jax.jit(lambda a, b: a * b + 1.0)(theirs, theirs))


def test_grad_of_a_bfloat16_layer_under_jit_equals_jax():
    loss = lambda ns: lambda w, x: layer(ns)(w, x).sum()  # noqa: E731
    ours = s07.jit(grad(loss(jnp)))(W, X)
    theirs = jax.jit(jax.grad(loss(jjnp)))(W, X)
    assert ours.dtype == theirs.dtype == BF16
    assert _bits(ours) == _bits(theirs)
