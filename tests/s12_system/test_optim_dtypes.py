"""optim against optax 0.2.8 where dtypes and arguments matter: Adam's moments keep the dtypes
optax stores them in (mu in `mu_dtype`, nu in its initial dtype) while momentum's trace promotes,
the aliases take optax's positional arguments, a zero weight decay adds nothing, and no learning
rate is no scaling.

Both sides run jitted through XLA on the CPU; values to float32's rtol 1e-6 (as test_optim.py),
dtypes and shapes exactly.
"""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import optax
import pytest

import stages.s01_pytrees as s01
from stages.s07_caches import jit
from stages.s12_system import optim


def _params(dtype):
    return {"w": np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3).astype(dtype),
            "b": np.float32([0.5, -0.25]).astype(dtype)}


def _grads(k, dtype=np.float32):
    rng = np.random.default_rng(10 + k)
    return s01.tree_map(lambda p: rng.standard_normal(np.shape(p)).astype(dtype),
                        _params(np.float32))


def _same(ours, theirs, rtol=1e-6):
    a, b = s01.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        x, y = np.asarray(x), np.asarray(y)
        assert (x.dtype, x.shape) == (y.dtype, y.shape)
        np.testing.assert_allclose(x.astype(np.float32), y.astype(np.float32),
                                   rtol=rtol, atol=1e-7)


def _run_both(ours, theirs, params, grad_dtype=np.float32, steps=3, rtol=1e-6):
    state, tstate = ours.init(params), theirs.init(params)
    _same(state, tstate)
    ours_update, theirs_update = jit(ours.update), jax.jit(theirs.update)
    for k in range(steps):
        u, state = ours_update(_grads(k, grad_dtype), state, params)
        v, tstate = theirs_update(_grads(k, grad_dtype), tstate, params)
        _same(u, v, rtol)
        _same(state, tstate, rtol)


ADAMS = {
    "adam": (lambda **kw: optim.adam(1e-2, **kw), lambda **kw: optax.adam(1e-2, **kw)),
    "nadam": (lambda **kw: optim.adam(1e-2, nesterov=True, **kw),
              lambda **kw: optax.adam(1e-2, nesterov=True, **kw)),
    "adamw": (lambda **kw: optim.adamw(1e-2, weight_decay=0.1, **kw),
              lambda **kw: optax.adamw(1e-2, weight_decay=0.1, **kw)),
}


HALF = {"float16": (np.float16, 1e-3), "bfloat16": (jjnp.bfloat16, 1e-2)}  # (dtype, its rtol)


@pytest.mark.parametrize("half", HALF)
@pytest.mark.parametrize("name", ADAMS)
def test_float32_gradients_leave_a_half_second_moment_half_as_optax(name, half):
    """nu is cast back to the dtype it was kept in, so the state's dtypes never change (a
    training loop's carry stays the same type); float16 or bfloat16 params, float32 gradients."""
    ours, theirs = ADAMS[name]
    dtype, rtol = HALF[half]
    _run_both(ours(), theirs(), _params(dtype), rtol=rtol)


@pytest.mark.parametrize("half", HALF)
@pytest.mark.parametrize("name", ADAMS)
def test_mu_dtype_keeps_the_first_moment_in_that_dtype_as_optax(name, half):
    ours, theirs = ADAMS[name]
    dtype, rtol = HALF[half]
    _run_both(ours(mu_dtype=dtype), theirs(mu_dtype=dtype), _params(np.float32), rtol=rtol)


@pytest.mark.parametrize("nesterov", [False, True], ids=["momentum", "nesterov"])
@pytest.mark.parametrize("params_dtype, grad_dtype", [(jjnp.bfloat16, np.float32),
                                                      (np.float32, jjnp.bfloat16)],
                         ids=["bfloat16-params", "bfloat16-grads"])
def test_momentum_promotes_its_trace_as_optax_and_never_casts_it_back(params_dtype, grad_dtype,
                                                                      nesterov):
    """optax's trace has no accumulator dtype by default: g + decay * t promotes (a float32
    gradient makes a bfloat16 trace float32), unlike Adam's moments, which are cast back."""
    _run_both(optim.sgd(0.1, 0.9, nesterov=nesterov), optax.sgd(0.1, 0.9, nesterov=nesterov),
              _params(params_dtype), grad_dtype=grad_dtype, rtol=1e-2)


def test_the_aliases_take_optaxs_positional_arguments():
    """adamw(lr, b1, b2, eps, eps_root, mu_dtype, weight_decay, mask): the 7th is the decay."""
    args = (1e-2, 0.8, 0.99, 1e-6, 0.0, None, 0.5, {"w": True, "b": False})
    _run_both(optim.adamw(*args), optax.adamw(*args), _params(np.float32))
    args = (0.9, 0.99, 1e-6, 0.0, np.float16)
    _run_both(optim.scale_by_adam(*args), optax.scale_by_adam(*args), _params(np.float32),
              rtol=1e-3)


def test_a_zero_weight_decay_adds_nothing_as_optax():
    """0 * inf is nan: optax skips a constant zero decay, so an infinite param stays out of it."""
    params = {"w": np.float32([np.inf, 1.0, -np.inf]), "b": np.float32([2.0, 3.0])}
    grads = {"w": np.float32([1.0, 2.0, 3.0]), "b": np.float32([0.5, 0.5])}
    for ours, theirs in [(optim.add_decayed_weights(0.0), optax.add_decayed_weights(0.0)),
                         (optim.adamw(0.1, weight_decay=0.0), optax.adamw(0.1, weight_decay=0.0))]:
        u, _ = ours.update(grads, ours.init(params), params)
        v, _ = theirs.update(grads, theirs.init(params), params)
        _same(u, v)


def test_no_learning_rate_is_no_scaling_as_optax():
    ours, theirs = optim.scale_by_learning_rate(None), optax.scale_by_learning_rate(None)
    state, tstate = ours.init(_params(np.float32)), theirs.init(_params(np.float32))
    assert repr(state) == repr(tstate) == "EmptyState()"
    u, _ = ours.update(_grads(0), state)
    v, _ = theirs.update(_grads(0), tstate)
    _same(u, v)
