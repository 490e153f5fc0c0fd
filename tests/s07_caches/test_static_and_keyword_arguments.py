"""Static and keyword arguments against `jax.jit`: which leaves are traced and what they are
called, a static value mutated after a call, and a `ShapeDtypeStruct` passed to a call.

Both libraries jit the same Python function object, so messages that name it (its repr, its
source line) agree word for word.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import stages.s07_caches as s07
from stages.s07_caches.api_util import Static

pytestmark = pytest.mark.oracle

JITS = [s07.jit, jax.jit]
ONE = np.float32(1)
TWO = np.float32(2)


def _kw_static(x, *, n, y):
    return x + y


def _pos_static(x, n, y):
    return x + y


@pytest.mark.parametrize("fun, args, kwargs, statics", [
    (_kw_static, (ONE,), {"n": 3, "y": TWO}, {"static_argnames": "n"}),
    (_pos_static, (ONE,), {"n": 3, "y": TWO}, {"static_argnums": 1}),
    (_pos_static, (ONE, 3, TWO), {}, {"static_argnames": "n"}),
], ids=["keyword-only static", "static by number, passed by keyword", "static by name"])
def test_a_static_argument_is_not_among_the_traced_arguments_names(fun, args, kwargs, statics):
    names = [jit(fun, **statics).trace(*args, **kwargs).jaxpr.jaxpr.debug_info.arg_names
             for jit in JITS]
    assert names[0] == names[1] == ("x", "y")


def _branch_on_y(x, *, n, y):
    if y > n:
        return x
    return -x


def test_a_tracer_error_names_the_argument_after_a_static_keyword():
    firsts = []
    for jit in JITS:
        with pytest.raises(Exception) as err:
            jit(_branch_on_y, static_argnames="n")(ONE, n=1, y=TWO)
        # the first two lines: what was converted, and the argument it depends on
        firsts.append((type(err.value).__name__, str(err.value).splitlines()[:2]))
    assert firsts[0] == firsts[1]
    assert firsts[0][1][1].endswith("because it depends on the value of the argument y.")


@pytest.mark.parametrize("y, error", [("s", TypeError), (2**40, OverflowError)],
                         ids=["not an array", "int beyond int32"])
def test_a_bad_argument_after_a_static_keyword_is_named_by_its_path(y, error):
    texts = []
    for jit in JITS:
        with pytest.raises(error) as err:
            jit(_kw_static, static_argnames="n")(ONE, n=(1, 2), y=y)
        texts.append(str(err.value))
    assert texts[0] == texts[1]
    assert "path y" in texts[0] or "path is y." in texts[0]


def call(g, *args, **kwargs):  # the one call site both libraries' explanations report
    return g(*args, **kwargs)


@pytest.mark.usefixtures("explaining")
def test_a_miss_after_a_static_keyword_is_explained_as_jax_explains_it(warnings_of):
    ours_static = f"{Static.__module__}.{Static.__qualname__}"
    messages = []
    for jit, logger in [(s07.jit, "stages.s07_caches.explain"),
                        (jax.jit, "jax._src.interpreters.partial_eval")]:
        g = jit(_kw_static, static_argnames="n")
        messages.append([warnings_of(logger, lambda g=g, n=n, y=y: call(g, ONE, n=n, y=y))
                         for n, y in [(1, TWO), (2, TWO), (2, np.ones(2, np.float32))]])
    ours = [[m.replace(ours_static, "jax._src.tree_util.Static") for m in ms]
            for ms in messages[0]]
    assert ours == messages[1]
    assert "[1]['n']" in ours[1][0]


class Mutable:
    """A static value that hashes and compares by a field the caller may change."""

    def __init__(self, v):
        self.v = v

    def __hash__(self):
        return hash(self.v)

    def __eq__(self, other):
        return isinstance(other, Mutable) and self.v == other.v


def test_a_static_value_mutated_after_a_call_leaves_the_caches_working():
    seen = []
    for jit in JITS:
        traces = []

        def f(x, m, traces=traces):
            traces.append(m.v)
            return x * m.v

        g = jit(f, static_argnums=1)
        m = Mutable(2)
        first = float(g(ONE, m))
        m.v = 7  # the key stored for the first call now hashes otherwise
        later = [float(g(ONE, Mutable(5))), float(g(ONE, Mutable(5)))]
        seen.append((first, later, traces, g._cache_size()))
    assert seen[0] == seen[1] == (2.0, [5.0, 5.0], [2, 5], 2)


def test_calling_with_a_shape_dtype_struct_gets_jaxs_error():
    texts, traces = [], []
    for jit, sds in [(s07.jit, s07.ShapeDtypeStruct), (jax.jit, jax.ShapeDtypeStruct)]:
        def f(x, y):
            traces.append(1)
            return x + y

        with pytest.raises(TypeError) as err:
            jit(f)(np.ones(2, np.float32), y=sds((2,), np.float32))
        texts.append(str(err.value).replace(str(sds), "<ShapeDtypeStruct>"))
    assert texts[0] == texts[1] == ("Argument 'y' of shape float32[2] of type "
                                    "<ShapeDtypeStruct> is not a valid JAX type.")
    assert traces == [1, 1]  # both trace first, then refuse to run


class ComparesToAnArray:
    """A static value whose `==` answers an array, which has no single truth value."""

    def __hash__(self):
        return 1

    def __eq__(self, other):
        return np.array([True, False])


class CannotCompare:
    def __hash__(self):
        return 1

    def __eq__(self, other):
        raise RuntimeError("cannot compare")


def _static_comparison_error(jit, make):
    g = jit(lambda x, s: x, static_argnums=1)
    g(ONE, make())
    with pytest.raises(ValueError) as err:
        g(ONE, make())  # a new object equal by hash: the caches compare the two with `==`
    return str(err.value)


def test_a_static_value_whose_comparison_has_no_truth_value_gets_jaxs_error():
    texts = [_static_comparison_error(jit, ComparesToAnArray) for jit in JITS]
    assert texts[0] == texts[1]
    assert texts[0].endswith("The error was:\nValueError: The truth value of an array with more "
                             "than one element is ambiguous. Use a.any() or a.all()")


def test_a_static_comparison_that_raises_shows_the_user_frames_jax_shows():
    ours, theirs = (_static_comparison_error(jit, CannotCompare) for jit in JITS)
    # JAX also lists its caller's frames above the failing `__eq__`; both end alike, and ours
    # shows no frame of the stage itself
    assert ours.splitlines()[-2:] == theirs.splitlines()[-2:]
    assert ours.splitlines()[-2].endswith(", in __eq__")
    assert "stages/s07_caches" not in ours


@pytest.mark.parametrize("jit", JITS, ids=["ours", "jax"])
def test_static_values_equal_by_value_but_not_by_type_trace_apart(jit):
    """2 == 2.0 == np.int32(2), and True == 1: each type is its own trace, as in JAX, and each
    result keeps its own dtype (a key that compared only values would return the first)."""
    traced = []

    def f(x, n):
        traced.append(n)
        return x * n

    g = jit(f, static_argnums=1)
    dtypes = [np.asarray(g(np.int32(3), n)).dtype for n in (2, 2.0, True, 1, 2)]
    assert [type(n) for n in traced] == [int, float, bool, int]
    assert dtypes == [np.int32, np.float32, np.int32, np.int32, np.int32]
