"""jit's semantics, walked as the explainer walks them, and its errors, each against JAX.

A list the jitted function appends to plays the part of a `print` inside it: it grows once per
real trace and never on a cache hit. Both libraries jit the same function, so the number of
traces each scenario causes is compared with JAX's, not just asserted.
"""

from __future__ import annotations

import re

import jax
import numpy as np
import pytest

import stages.s07_caches as s07
from shared.testing import RTOL_ELEMENTWISE

pytestmark = pytest.mark.oracle


def traced_counter():
    """A function of (x, n) that records each time it is traced, and that list."""
    traces = []

    def f(x, n):
        traces.append(type(x).__name__)
        return x * n
    return f, traces


SCENARIO = [  # (what changes, args): each retraces or not, in both libraries
    ("first call", (np.ones(3, np.float32), 2)),
    ("new values, same types", (np.full(3, 5.0, np.float32), 2)),
    ("new shape", (np.ones(4, np.float32), 2)),
    ("new dtype", (np.ones(4, np.int32), 2)),
    ("weak type", (1.0, 2)),
    ("strong scalar", (np.float32(1.0), 2)),
    ("pytree structure", ({"a": np.ones(3, np.float32)}, 2)),
    ("static value", (np.ones(3, np.float32), 3)),
    ("static type: 3.0 is not 3", (np.ones(3, np.float32), 3.0)),
    ("back to the first signature", (np.ones(3, np.float32), 2)),
]


def test_a_print_fires_once_per_real_trace_as_in_jax():
    def run(jit):
        f, traces = traced_counter()
        g = jit(lambda x, n: f(x["a"] if isinstance(x, dict) else x, n), static_argnums=1)
        counts = []
        for _, args in SCENARIO:
            g(*args)
            counts.append(len(traces))
        return counts

    ours, theirs = run(s07.jit), run(jax.jit)
    assert ours == theirs == [1, 1, 2, 3, 4, 5, 6, 7, 8, 8]


def test_values_equal_jaxs_and_keep_their_dtypes():
    def f(x, y):
        return {"s": x * y + 1.0, "i": (x > 0).astype(np.int32)}

    x = np.linspace(-1, 1, 5).astype(np.float32)
    for args in [(x, 2.0), (x, x), (np.float32(3.0), 2), (np.arange(5), 2)]:
        got, want = s07.jit(f)(*args), jax.jit(f)(*args)
        assert got.keys() == want.keys()
        for k in got:
            assert np.asarray(got[k]).dtype == want[k].dtype
            np.testing.assert_allclose(got[k], want[k], rtol=RTOL_ELEMENTWISE)


def test_static_argnames_keyword_arguments_and_negative_argnums():
    def f(x, scale, *, shift=0.0):
        return x * scale + shift

    x = np.arange(3, dtype=np.float32)
    for jit in (s07.jit, jax.jit):
        g = jit(f, static_argnames=("scale", "shift"))
        np.testing.assert_allclose(g(x, 2.0, shift=1.0), x * 2.0 + 1.0)
        np.testing.assert_allclose(g(x, scale=3.0), x * 3.0)  # static by name, inferred
        np.testing.assert_allclose(jit(f, static_argnums=-1)(x, 4.0), x * 4.0)


def test_disable_jit_runs_python_on_values():
    seen = []

    def f(x):
        seen.append(type(x))
        return x + 1

    with s07.disable_jit():
        s07.jit(f)(np.ones(2, np.float32))
    assert seen == [np.ndarray]  # no tracer: the function ran on the value itself
    s07.jit(f)(np.ones(2, np.float32))
    assert seen[1] is not np.ndarray


def test_clear_cache_forgets_the_functions_traces():
    f, traces = traced_counter()
    g = s07.jit(f)
    g(np.ones(2, np.float32), 2.0)
    g(np.ones(2, np.float32), 2.0)
    g.clear_cache()
    g(np.ones(2, np.float32), 2.0)
    assert len(traces) == 2


def test_jit_decorates_methods_and_takes_options_as_a_decorator():
    class Model:
        scale = 3.0

        @s07.jit(static_argnums=0)  # self is no array: static, hashed by identity
        def apply(self, x):
            return x * self.scale

    np.testing.assert_allclose(Model().apply(np.ones(2, np.float32)), [3.0, 3.0])

    @s07.jit(static_argnums=1)
    def power(x, n):
        return x ** n

    np.testing.assert_allclose(power(np.full(2, 2.0, np.float32), 3), [8.0, 8.0])


def _message(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


@pytest.mark.parametrize("case", [
    "not_callable", "static_and_donated", "unhashable_static", "non_array_argument"])
def test_errors_equal_jaxs(case):
    def f(x, y=1.0):
        return x

    def make(jit):
        return {
            "not_callable": lambda: jit(3),
            "static_and_donated": lambda: jit(f, static_argnums=0, donate_argnums=0),
            "unhashable_static": lambda: jit(f, static_argnums=0)(np.ones(3)),
            "non_array_argument": lambda: jit(f)("a"),
        }[case]

    assert _message(make(s07.jit)) == _message(make(jax.jit))


def test_negative_static_argnums_key_the_signature_cache_by_the_static_value():
    def run(jit):
        f, traces = traced_counter()
        g = jit(f, static_argnums=-1)
        x = np.ones(3, np.float32)
        values = [np.asarray(g(x, n)).tolist() for n in (2.0, 3.0, 2.0, 4.0)]
        return values, len(traces)

    assert run(s07.jit) == run(jax.jit) == ([[2.0] * 3, [3.0] * 3, [2.0] * 3, [4.0] * 3], 3)


def test_static_keyword_arguments_are_keyed_by_name_as_well_as_value():
    # a=1 and b=1 are equal values under different names: two signatures, two traces
    def run(jit):
        traces = []

        def f(x, a=0, b=0):
            traces.append(None)
            return x + 10 * a + b

        g = jit(f, static_argnames=("a", "b"))
        x = np.zeros(2, np.int32)
        values = [np.asarray(g(x, **kw)).tolist() for kw in ({"a": 1}, {"b": 1}, {"a": 1})]
        return values, len(traces), g._cache_size()

    assert run(s07.jit) == run(jax.jit) == ([[10, 10], [1, 1], [10, 10]], 2, 2)


def test_python_scalars_share_a_signature_entry_per_type_as_in_jax():
    # a Python scalar is described by its type (the dtype, and that it is weak), never its value
    def run(jit):
        g = jit(lambda x, y: x * y)
        x = np.ones(3, np.float32)
        sizes = []
        for y in (1.0, 2.0, 3.5, 2, 7, True, np.float32(2.0), np.float32(5.0), 1.0):
            g(x, y)
            sizes.append(g._cache_size())
        return sizes

    assert run(s07.jit) == run(jax.jit) == [1, 1, 1, 2, 2, 3, 4, 4, 4]


_FLAG = "jax_under_the_api_test_trace_flag"


@pytest.fixture
def trace_flag():
    """A flag that changes what tracing produces, in both libraries: ours in its trace context,
    JAX's in its trace context and jit key, as every such flag of JAX's is."""
    from jax._src import config as jax_config

    from stages.s02_tracing import config

    theirs = jax_config.config_states.get(_FLAG) or jax_config.State(
        _FLAG, False, "a flag for one test", include_in_jit_key=True,
        include_in_trace_context=True)
    ours = config.State(_FLAG, False, "a flag for one test", config._parse_bool,
                        include_in_trace_context=True)
    config.config.add(ours)
    try:
        yield ours, theirs
    finally:
        config.config.remove(_FLAG)


def test_a_flag_in_the_trace_context_is_part_of_the_signature_key(trace_flag):
    def run(jit, flag):
        traces = []

        def f(x):
            traces.append(1)
            return x + (1.0 if flag.value else 0.0)

        g, x = jit(f), np.zeros(2, np.float32)
        values = [np.asarray(g(x)).tolist()]
        with flag(True):
            values.append(np.asarray(g(x)).tolist())
        values.append(np.asarray(g(x)).tolist())
        return values, len(traces)

    ours, theirs = trace_flag
    assert run(s07.jit, ours) == run(jax.jit, theirs) == ([[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]],
                                                          2)


def _pos_only(a, /, b):
    return a + b


def _var_kw(a, **kw):
    return a


def _var_pos(a, *rest):
    return a


BAD_ARGNUMS = {  # jit's options checked against the signature, once, when jit is called
    "static_argnums_past_the_end": (lambda a: a, dict(static_argnums=3)),
    "static_argnums_negative": (lambda a: a, dict(static_argnums=-3)),
    "donate_argnums_past_the_end": (lambda a, b: a, dict(donate_argnums=(0, 2))),
    "static_argnames_unknown": (lambda a: a, dict(static_argnames="zz")),
    "donate_argnames_unknown": (lambda a: a, dict(donate_argnames=("a", "zz"))),
    "argnames_positional_only": (_pos_only, dict(static_argnames="a")),
    "static_and_donated_names": (lambda a, b: a, dict(static_argnames="b", donate_argnames="b")),
    "static_and_donated_nums": (lambda a, b: a, dict(static_argnums=1, donate_argnums=1)),
}


@pytest.mark.parametrize("case", sorted(BAD_ARGNUMS))
def test_argnums_and_argnames_are_checked_against_the_signature_as_in_jax(case):
    fun, options = BAD_ARGNUMS[case]
    with pytest.raises(ValueError) as theirs:
        jax.jit(fun, **options)
    with pytest.raises(ValueError) as ours:
        s07.jit(fun, **options)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("fun, options", [(_var_kw, dict(static_argnames="zz")),
                                          (_var_pos, dict(static_argnums=5))])
def test_a_function_taking_star_args_accepts_any_argnums_as_in_jax(fun, options):
    jax.jit(fun, **options)
    s07.jit(fun, **options)


def test_the_same_nan_as_a_static_argument_traces_once_as_in_jax():
    nan, counts = float("nan"), []
    for jit in (jax.jit, s07.jit):
        traces: list = []
        f = jit(lambda x, s, traces=traces: traces.append(s) or x, static_argnums=1)
        f(1.0, nan)
        f(1.0, nan)  # nan != nan, but it is the same object: a hit
        counts.append(len(traces))
    assert counts == [1, 1]


class _Incomparable:
    def __hash__(self):
        return 1

    def __eq__(self, other):
        raise RuntimeError("no comparing")


def test_a_static_argument_whose_eq_raises_fails_as_in_jax():
    errors = []
    for jit in (jax.jit, s07.jit):
        f = jit(lambda x, s: x, static_argnums=1)
        f(1.0, _Incomparable())
        with pytest.raises(ValueError) as e:
            f(1.0, _Incomparable())
        errors.append(str(e.value))
    head = errors[0].split("Traceback")[0]  # then Python's traceback of the raising __eq__
    assert head.endswith("The error was:\n") and errors[1].startswith(head)
    assert all(e.rstrip().endswith("RuntimeError: no comparing") for e in errors)


@pytest.mark.parametrize("value", [2**31, -2**31 - 1])
def test_a_python_int_argument_that_does_not_fit_int32_fails_as_in_jax(value):
    messages = []
    for jit in (jax.jit, s07.jit):
        with pytest.raises(OverflowError) as e:
            jit(lambda a: a)(value)
        messages.append(str(e.value))
    assert messages[0] == messages[1]


@pytest.mark.parametrize("make", [
    lambda x: x, lambda x: (x,), lambda x: [x], lambda x: {"a": x}, lambda x: None,
    lambda x: (), lambda x: (x, None), lambda x: (x, x * 2)],
    ids=["array", "tuple", "list", "dict", "None", "empty", "with-None", "pair"])
def test_a_cache_hit_returns_the_same_structure_as_jax(make):
    """A hit returns a lone array as it is and rebuilds any other tree, as the first call did."""
    x = np.arange(3, dtype=np.float32)
    g, ref = s07.jit(make), jax.jit(make)
    first, again, theirs = g(x), g(x), ref(x)
    assert g.cache_info()["signature"].hits == 1
    for ours in (first, again):
        assert (jax.tree_util.tree_structure(ours) == jax.tree_util.tree_structure(theirs))
        for a, b in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs),
                        strict=True):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("second, error", [("s", TypeError), (2**40, ValueError),
                                           (1.0, ValueError)], ids=["str", "big-int", "float"])
def test_a_dynamic_argument_is_refused_before_an_unhashable_static_as_in_jax(second, error):
    """JAX abstracts a leaf its C++ dispatch cannot key (a string) before it hashes the statics;
    an int of any size is keyed, so there the unhashable static is what fails first."""
    messages = []
    for jit in (jax.jit, s07.jit):
        def f(a, b):
            return b
        with pytest.raises(error) as e:
            jit(f, static_argnums=0)(np.ones(2, np.float32), second)
        messages.append(re.sub(r" at 0x[0-9a-f]+", "", str(e.value)))
    assert messages[0] == messages[1]


def test_a_call_that_fails_still_holds_its_signature_entry_as_in_jax():
    """JAX's C++ cache makes a call's entry before the miss runs; a miss that raises leaves it
    there (counted by `_cache_size`), and the next call with that signature traces again."""
    def run(jit):
        fail, traces, seen = [True], [], []

        def f(x):
            traces.append(None)
            if fail[0]:
                raise RuntimeError("no")
            return x

        g = jit(f)
        for failing, x in [(True, 1.0), (True, 2.0), (False, 1.0), (False, 1.0), (True, 2**40),
                           (False, 2**40), (False, 3)]:
            fail[0] = failing
            try:
                g(x)
                seen.append((len(traces), g._cache_size()))
            except (RuntimeError, OverflowError) as e:
                seen.append((len(traces), g._cache_size(), type(e).__name__))
        g.clear_cache()
        return seen, g._cache_size()

    assert run(s07.jit) == run(jax.jit) == (
        [(1, 1, "RuntimeError"), (2, 1, "RuntimeError"), (3, 1), (3, 1),
         (3, 2, "OverflowError"), (3, 2, "OverflowError"), (4, 2)], 0)


@pytest.mark.parametrize("big", [2**40, 2**31, -2**31 - 1])
def test_an_int_beyond_int32_after_a_small_one_is_refused_as_in_jax(big):
    """Both ints are keyed by their type, so the second call finds the first one's entry; it
    must still be refused, not run with an int the program cannot hold (2**31 is one past)."""
    seen = []
    for jit in (jax.jit, s07.jit):
        g = jit(lambda x: x + 1)
        assert int(g(1)) == 2
        with pytest.raises(OverflowError) as e:
            g(big)
        seen.append((str(e.value), g._cache_size()))
    assert seen[0] == seen[1]
    assert f"argument path is x. Got <class 'int'> with value {big}" in seen[1][0]


def test_an_int_beyond_int32_that_is_not_the_last_argument_is_refused_as_in_jax():
    """The check looks at every leaf: a big int first, a small one after it, is refused too."""
    seen = []
    for jit in (jax.jit, s07.jit):
        g = jit(lambda x, y: x + y)
        assert int(g(1, 1)) == 2
        with pytest.raises(OverflowError) as e:
            g(2**40, 1)
        seen.append(str(e.value))
    assert seen[0] == seen[1]
    assert "argument path is x. Got <class 'int'> with value 1099511627776" in seen[1]


def test_a_weak_typed_array_and_a_strong_one_are_two_signatures_as_in_jax():
    """A jax array's aval keys it, weak type included: a weak float32 and a strong one promote
    differently with a float16, so sharing one entry would return the first one's dtype."""
    seen = []
    for jit in (jax.jit, s07.jit):
        weak, strong = jit(lambda: 1.0)(), jit(lambda: np.float32(1.0))()
        g = jit(lambda x: x + np.float16(1))
        seen.append((np.asarray(g(weak)).dtype, np.asarray(g(strong)).dtype, g._cache_size()))
    assert seen[0] == seen[1] == (np.float16, np.float32, 2)
