"""`jax_explain_cache_misses`: every explanation equals JAX's for the same scenario.

Both libraries jit the *same* Python function object (written with operators only, so it runs on
either library's tracers) and are called from the same line (`call` below), so even the call
site, the function's `id=` and its `defined at` line agree. The one difference is the class of a
static argument's tree node, which prints with its module (`jax._src.tree_util.Static` there):
`_same` substitutes ours before comparing.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import stages.s07_caches as s07
from stages.s07_caches.api_util import Static

OURS_LOGGER = "stages.s07_caches.explain"
JAX_LOGGER = "jax._src.interpreters.partial_eval"
OUR_STATIC = f"{Static.__module__}.{Static.__qualname__}"

pytestmark = [pytest.mark.oracle, pytest.mark.usefixtures("explaining")]


def call(g, *args, **kwargs):  # the one call site both libraries report
    return g(*args, **kwargs)


@pytest.fixture
def same(warnings_of):
    """`same(ours_jitted, jax_jitted, *args, **kwargs)`: call both, assert equal explanations,
    return ours (a list of messages, empty on a hit)."""
    def run(go, gj, *args, **kwargs):
        got = warnings_of(OURS_LOGGER, lambda: call(go, *args, **kwargs))
        want = warnings_of(JAX_LOGGER, lambda: call(gj, *args, **kwargs))
        assert [m.replace(OUR_STATIC, "jax._src.tree_util.Static") for m in got] == want
        return got
    return run


def a32(*shape, dtype=np.float32):
    return np.ones(shape, dtype)


def test_a_new_function_is_never_seen_and_a_new_value_is_no_miss(same):
    def f(x):
        return x * 2.0

    go, gj = s07.jit(f), jax.jit(f)
    (msg,) = same(go, gj, a32(3))
    where = f"{__file__}:{f.__code__.co_firstlineno}"
    assert msg.splitlines()[1:] == ["  never seen function:",
                                    f"    f id={id(f)} defined at {where}"]
    assert same(go, gj, np.zeros(3, np.float32)) == []  # new values, same types: a hit


def test_shape_dtype_and_weak_type_changes_name_the_argument_and_how(same):
    def f(x, y):
        return x * 2.0, y

    go, gj = s07.jit(f), jax.jit(f)
    same(go, gj, a32(3), a32(3))
    (shape,) = same(go, gj, a32(4), a32(3))
    assert shape.endswith("different input types:\n  * at x, now f32[4] and before f32[3]")
    (dtype,) = same(go, gj, a32(3), a32(3, dtype=np.int32))
    assert "* at y, now i32[3] and before f32[3]" in dtype
    same(go, gj, np.float32(2.0), a32(3))  # a strong f32[] ...
    (weak,) = same(go, gj, 2.0, a32(3))  # ... and a weak one: only the weak type differs
    # both keys differ by one type; the closer is the one whose text sorts first, as in JAX
    assert "now f32[]({}){weak_type=True}" in weak and weak.endswith("#weak-types")
    (both,) = same(go, gj, a32(5), a32(5, dtype=np.int32))  # two arguments at once
    assert both.count("  * at ") == 2


def test_a_weak_scalar_for_an_array_prints_the_empty_shardings_as_jax(same):
    def f(x):
        return x + 1.0

    go, gj = s07.jit(f), jax.jit(f)
    same(go, gj, a32(3))
    (msg,) = same(go, gj, 1.0)
    assert "now f32[]({}){weak_type=True} and before f32[3]({}){weak_type=False}" in msg


def test_pytree_structure_changes_name_the_input_path(same):
    def f(x):
        return x

    go, gj = s07.jit(f), jax.jit(f)
    same(go, gj, a32(3))
    (msg,) = same(go, gj, {"a": a32(3)})
    assert ("* at input path [0][0], now <class 'dict'> and before pytree leaf, so their "
            "Python types differ") in msg
    same(go, gj, (a32(3), a32(2)))  # a tuple: closest is the dict (text order breaks the tie)
    same(go, gj, [a32(3), a32(2)])


def test_the_closest_key_is_the_least_severe_difference_however_many_it_counts(same):
    def f(x, y):
        return x[0] * 2.0 + y[0]

    go, gj = s07.jit(f), jax.jit(f)
    same(go, gj, [a32(3), a32(3)], [a32(3), a32(3)])
    same(go, gj, [a32(3)], [a32(3, dtype=np.int32)])
    # two pytree differences from the first key, one type difference from the second: the
    # pytree is the less severe category, so the first key is the closest
    (msg,) = same(go, gj, [a32(3)], [a32(3)])
    assert "different input pytree:" in msg and msg.count("  * at input path") == 2


def test_static_values_and_keyword_arguments_are_part_of_the_tree(same):
    def f(x, n, y=None):
        return x * n

    go = s07.jit(f, static_argnums=1)
    gj = jax.jit(f, static_argnums=1)
    same(go, gj, a32(3), 2)
    (value,) = same(go, gj, a32(3), 3)
    assert "with pytree metadata Static(val=3) and before" in value
    same(go, gj, a32(3), 3.0)  # 3.0 is not 3: a static is equal only to its own type
    (kw,) = same(go, gj, a32(3), n=3.0)  # static by keyword: inferred from the signature
    assert "symmetric difference of key sets: {'n'}" in kw
    same(go, gj, a32(3), 3, y=a32(2))


def test_a_function_redefined_on_one_line_is_reported_as_such(same):
    messages = []
    for _ in range(3):
        fn = lambda x: x + 1  # noqa: E731  (a new function each time round)
        messages += same(s07.jit(fn), jax.jit(fn), a32(3))
    assert "but seen another function" not in messages[0]
    assert all("  but seen another function defined on the same line; maybe the function is\n"
               "  being re-defined repeatedly, preventing caching?" in m for m in messages[1:])


def test_a_key_whose_trace_raised_is_seen_and_not_explained_again(warnings_of):
    def f(x):
        raise ValueError("no trace")

    def attempt(g, n):
        with pytest.raises(ValueError, match="no trace"):
            call(g, a32(n))

    go, gj = s07.jit(f), jax.jit(f)
    got, want = [], []
    for n in (3, 4, 3, 4, 5):
        got.append(warnings_of(OURS_LOGGER, lambda: attempt(go, n)))  # noqa: B023
        want.append(warnings_of(JAX_LOGGER, lambda: attempt(gj, n)))  # noqa: B023
    assert got == want
    assert [len(m) for m in got] == [1, 1, 0, 0, 1]  # a repeated key is not explained again
    assert "never seen function" in got[0][0]
    assert got[1][0].endswith("* at x, now f32[4] and before f32[3]")  # the failed key was seen


def test_a_config_flag_in_the_trace_context_is_named(warnings_of):
    def f(x):
        return x * 3.0

    go, gj = s07.jit(f), jax.jit(f)
    with s07.disable_jit():  # AOT tracing still traces, with the flag in the key
        go.trace(a32(3))
    with jax.disable_jit():
        gj.trace(a32(3))
    got = warnings_of(OURS_LOGGER, lambda: call(go, a32(3)))
    want = warnings_of(JAX_LOGGER, lambda: call(gj, a32(3)))
    assert got == want
    assert got[0].endswith("Tracing context doesn't match, e.g. due to config or context "
                           "manager.\n  * jax_disable_jit differs: now False and before True")


def test_nothing_is_logged_without_the_flag(warnings_of):
    from stages.s02_tracing import config

    def f(x):
        return x - 1.0

    with config.explain_cache_misses(False):
        assert warnings_of(OURS_LOGGER, lambda: call(s07.jit(f), a32(3))) == []
