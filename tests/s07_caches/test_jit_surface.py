"""jit's surface against JAX's: what one signature-cache entry covers, the AOT stations'
attributes, jit on a method and on callables without a name, and unusual arguments."""

from __future__ import annotations

import enum
import functools

import jax
import numpy as np
import pytest

import stages.s07_caches as s07
from stages.s02_tracing import eval_shape, make_jaxpr

X3 = np.ones(3, np.float32)
BOTH = [(s07.jit, s07.ShapeDtypeStruct), (jax.jit, jax.ShapeDtypeStruct)]


@pytest.mark.parametrize("calls", [
    (np.float32(2), np.array(2.0, np.float32)),  # a numpy scalar is a 0-d array
    (np.ones(3, np.float32), np.ones(3, np.float64)),  # float64 is traced as float32
    (np.int64(3), np.int32(4), np.array(5)),
], ids=["numpy scalar and 0-d array", "float64 and float32", "64 and 32-bit ints"])
def test_one_signature_cache_entry_covers_what_jax_s_covers(calls):
    sizes = []
    for jit, _ in BOTH:
        f = jit(lambda x: x)
        for x in calls:
            f(x)
        sizes.append(f._cache_size())
    assert sizes[0] == sizes[1]


def test_an_int_too_big_for_int32_on_a_cache_hit_gets_jaxs_error():
    texts = []
    for jit, _ in BOTH:
        f = jit(lambda x: x)
        f(1)
        with pytest.raises(OverflowError) as err:
            f(2**40)
        texts.append(str(err.value))
    assert texts[0] == texts[1]
    assert texts[0].startswith("An overflow was encountered while parsing an argument")


def test_the_stations_say_what_jax_s_say_of_their_arguments_and_outputs():
    seen = []
    for jit, _ in BOTH:
        traced = jit(lambda x, y: (x * 2.0, 3), donate_argnums=0).trace(X3, 1.0)
        lowered = traced.lower()
        compiled = lowered.compile()
        seen.append([repr(s.in_avals) for s in (traced, lowered, compiled)]
                    + [s.donate_argnums for s in (traced, lowered, compiled)]
                    + [repr(traced.out_info), repr(lowered.out_info)]  # weak types gone
                    + [[(o.shape, o.dtype, o.weak_type) for o in compiled.out_info]])
    assert seen[0] == seen[1]


def test_jit_on_a_method_is_a_bound_method_as_jax_s():
    results = []
    for jit, _ in BOTH:
        class Model:
            @functools.partial(jit, static_argnums=0)
            def f(self, x):
                "doc of f"
                return x

        m = Model()
        m.f(X3)
        results.append((type(m.f).__name__, m.f.__name__, m.f.__doc__, m.f.__self__ is m,
                        m.f._cache_size(), m.f == m.f))
    assert results[0] == results[1] == ("method", "f", "doc of f", True, 1, True)


def test_a_jitted_partial_and_a_callable_object_are_named_as_jax_names_them():
    def f(x, y):
        return x

    class Callable_:
        def __call__(self, x):
            return x

    for fun in (functools.partial(f, y=1), Callable_()):
        ours, theirs = s07.jit(fun), jax.jit(fun)
        assert (ours.__name__, ours.__qualname__) == (theirs.__name__, theirs.__qualname__)


def test_a_64_bit_shape_dtype_struct_stands_for_its_32_bit_array():
    seen = []
    for jit, sds in BOTH:
        info = jit(lambda x: x).lower(sds((3,), np.float64)).args_info
        shape = jit(lambda x: x).eval_shape(sds((3,), np.int64))
        out = jit(lambda x, y: x + y).lower(sds((3,), np.float64), 1.0).compile()(np.ones(3), 1.0)
        seen.append((repr(info), repr(shape), np.asarray(out).tolist()))
    assert seen[0] == seen[1]
    assert repr(eval_shape(lambda x: x, s07.ShapeDtypeStruct((3,), np.float64))) == repr(
        jax.eval_shape(lambda x: x, jax.ShapeDtypeStruct((3,), np.float64)))


class Color(enum.IntEnum):
    RED = 3


class MyInt(int):
    pass


@pytest.mark.parametrize("x", [Color.RED, MyInt(4)], ids=["IntEnum", "int subclass"])
def test_an_int_subclass_is_traced_as_a_python_int(x):
    assert str(make_jaxpr(lambda v: v * 2)(x)) == str(jax.make_jaxpr(lambda v: v * 2)(x))
    got, want = s07.jit(lambda v: v * 2)(x), jax.jit(lambda v: v * 2)(x)
    assert (int(got), got.dtype, got.weak_type) == (int(want), want.dtype, want.weak_type)


def test_a_masked_array_is_refused_with_jaxs_error_not_unmasked():
    masked = np.ma.array([1.0, 2.0], mask=[False, True])
    errors = []
    for jit, _ in BOTH:
        with pytest.raises(ValueError) as err:
            jit(lambda v: v * 2)(masked)
        errors.append(str(err.value))
    assert errors[0] == errors[1]


def _sizes_and_traces(jit):
    traces = []

    def f(x):
        traces.append(x.shape)
        return x * 2.0

    x3, x4 = np.ones(3, np.float32), np.ones(4, np.float32)
    plain, donating = jit(f), jit(f, donate_argnums=0)
    keeping, named = jit(f, keep_unused=True), jit(f, static_argnames=())
    plain(x3), donating(np.ones(3, np.float32)), keeping(x4), named(x3)
    jits = (plain, donating, keeping, named)
    sizes = [j._cache_size() for j in jits]
    plain.clear_cache()
    after = [j._cache_size() for j in jits]
    donating(np.ones(3, np.float32)), keeping(x4), plain(x3)
    return sizes, after, len(traces)


def test_jits_of_one_function_share_a_cache_only_with_the_same_donation_as_in_jax():
    """JAX keeps one C++ cache per function and donation/compiler options: keep_unused and the
    statics share the plain jit's, which `_cache_size` counts and `clear_cache` empties."""
    ours, theirs = _sizes_and_traces(s07.jit), _sizes_and_traces(jax.jit)
    assert ours == theirs == ([2, 1, 2, 2], [0, 1, 0, 0], 4)
