"""Python asking a tracer for a value: JAX's error classes and JAX's messages."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from stages.s02_tracing import (
    ConcretizationTypeError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    core,
    make_jaxpr,
)
from stages.s02_tracing import lax as olax
from stages.s02_tracing import numpy as snp


def _message(make_jaxpr, fn, *args):
    with pytest.raises(Exception) as info:
        make_jaxpr(fn)(*args)
    return info.type, str(info.value)


def python_if(lax, x, y):
    if lax.gt(x, y):
        return x
    return y


CONVERSIONS = {
    "bool": (lambda lax: lambda x, y: python_if(lax, x, y), TracerBoolConversionError),
    "int": (lambda lax: lambda x, y: int(x), ConcretizationTypeError),
    "float": (lambda lax: lambda x, y: float(x), ConcretizationTypeError),
    "index": (lambda lax: lambda x, y: [1, 2, 3][x], TracerIntegerConversionError),
    "numpy": (lambda lax: lambda x, y: np.asarray(x), TracerArrayConversionError),
}


@pytest.mark.parametrize("what", list(CONVERSIONS))
def test_conversion_errors_have_jaxs_class_and_message(what):
    make_fn, error = CONVERSIONS[what]
    our_type, ours = _message(make_jaxpr, make_fn(olax), np.int32(1), np.int32(2))
    their_type, theirs = _message(jax.make_jaxpr, make_fn(jax.lax), np.int32(1), np.int32(2))
    assert our_type is error and their_type.__name__ == error.__name__
    assert issubclass(error, TypeError)
    # ours says the function was traced "for make_jaxpr" where JAX says "for jit" (JAX's
    # make_jaxpr traces through jit); the rest is JAX's text, its link to the errors page last
    assert ours.replace(" for make_jaxpr. ", " for jit. ") == theirs


def test_python_if_on_a_tracer_says_what_was_traced():
    def f(x, y):
        return python_if(olax, x, y)

    with pytest.raises(TracerBoolConversionError) as info:
        make_jaxpr(f)(1.0, 2.0)
    msg = str(info.value)
    assert msg.startswith("Attempted boolean conversion of traced array with shape bool[].\n")
    assert "while tracing the function f at " in msg and "for make_jaxpr." in msg
    assert "depends on the values of the arguments x and y." in msg
    assert isinstance(info.value, ConcretizationTypeError)  # as in JAX's class tree


def test_the_message_names_the_pytree_leaf_the_value_came_from():
    def f(d):
        return int(d["b"][1])

    with pytest.raises(ConcretizationTypeError, match=r"depends on the value of the argument "
                                                      r"d\['b'\]\[1\]\."):
        make_jaxpr(f)({"a": 1.0, "b": (2.0, 3.0)})


def test_int_of_a_tracer_suggests_astype():
    with pytest.raises(ConcretizationTypeError) as info:
        make_jaxpr(lambda x: int(x))(1.0)
    msg = str(info.value)
    assert "The problem arose with the `int` function." in msg
    assert "try using `x.astype(int)`" in msg


def test_index_error_suggests_dynamic_slice():
    # JAX's advice (`lax.dynamic_slice`, `static_argnums`) is on the errors page the message
    # links; the message itself is JAX's, with no line of advice
    def index(i):
        return [1, 2, 3][i]

    ours, theirs = _message(make_jaxpr, index, 1), _message(jax.make_jaxpr, index, 1)
    assert ours[0] is TracerIntegerConversionError
    assert ours[1].replace(" for make_jaxpr. ", " for jit. ") == theirs[1]
    assert theirs[1].endswith("#jax.errors.TracerIntegerConversionError")


def test_bool_of_a_many_element_tracer_is_ambiguous_like_numpy():
    with pytest.raises(ValueError, match="truth value of an array with more than one element"):
        make_jaxpr(lambda x: bool(x))(np.ones(3, np.float32))


def test_static_argnums_is_the_fix():
    def f(x, n):
        if n > 2:
            return olax.mul(x, 2.0)
        return x

    assert "mul" in str(make_jaxpr(f, static_argnums=1)(1.0, 3))
    with pytest.raises(TracerBoolConversionError, match=r"^Attempted boolean conversion of "
                       r"traced array with shape bool\[\]\.\n.*depends on the value of the "
                       r"argument n\."):
        make_jaxpr(f)(1.0, 3)


@pytest.mark.parametrize("out", ["not an array", (1.0, {"a": [2.0, "b"]})], ids=["leaf", "tree"])
def test_returning_a_non_array_names_the_function_and_the_place_as_jax_does(out):
    def f(x):
        return out

    messages = []
    for trace in (make_jaxpr, jax.make_jaxpr):
        with pytest.raises(TypeError) as e:
            trace(f)(1.0)
        messages.append(str(e.value))
    # JAX's make_jaxpr traces through jit, and says so; ours says make_jaxpr
    assert messages[0] == messages[1].replace("traced for jit", "traced for make_jaxpr")
    assert messages[0].startswith("function f at ")  # a lone leaf: no place to name


SHAPE_CHECKS = {"bool": bool, "int": int, "float": float, "complex": complex,
                "index": lambda x: [1, 2, 3][x]}


@pytest.mark.parametrize("what", list(SHAPE_CHECKS))
@pytest.mark.parametrize("arg", [np.ones(3, np.float32), np.ones((0,), np.int32), np.float32(1)],
                         ids=["f32[3]", "i32[0]", "f32[]"])
def test_conversions_check_the_shape_and_dtype_first_like_jax(what, arg):
    # a non-scalar (or, for an index, non-integer) tracer fails with numpy's plain error first
    our_type, ours = _message(make_jaxpr, SHAPE_CHECKS[what], arg)
    their_type, theirs = _message(jax.make_jaxpr, SHAPE_CHECKS[what], arg)
    assert our_type.__name__ == their_type.__name__
    assert ours.splitlines()[0] == theirs.splitlines()[0]


class _KnownTracer(core.Tracer):
    """A tracer that knows its value, as stage 4's JVP tracers of concrete primals do."""

    def to_concrete_value(self):
        return np.int32(2)


def test_bool_int_and_index_use_a_known_value_but_float_and_complex_do_not_like_jax():
    tracer = _KnownTracer(core.eval_trace, core.ShapedArray((), np.int32))
    assert (bool(tracer), int(tracer), [1, 2, 3][tracer]) == (True, 2, 3)
    for convert in (float, complex):
        with pytest.raises(ConcretizationTypeError, match="^Abstract tracer value encountered"):
            convert(tracer)
    # JAX: a JVP tracer of a concrete primal knows its value, yet float() of it raises
    assert jax.jvp(lambda x: int(x) * x, (2.0,), (1.0,)) == (4.0, 2.0)
    for convert in (float, complex):
        with pytest.raises(jax.errors.ConcretizationTypeError,
                           match="^Abstract tracer value encountered"):
            jax.jvp(lambda x, convert=convert: convert(x) * x, (2.0,), (1.0,))


@pytest.mark.parametrize("value", [2**31, -2**31 - 1, 2**63])
def test_a_python_int_that_does_not_fit_int32_is_refused_as_in_jax(value):
    x = np.arange(3, dtype=np.int32)
    for ours, theirs in [(lambda: snp.asarray(value), lambda: jnp.asarray(value)),
                         (lambda: make_jaxpr(lambda a: a)(value),
                          lambda: jax.make_jaxpr(lambda a: a)(value))]:
        with pytest.raises(OverflowError) as e_ours:
            ours()
        with pytest.raises(OverflowError) as e_theirs:
            theirs()
        assert str(e_ours.value) == str(e_theirs.value)
    # JAX's jnp.add is jitted, so it names its argument `y`; ours names the value only
    with pytest.raises(OverflowError, match=f"Python int {value} too large to convert to int32"):
        snp.add(x, value)
    with pytest.raises(OverflowError):
        jnp.add(x, value)
    assert snp.asarray(2**31 - 1) == 2**31 - 1  # the largest that fits
