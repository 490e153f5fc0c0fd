"""jit's options and argument names as JAX has them: `inline=True`, argnames that are not
strings, and keywords collected by `**kw` (named `kw['a']` in errors and cache-miss output)."""

from __future__ import annotations

import inspect

import jax
import numpy as np
import pytest

from .conftest import OURS, THEIRS

pytestmark = pytest.mark.oracle

X = np.ones(3, np.float32)


def _error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value).__name__, str(info.value)


# ------------------------------------------------------------------ static_argnames


def f2(x, y):
    return x


@pytest.mark.parametrize("options", [
    dict(static_argnames=(1,)), dict(static_argnames=("y", 1)), dict(static_argnames=[None]),
    dict(donate_argnames=(1,)),
], ids=["int", "str-and-int", "none", "donate-int"])
def test_argnames_that_are_not_strings_fail_as_in_jax(options):
    ours = _error(lambda: OURS.jit(f2, **options))
    theirs = _error(lambda: THEIRS.jit(f2, **options))
    assert ours == theirs


# ------------------------------------------------------------------ **kw argument names


def kw_sum(x, **kw):
    return x + kw["a"] + kw["b"]["c"]


def test_keywords_collected_by_var_keyword_are_named_like_jax():
    args = (X,)
    kwargs = dict(a=X, b={"c": X})
    names = [lib.jit(kw_sum).trace(*args, **kwargs).jaxpr.jaxpr.debug_info.arg_names
             for lib in (OURS, THEIRS)]
    assert names[0] == names[1] == ("x", "kw['a']", "kw['b']['c']")


def kw_branch(x, *args, y=1, **kw):
    if kw["z"] > 0:
        return x
    return x


def test_a_tracer_error_names_a_var_keyword_argument_like_jax():
    ours = _error(lambda: OURS.jit(kw_branch)(X, X, y=X, z=np.float32(3)))
    theirs = _error(lambda: THEIRS.jit(kw_branch)(X, X, y=X, z=np.float32(3)))
    assert ours == theirs
    assert "the argument kw['z']" in ours[1]


def test_a_non_array_keyword_is_named_like_jax():
    ours = _error(lambda: OURS.jit(kw_sum)(X, a="s", b={"c": 1}))
    theirs = _error(lambda: THEIRS.jit(kw_sum)(X, a="s", b={"c": 1}))
    assert ours == theirs


def test_keywords_without_a_matching_signature_are_kwargs_entries():
    def h(*a, **k):
        return a[0] + k["y"]

    h.__signature__ = inspect.Signature(
        [inspect.Parameter("x", inspect.Parameter.POSITIONAL_OR_KEYWORD)])
    names = [lib.jit(h).trace(X, y=X).jaxpr.jaxpr.debug_info.arg_names for lib in (OURS, THEIRS)]
    assert names[0] == names[1] == ("args[0]", "kwargs['y']")


def call(g, *args, **kwargs):  # one call site for both libraries' explanations
    return g(*args, **kwargs)


@pytest.mark.usefixtures("explaining")
def test_explained_cache_miss_names_a_var_keyword_argument_like_jax(warnings_of):
    def f(x, **kw):
        return x * 2.0, kw["a"]

    go, gj = OURS.jit(f), THEIRS.jit(f)
    got, want = [], []
    for a in (X, np.ones(4, np.float32)):
        got += warnings_of("stages.s07_caches.explain", lambda a=a: call(go, X, a=a))
        want += warnings_of("jax._src.interpreters.partial_eval", lambda a=a: call(gj, X, a=a))
    assert got == want
    assert "* at kw['a'], now f32[4] and before f32[3]" in got[-1]


# ------------------------------------------------------------------ inline=True


def inner(lib):
    return lambda x: lib.jnp.sin(x) * 2.0


def _inline_programs(lib):
    """The printed jaxprs of an inline jit called under jit, make_jaxpr and transformations."""
    fi = lib.jit(inner(lib), inline=True)
    c = np.arange(3.0, dtype=np.float32)
    g = lib.jit(lambda x: x + c, inline=True)  # closes over an array: a constvar outside
    h = lib.jit(lambda x: (x, 1.0, x + 1), inline=True)  # an input and a literal returned
    programs = [
        lib.make_jaxpr(lib.jit(lambda x: fi(x) + fi(x)))(X),
        lib.make_jaxpr(fi)(X),
        lib.make_jaxpr(lambda x: fi(fi(x)))(X),
        lib.make_jaxpr(lib.jit(lambda x: lib.jit(fi)(x)))(X),
        lib.make_jaxpr(lib.jit(fi, inline=False))(X),
        lib.make_jaxpr(lib.jit(lambda x: g(x) * 2))(X),
        lib.make_jaxpr(h)(X),
        lib.make_jaxpr(lib.grad(lambda x: fi(x).sum()))(X),
        lib.make_jaxpr(lib.vmap(fi))(X),
        lib.make_jaxpr(lambda x: lib.jvp(fi, (x,), (x,)))(X),
        lib.make_jaxpr(lib.grad(lambda x: lib.jit(lambda y: fi(y).sum())(x)))(X),
        fi.trace(X).jaxpr,
    ]
    return [str(p) for p in programs]


def test_inline_jit_is_staged_as_its_equations_like_jax():
    ours, theirs = _inline_programs(OURS), _inline_programs(THEIRS)
    for mine, want in zip(ours, theirs, strict=True):
        assert mine == want
    assert "jit[" not in ours[2] and "jit[" in ours[3]


def test_inline_jit_runs_eagerly_and_under_jit():
    fi = OURS.jit(lambda x: x * 2.0 + 1.0, inline=True)
    np.testing.assert_array_equal(np.asarray(fi(X)), np.asarray(jax.jit(
        lambda x: x * 2.0 + 1.0, inline=True)(X)))
    np.testing.assert_array_equal(np.asarray(OURS.jit(lambda x: fi(x) + fi(x))(X)),
                                  np.full(3, 6.0, np.float32))
    decorated = [lib.jit(inline=True)(lambda x: x + 1.0) for lib in (OURS, THEIRS)]
    printed = [str(lib.make_jaxpr(lambda x, d=d: d(x))(X))  # the options kept for the function
               for lib, d in zip((OURS, THEIRS), decorated, strict=True)]
    assert printed[0] == printed[1] and "jit[" not in printed[0]
