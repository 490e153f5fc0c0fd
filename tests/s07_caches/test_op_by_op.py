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


def test_params_equal_by_value_share_an_entry_as_in_jax():
    """(1, 23.0) == (1, 23): the float rep finds the int rep's executable and is never checked;
    a float rep no call made before reaches the shape rule, which refuses it (reps no other test
    uses, since the cache lives as long as the process)."""
    m = np.ones((2, 3), np.float32)
    with s07.op_by_op():
        assert s02.lax.tile(m, (1, 23)).shape == s02.lax.tile(m, (1, 23.0)).shape == (2, 69)
        with pytest.raises(TypeError) as ours:
            s02.lax.tile(m, (1, 29.0))
    assert jax.lax.tile(m, (1, 23)).shape == jax.lax.tile(m, (1, 23.0)).shape == (2, 69)
    with pytest.raises(TypeError) as theirs:
        jax.lax.tile(m, (1, 29.0))
    assert str(ours.value) == str(theirs.value) == (
        "Shapes must be 1D sequences of concrete values of integer type, got "
        "(np.float64(2.0), np.float64(87.0)).")


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


def _custom_functions(lib, lax):
    """A custom_jvp and a custom_vjp function built with `lib` (ours or JAX's)."""
    @lib.custom_jvp
    def softplus(x):
        return lax.log1p(lax.exp(x))

    softplus.defjvp(lambda primals, tangents: (
        softplus(primals[0]), tangents[0] / (1.0 + lax.exp(-primals[0]))))

    @lib.custom_vjp
    def clip_gradient(x):
        return lax.sin(x)

    clip_gradient.defvjp(lambda x: (lax.sin(x), lax.cos(x)),
                         lambda cos_x, g: (lax.clamp(-0.5, g * cos_x, 0.5),))
    return softplus, clip_gradient


def test_every_trace_of_this_stage_has_a_rule_for_custom_jvp_and_custom_vjp_calls():
    # stage 4 dispatches custom calls through tables keyed by exact trace type: a trace type
    # with no entry raises. The trace types are found, not listed.
    from stages.s04_autodiff import custom_calls

    traces = {v for mod in vars(s07).values() if isinstance(mod, type(s07))
              for v in vars(mod).values()
              if isinstance(v, type) and issubclass(v, s02.core.Trace)
              and v.__module__.startswith("stages.s07_caches")}
    assert traces == {s07.dispatch.DispatchTrace}
    for table in (custom_calls.custom_jvp_call_rules, custom_calls.custom_vjp_call_rules):
        for trace in traces:  # each runs the body eagerly, as the eval trace does
            assert table[trace] is table[s02.core.EvalTrace]


@pytest.mark.parametrize("which", ["custom_jvp", "custom_vjp"])
def test_custom_derivative_functions_run_op_by_op_and_differentiate_by_their_rules(
        which, counts):
    ours = dict(zip(["custom_jvp", "custom_vjp"], _custom_functions(s04, s02.lax),
                    strict=True))[which]
    theirs = dict(zip(["custom_jvp", "custom_vjp"], _custom_functions(jax, jax.lax),
                      strict=True))[which]
    x = np.linspace(-2, 2, 5).astype(np.float32)
    c = counts()
    with s07.op_by_op():
        value = ours(x)
        grads = s04.grad(lambda x: jnp.sum(ours(x) * 3.0))(x)
    assert c.delta()["primitive"][1] > 0  # the body's primitives were dispatched one by one
    np.testing.assert_allclose(value, theirs(x), rtol=1e-6)
    np.testing.assert_allclose(grads, jax.grad(lambda x: jjnp.sum(theirs(x) * 3.0))(x),
                               rtol=1e-6)
