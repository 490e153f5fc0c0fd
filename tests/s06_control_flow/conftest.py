"""Stage 6's test helpers: ours and JAX side by side, and a corpus of control-flow programs.

Each corpus case is written once against a namespace `ns` (ns.cf is `lax` for control flow,
ns.jnp the numpy facade) and built twice: with ours (stage 6 over stage 2) and with JAX. Tests
reach the corpus through the `corpus` fixture.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import jax
import jax.numpy as jjnp
import jax.tree_util as jtu
import numpy as np
import pytest

import stages.s01_pytrees as s01
import stages.s02_tracing as s02
import stages.s04_autodiff as s04
import stages.s05_vmap as s05
import stages.s06_control_flow as s06
from shared.testing import RTOL_REDUCTION

OURS = SimpleNamespace(name="ours", cf=s06, lax=s02.lax, jnp=s02.numpy, jvp=s04.jvp,
                       grad=s04.grad, vjp=s04.vjp, vmap=s05.vmap, make_jaxpr=s02.make_jaxpr,
                       tree_leaves=s01.tree_leaves, linearize=s04.linearize,
                       jacfwd=s05.jacfwd)
THEIRS = SimpleNamespace(name="jax", cf=jax.lax, lax=jax.lax, jnp=jjnp, jvp=jax.jvp,
                         grad=jax.grad, vjp=jax.vjp, vmap=jax.vmap, make_jaxpr=jax.make_jaxpr,
                         tree_leaves=jtu.tree_leaves, linearize=jax.linearize,
                         jacfwd=jax.jacfwd)

F32 = np.float32
W = (np.arange(9, dtype=F32).reshape(3, 3) - 4.0) / 10.0  # a closed-over weight matrix


@dataclass(frozen=True)
class Case:
    """A program written against `ns`; `grad=False` where reverse mode must refuse (while)."""

    name: str
    build: Callable[[SimpleNamespace], Callable[..., Any]]
    args: tuple[np.ndarray, ...]
    grad: bool = True


def _xs(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1.0, 1.0, shape).astype(F32)


def _scan_rnn(ns):
    def f(h0, xs):
        def step(h, x):
            h = ns.jnp.tanh(ns.jnp.dot(W, h) + x)
            return h, h * 2.0
        return ns.cf.scan(step, h0, xs)
    return f


def _scan_pytree(ns):
    def f(x, xs):
        def step(c, inp):
            a, b = inp
            new = {"u": c["u"] * ns.jnp.cos(a) + b, "v": (c["v"][0] + a * b, c["v"][1])}
            return new, {"y": ns.jnp.sin(c["u"]) * a}
        return ns.cf.scan(step, {"u": x, "v": (x * 0.5, x)}, (xs, xs * 2.0))
    return f


def _cond_pytree(ns):
    def f(x, y):
        return ns.cf.cond(ns.jnp.sum(x) > 0.0,
                          lambda a, b: (a * b, ns.jnp.sin(a) + b),
                          lambda a, b: (a - b, b * 3.0), x, y)
    return f


def _switch(ns):
    def f(x):
        index = (x[0] > 0.0).astype(ns.jnp.int32) + (x[1] > 0.0).astype(ns.jnp.int32)
        return ns.cf.switch(index, [ns.jnp.sin, ns.jnp.cos, lambda v: v * v], x)
    return f


def _scan_with_cond(ns):
    def f(c0, xs):
        def step(c, x):
            c = ns.cf.cond(x > 0.0, lambda c: c * x, lambda c: ns.jnp.sin(c) + x, c)
            return c, c
        return ns.cf.scan(step, c0, xs)
    return f


def _while_pytree(ns):
    def f(x):
        def body(s):
            i, v = s
            return i + 1, ns.jnp.sin(v) * 1.5
        return ns.cf.while_loop(lambda s: s[0] < 5, body, (0, x))
    return f


CASES = [
    Case("scan_sum_weak_init", lambda ns: lambda xs: ns.cf.scan(
        lambda c, x: (c + x * c + x, c), 0.0, xs), (_xs(5),)),
    Case("scan_rnn_closure", _scan_rnn, (_xs(3), _xs(4, 3, seed=1))),
    Case("scan_pytree_carry", _scan_pytree, (_xs(2), _xs(4, 2, seed=2))),
    Case("scan_reverse", lambda ns: lambda c, xs: ns.cf.scan(
        lambda c, x: (ns.jnp.sin(c) * x, c * x), c, xs, reverse=True), (_xs(), _xs(4, seed=3))),
    Case("scan_unroll_2", lambda ns: lambda c, xs: ns.cf.scan(
        lambda c, x: (c * 0.9 + x, c), c, xs, unroll=2), (_xs(2), _xs(5, 2, seed=4))),
    Case("scan_no_xs", lambda ns: lambda c: ns.cf.scan(
        lambda c, _: (ns.jnp.cos(c), c), c, None, length=4), (_xs(3),)),
    Case("cond_simple", lambda ns: lambda x: ns.cf.cond(
        ns.jnp.sum(x) > 0.0, ns.jnp.sin, lambda v: v * 3.0, x), (_xs(3, seed=5),)),
    Case("cond_pytree_operands", _cond_pytree, (_xs(2, seed=6), _xs(2, seed=7))),
    Case("cond_closure", lambda ns: lambda x, y: ns.cf.cond(
        x > y, lambda: x * y, lambda: x - y), (_xs(seed=8), _xs(seed=9))),
    Case("switch_three", _switch, (_xs(2, seed=10),)),
    Case("scan_with_cond", _scan_with_cond, (_xs(seed=11), _xs(4, seed=12))),
    Case("while_doubling", lambda ns: lambda x: ns.cf.while_loop(
        lambda c: c < 10.0, lambda c: c * 2.0, x), (np.array(1.3, F32),), grad=False),
    Case("while_pytree", _while_pytree, (_xs(3, seed=13),), grad=False),
    Case("fori_static", lambda ns: lambda x: ns.cf.fori_loop(
        0, 4, lambda i, c: c * x + i, x), (_xs(2, seed=14),)),
    Case("map_sin", lambda ns: lambda xs: ns.cf.map(
        lambda x: ns.jnp.sin(x) * x, xs), (_xs(4, 2, seed=15),)),
]


@pytest.fixture(scope="session")
def ours() -> SimpleNamespace:
    return OURS


@pytest.fixture(scope="session")
def theirs() -> SimpleNamespace:
    return THEIRS


@pytest.fixture(scope="session")
def corpus() -> list[Case]:
    return CASES


def assert_close(actual: Any, expected: Any, rtol: float = RTOL_REDUCTION,
                 atol: float = 1e-5) -> None:
    """Same pytree structure, shapes and dtypes; values within rtol/atol."""
    actual_leaves, actual_tree = jtu.tree_flatten(actual)
    expected_leaves, expected_tree = jtu.tree_flatten(expected)
    assert actual_tree == expected_tree, (actual_tree, expected_tree)
    for a, e in zip(actual_leaves, expected_leaves, strict=True):
        assert np.shape(a) == np.shape(e), (np.shape(a), np.shape(e))
        assert np.asarray(a).dtype == np.asarray(e).dtype, (np.asarray(a).dtype, e.dtype)
        if np.asarray(a).dtype.kind == "V":  # float0: the tangent of an integer holds nothing
            continue
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=rtol, atol=atol)


@pytest.fixture(scope="session")
def close():
    return assert_close


def scalarize(ns: SimpleNamespace, fun: Callable) -> Callable:
    """`fun` with its outputs summed into one scalar (for grad)."""
    def g(*args: Any) -> Any:
        return sum(ns.jnp.sum(leaf) for leaf in ns.tree_leaves(fun(*args)))
    return g


@pytest.fixture(scope="session")
def helpers() -> SimpleNamespace:
    return SimpleNamespace(scalarize=scalarize, xs=_xs)
