"""The sixth cache: inside `op_by_op()` each eager primitive is a tiny jit, cached per
(primitive, params), as JAX's `apply_primitive` makes every eager op; outside it, stage 2's eager
path is untouched by importing this stage."""

from __future__ import annotations

import logging
import threading

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
import stages.s07_caches as s07
from stages.s02_tracing import config

jnp = s02.numpy
X = np.linspace(-1, 1, 3).astype(np.float32)


def test_without_op_by_op_eager_ops_never_ask_a_cache(counts):
    c = counts()
    jnp.multiply(jnp.sin(X), 2.0)
    s04.grad(lambda x: jnp.sum(jnp.sin(x)))(X)
    assert c.delta() == {}


def test_each_primitive_and_params_compile_once(counts):
    c = counts()
    x = jnp.asarray(X)  # a numpy X would be converted to an Array first: one more tiny jit
    with s07.op_by_op():
        first = jnp.multiply(jnp.cos(x), 3.0)
    # cos, the conversion of the Python scalar 3.0 to float32, mul: three tiny jits made
    assert c.delta()["primitive"] == (0, 3)
    c = counts()
    x = jnp.asarray(X + 1.0)
    with s07.op_by_op():
        again = jnp.multiply(jnp.cos(x), 3.0)
    assert c.delta() == {"primitive": (3, 0), "signature": (3, 0)}  # all answered at layer 1
    np.testing.assert_allclose(first, jjnp.cos(X) * 3.0, rtol=1e-6)
    np.testing.assert_allclose(again, jjnp.cos(X + 1.0) * 3.0, rtol=1e-6)


def test_an_eager_op_logs_its_compile_in_jaxs_words(caplog):
    with s07.op_by_op(), config.log_compiles(True), caplog.at_level(logging.WARNING):
        jnp.tanh(np.ones(5, np.float32))
    ours = [r.getMessage() for r in caplog.records if r.name.startswith("stages.s07_caches")]
    caplog.clear()
    with jax.log_compiles(True), caplog.at_level(logging.WARNING):
        jjnp.tanh(np.ones(5, np.float32) * 1.5)  # a new shape for JAX: it compiles too
    theirs = [r.getMessage() for r in caplog.records if r.name.startswith("jax")]
    want = "Compiling jit(tanh) with global shapes and types (ShapedArray(float32[5]),). " \
           "Argument mapping: (UnspecifiedValue,)."
    assert want in ours and want in theirs


def test_transformations_at_the_bottom_dispatch_their_eager_work_too(counts):
    c = counts()
    with s07.op_by_op():
        g = s04.grad(lambda x: jnp.sum(jnp.sin(x) * x))(X)
    assert c.delta()["primitive"][1] > 0
    np.testing.assert_allclose(g, jax.grad(lambda x: jjnp.sum(jjnp.sin(x) * x))(X), rtol=1e-5)


def test_op_by_op_is_per_thread():
    seen = {}

    def other():
        before = s07.dispatch._primitive_cache.misses
        jnp.exp(np.ones(7, np.float32))
        seen["asked"] = s07.dispatch._primitive_cache.misses - before

    with s07.op_by_op():
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert seen["asked"] == 0


@pytest.mark.parametrize("inside", [False, True])
def test_a_jitted_function_runs_its_program_without_dispatching_each_op(inside, counts):
    g = s07.jit(lambda x: jnp.sin(x) * 2.0 + 1.0)
    g(X)
    c = counts()
    if inside:
        with s07.op_by_op():
            g(X)
    else:
        g(X)
    assert c.delta() == {"signature": (1, 0)}
