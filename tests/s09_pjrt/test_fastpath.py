"""The fast path (fastpath.py): jit's cache hit in one function. It serves a second call of
device arrays without the layers, finds the very key the layers stored, counts and stamps what
they would, and hands every other call to the layers, which give the same answers."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stages.s07_caches as s07
import stages.s09_pjrt as s09
from stages.s02_tracing import config, make_jaxpr
from stages.s02_tracing import numpy as jnp
from stages.s04_autodiff import grad
from stages.s05_vmap import vmap
from stages.s07_caches import api_util
from stages.s07_caches.util import MISSING
from stages.s09_pjrt.backend import PjRtExecutable
from stages.s09_pjrt.fastpath import pjit_fastpath

from .conftest import Delta, four_cpu_devices

X = np.linspace(-1.0, 1.0, 8, dtype=np.float32)


def _tiny(ns):
    return lambda x: ns.sin(x) * 2.0 + 1.0


@pytest.fixture
def layers(monkeypatch):
    """How many calls reached the layers' PjRtExecutable.call (the fast path never does)."""
    calls = []
    real = PjRtExecutable.call

    def spy(self, *args):
        calls.append(args)
        return real(self, *args)

    monkeypatch.setattr(PjRtExecutable, "call", spy)
    return calls


def test_use_pjrt_installs_the_fast_path_and_takes_it_back():
    assert api_util.fastpath is pjit_fastpath  # this module runs under use_pjrt()
    with s09.use_pjrt(eager_ops=False):
        assert api_util.fastpath is pjit_fastpath
    assert api_util.fastpath is pjit_fastpath  # the outer one's, still
    previous = api_util.set_fastpath(None)
    try:
        with s09.use_pjrt(eager_ops=False):
            assert api_util.fastpath is pjit_fastpath
        assert api_util.fastpath is None
    finally:
        api_util.set_fastpath(previous)


def test_a_second_call_is_served_without_the_layers_and_agrees_with_jax(layers):
    f, x = s07.jit(_tiny(jnp)), s09.device_put(X)
    first = f(x)
    assert len(layers) == 1  # the miss: traced, lowered, compiled and run through the layers
    delta = Delta()
    second = f(x)
    assert len(layers) == 1  # the hit: the fast path alone
    assert type(second) is s09.ArrayImpl and not second.committed
    expected = np.asarray(jax.jit(_tiny(jjnp))(X))
    np.testing.assert_array_equal(np.asarray(second), expected)
    np.testing.assert_array_equal(np.asarray(first), expected)
    # the bookkeeping is the layers': one execute timed, one handle made, one signature hit
    assert (delta.samples("ExecuteTime"), delta.count("CreateDataHandles")) == (1, 1)
    info = f.cache_info()
    assert (info["signature"].hits, info["signature"].misses) == (1, 1)
    assert (info["trace"].hits, info["trace"].misses) == (0, 1)


def test_the_fast_path_finds_the_key_the_layers_stored():
    f, x = s07.jit(_tiny(jnp)), s09.device_put(X)
    assert pjit_fastpath((x,), f._jit_info, f._signatures, f._stats) is MISSING  # none yet
    f(x)
    out = pjit_fastpath((x,), f._jit_info, f._signatures, f._stats)
    assert out is not MISSING  # the key it builds is the one `_signature` built
    np.testing.assert_array_equal(np.asarray(out), np.asarray(f(x)))
    other = s09.device_put(X.astype(np.int32))  # another signature: not found
    assert pjit_fastpath((other,), f._jit_info, f._signatures, f._stats) is MISSING


def test_outputs_keep_their_tree_and_unused_arguments_are_not_passed(layers):
    def f(x, unused, y):
        return {"b": x * y, "a": (x + y, y)}

    jitted = s07.jit(f)
    args = [s09.device_put(X), s09.device_put(X + 5), s09.device_put(X * 3)]
    jitted(*args)
    out = jitted(*args)
    assert len(layers) == 1
    expected = jax.jit(f)(*(np.asarray(a) for a in args))
    assert type(out) is dict and list(out) == list(expected) == ["a", "b"]  # sorted, as JAX
    assert type(out["a"]) is tuple
    for ours, theirs in zip(jax.tree_util.tree_leaves(out), jax.tree_util.tree_leaves(expected),
                            strict=True):
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


@pytest.mark.parametrize("call", [
    "keyword", "static", "numpy", "scalar", "tuple", "float64 numpy",
])
def test_other_calls_take_the_layers_and_agree_with_jax(layers, call):
    x = s09.device_put(X)

    def f(a, b=2.0):
        return a * b if not isinstance(a, tuple) else a[0] * a[1]

    static = call == "static"
    ours = s07.jit(f, static_argnums=(1,) if static else None)
    theirs = jax.jit(f, static_argnums=(1,) if static else None)
    args, kwargs, jax_args = {
        "keyword": ((x,), {"b": x}, (X,)),
        "static": ((x, 3.0), {}, (X, 3.0)),
        "numpy": ((X, x), {}, (X, X)),
        "scalar": ((x, 3.0), {}, (X, 3.0)),
        "tuple": (((x, x),), {}, ((X, X),)),
        "float64 numpy": ((X.astype(np.float64), x), {}, (X.astype(np.float64), X)),
    }[call]
    jax_kwargs = {"b": X} if kwargs else {}
    for _ in range(2):
        out = ours(*args, **kwargs)
    assert len(layers) == 2  # the second call is a hit too, served by the layers
    np.testing.assert_array_equal(np.asarray(out),
                                  np.asarray(theirs(*jax_args, **jax_kwargs)))
    assert ours.cache_info()["signature"].hits == 1


def test_an_argument_committed_to_another_device_takes_the_layers(layers):
    with four_cpu_devices():
        f, free = s07.jit(lambda p, q: p * q), s09.device_put(X)
        on2 = s09.device_put(X, "CPU:2")
        f(free, free)
        assert len(layers) == 1
        out = f(free, on2)  # the signature of the first call, but it runs on CPU:2
        reached = len(layers)
        assert reached > 1  # (the layers' call hands over to CPU:2's executable: twice)
        assert out.device_name == "CPU:2" and out.committed
        np.testing.assert_array_equal(np.asarray(out), X * X)
        assert f(free, free).device_name == "CPU:0"
        assert len(layers) == reached  # the fast path again
        assert f.cache_info()["signature"].hits == 2


@pytest.mark.parametrize("tree", ["tuple", "list", "dict"])
def test_one_output_in_a_tree_keeps_its_tree(layers, tree):
    wrap = {"tuple": lambda v: (v,), "list": lambda v: [v], "dict": lambda v: {"a": v}}[tree]
    jitted, x = s07.jit(lambda v: wrap(v * 2)), s09.device_put(X)
    jitted(x)
    out = jitted(x)
    assert len(layers) == 1
    expected = jax.jit(lambda v: wrap(v * 2))(X)
    assert type(out) is type(expected) and len(out) == 1
    first = out["a"] if tree == "dict" else out[0]
    np.testing.assert_array_equal(np.asarray(first), X * 2)


@pytest.mark.parametrize("fastpath", [pjit_fastpath, None], ids=["fast path", "layers"])
def test_a_cached_call_that_raises_is_counted_as_a_hit(fastpath):
    previous = api_util.set_fastpath(fastpath)
    try:
        f, gone = s07.jit(_tiny(jnp)), s09.device_put(X)
        f(s09.device_put(X))
        gone.delete()
        with pytest.raises(RuntimeError, match=r"^Array has been deleted"):
            f(gone)  # the signature is cached: a hit, then the argument is found deleted
        info = f.cache_info()["signature"]
        assert (info.hits, info.misses) == (1, 1)
    finally:
        api_util.set_fastpath(previous)


def test_a_deleted_or_donated_array_raises_jaxs_error():
    f, x = s07.jit(_tiny(jnp)), s09.device_put(X)
    f(x)
    x.delete()
    with pytest.raises(RuntimeError, match=r"^Array has been deleted with shape=float32\[8\]\.$"):
        f(x)
    donating, y = s07.jit(_tiny(jnp), donate_argnums=0), s09.device_put(X)
    donating(s09.device_put(X))
    donating(y)  # a hit: y's buffer is given to the computation
    assert y.is_deleted()
    with pytest.raises(RuntimeError, match=r"^Array has been deleted with shape=float32\[8\]\.$"):
        f(y)


def test_under_a_transformation_or_disable_jit_there_is_nothing_to_serve(layers):
    traced = []

    def f(x):
        traced.append(1)
        return jnp.sin(x) * x

    jitted, x = s07.jit(f), s09.device_put(X)
    jitted(x)
    jitted(x)
    assert len(traced) == 1 and len(layers) == 1  # the fast path ran the hit
    g = grad(lambda v: jitted(v).sum())(x)
    v = vmap(jitted)(s09.device_put(np.stack([X, X])))
    jax_f = jax.jit(lambda x: jjnp.sin(x) * x)
    np.testing.assert_allclose(np.asarray(g), jax.grad(lambda v: jax_f(v).sum())(X), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(v), jax.vmap(jax_f)(np.stack([X, X])), rtol=1e-6)
    before = len(traced)
    with config.disable_jit(True):
        jitted(x)
    assert len(traced) == before + 1  # run as Python: no cache answered


def test_a_call_inside_a_trace_is_staged_not_run():
    jitted, x = s07.jit(_tiny(jnp)), s09.device_put(X)
    jitted(x)
    text = str(make_jaxpr(lambda: jitted(x))())  # concrete arguments, but under a trace
    assert "jit[" in text and "name=<lambda>" in text, text


def test_an_entry_another_backend_compiled_is_left_to_the_layers():
    f, x = s07.jit(_tiny(jnp)), s09.device_put(X)
    with config.platforms("interpreter"):  # the backend is not in the key (use_pjrt clears)
        f(x)
    out = f(x)  # found by the fast path, but not a PJRT executable: the layers run it
    np.testing.assert_allclose(np.asarray(out), np.asarray(jax.jit(_tiny(jjnp))(X)), rtol=1e-6)
    assert f.cache_info()["signature"].hits == 1


def test_a_float0_result_is_left_to_the_layers(layers):
    def f(x, n):
        return x * n

    ours = s07.jit(grad(f, argnums=(0, 1), allow_int=True))
    x, n = s09.device_put(np.float32(3.0)), s09.device_put(np.int32(4))
    ours(x, n)
    got = ours(x, n)  # a hit, but its int gradient is numpy's float0 zeros, made by the layers
    assert len(layers) == 2
    want = jax.jit(jax.grad(f, argnums=(0, 1), allow_int=True))(np.float32(3.0), np.int32(4))
    assert [np.asarray(g).dtype for g in got] == [np.asarray(w).dtype for w in want]
    assert type(got[1]) is np.ndarray and got[1].dtype == jax.dtypes.float0
    assert float(got[0]) == float(want[0]) == 4.0


def _deleted():
    x = s09.device_put(X)
    x.delete()
    return x


ARGUMENTS = {
    "f32[8] on the device": lambda: s09.device_put(X),
    "a deleted f32[8]": _deleted,
    "f32[3] on the device": lambda: s09.device_put(X[:3]),
    "i32[8] on the device": lambda: s09.device_put(X.astype(np.int32)),
    "weak f32[] on the device": lambda: s09.device_put(2.0),
    "f32[8] from the host": lambda: X,
    "a Python float": lambda: 2.0,
}


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(sorted(ARGUMENTS)), st.sampled_from(sorted(ARGUMENTS))),
                min_size=1, max_size=8))
def test_any_sequence_of_calls_answers_and_counts_as_the_layers_do(calls):
    def run(fastpath):
        def f(a, b):  # a new function each run: no cache of the other run's serves it
            return jnp.sin(a) * jnp.sum(b) + 1

        previous = api_util.set_fastpath(fastpath)
        try:
            jitted, outs = s07.jit(f), []
            for a, b in calls:
                try:
                    out = jitted(ARGUMENTS[a](), ARGUMENTS[b]())
                    outs.append((np.asarray(out).tolist(), out.dtype, out.weak_type))
                except RuntimeError as e:  # a deleted array: counted as a hit all the same
                    outs.append(str(e))
            return outs, jitted.cache_info()
        finally:
            api_util.set_fastpath(previous)

    (fast, fast_info), (layered, layered_info) = run(pjit_fastpath), run(None)
    assert fast_info == layered_info  # every layer's hits, misses and size
    assert fast == layered  # values (bit for bit), dtypes, weak types, error messages
