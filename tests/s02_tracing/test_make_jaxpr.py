"""make_jaxpr: the lessons of tracing, each checked against jax.make_jaxpr."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from stages.s01_pytrees import tree_flatten
from stages.s02_tracing import core, make_jaxpr
from stages.s02_tracing import lax as olax
from stages.s02_tracing import linear_util as lu
from stages.s02_tracing import numpy as jnp
from stages.s02_tracing import partial_eval as pe
from stages.s02_tracing.api_util import flatten_fun


def _both(fn_of_lax, *args, **kwargs):
    """(ours, theirs) printed jaxprs of the same source."""
    ours = str(make_jaxpr(fn_of_lax(olax), **kwargs)(*args))
    theirs = str(jax.make_jaxpr(fn_of_lax(jax.lax), **kwargs)(*args))
    return ours, theirs


def test_the_facts_sheet_examples_print_exactly_as_jax():
    ours, theirs = _both(lambda lax: lambda x: lax.mul(lax.sin(x), 2.0), 1.0)
    assert ours == theirs == (
        "{ lambda ; a:f32[]. let b:f32[] = sin a; c:f32[] = mul b 2.0:f32[] in (c,) }")
    ours, theirs = _both(lambda lax: lambda x: (x, lax.mul(x, 2.0)), 3.0)
    assert ours == theirs == "{ lambda ; a:f32[]. let b:f32[] = mul a 2.0:f32[] in (a, b) }"
    ours, theirs = _both(lambda lax: lambda x: lax.add(x, 1), 1)
    assert ours == theirs == "{ lambda ; a:i32[]. let b:i32[] = add a 1:i32[] in (b,) }"


def test_print_inside_a_traced_function_fires_once_and_shows_a_tracer(capsys):
    def f(x):
        print("x is", x)
        return olax.mul(olax.add(x, 1.0), olax.add(x, 2.0))

    closed = make_jaxpr(f)(np.ones(3, np.float32))
    assert capsys.readouterr().out == "x is JitTracer(float32[3])\n"
    # running the jaxpr does not run the Python function again: no print
    core.eval_jaxpr(closed.jaxpr, closed.consts, np.ones(3, np.float32))
    assert capsys.readouterr().out == ""
    # JAX prints the same tracer
    jax.make_jaxpr(lambda x: print("x is", x))(np.ones(3, np.float32))
    assert capsys.readouterr().out == "x is JitTracer(float32[3])\n"


def test_python_scalars_trace_as_weak_avals_and_numpy_scalars_as_strong():
    for arg in [1.0, 1, True, np.float32(1), np.int64(1), np.ones(2)]:
        ours = make_jaxpr(lambda x: x)(arg).in_avals
        theirs = jax.make_jaxpr(lambda x: x)(arg).in_avals
        assert repr(ours) == repr(theirs)


def test_pytree_arguments_become_invars_in_flatten_order():
    args = ({"b": (np.ones(2, np.float32), 2.0), "a": np.ones(2, np.int32)},)
    ours, theirs = _both(lambda lax: lambda d: (d["b"][0], lax.mul(d["b"][1], 3.0)), *args)
    assert ours == theirs
    leaves, _ = tree_flatten(args)
    closed = make_jaxpr(lambda d: d)(*args)
    assert [str(v.aval) for v in closed.jaxpr.invars] == [str(core.get_aval(x)) for x in leaves]


def test_keyword_arguments_are_traced_too():
    def fn(lax):
        return lambda x, *, y: lax.sub(x, y)

    ours = make_jaxpr(fn(olax))(1.0, y=np.float32(2.0))
    theirs = jax.make_jaxpr(fn(jax.lax))(1.0, y=np.float32(2.0))
    assert str(ours) == str(theirs)


def test_pytree_outputs_are_flattened_in_jaxs_order():
    ours, theirs = _both(lambda lax: lambda x: {"z": x, "a": (lax.neg(x), None)}, 1.0)
    assert ours == theirs


@pytest.mark.parametrize("static_argnums", [1, (1,), -1, (1, 2)])
def test_static_arguments_are_python_values_not_invars(static_argnums):
    def fn(lax):
        def f(x, n, m=1):
            for _ in range(n * m):
                x = lax.mul(x, 2.0)
            return x

        return f

    args = (1.0, 2, 2) if static_argnums == (1, 2) else (1.0, 2)
    ours, theirs = _both(fn, *args, static_argnums=static_argnums)
    assert ours == theirs


def test_static_argnums_out_of_range_is_an_error_naming_the_function():
    def f(x, y):
        return x

    with pytest.raises(ValueError) as ours:
        make_jaxpr(f, static_argnums=3)(1.0, 2.0)
    with pytest.raises(ValueError) as theirs:
        jax.make_jaxpr(f, static_argnums=3)(1.0, 2.0)
    # A deliberate difference: JAX checks static_argnums against f's signature and says
    # "Jitted function" (its make_jaxpr traces through jit); ours checks against the arguments
    # of the call and names the function.
    assert str(ours.value) == "f has static_argnums=(3,), but only accepts 2 positional arguments."
    assert str(theirs.value) == (
        "Jitted function has static_argnums=(3,), but only accepts 2 positional arguments.")


@pytest.mark.parametrize("static", [[1], {"a": 1}, np.ones(2, np.float32)],
                         ids=["list", "dict", "ndarray"])
def test_an_unhashable_static_argument_is_rejected_with_jaxs_message(static):
    def f(x, n):
        return x

    with pytest.raises(ValueError) as ours:
        make_jaxpr(f, static_argnums=1)(1.0, static)
    with pytest.raises(ValueError) as theirs:
        jax.make_jaxpr(f, static_argnums=1)(1.0, static)
    assert str(ours.value) == str(theirs.value)
    assert str(ours.value).startswith("Non-hashable static arguments are not supported. An error "
                                      "occurred while trying to hash an object of type")


def test_jnp_scalar_constructors_make_arrays_whose_operators_are_staged_as_jax():
    # jnp.float32(1.0) is a 0-d Array (not numpy's scalar), so its `+` binds `add` to the
    # current trace even with no tracer involved
    ours = make_jaxpr(lambda x: jnp.float32(1.0) + 2)(1.0)
    theirs = jax.make_jaxpr(lambda x: jax.numpy.float32(1.0) + 2)(1.0)
    assert str(ours) == str(theirs)
    assert str(ours) == "{ lambda ; a:f32[]. let b:f32[] = add 1.0:f32[] 2.0:f32[] in (b,) }"
    ours = make_jaxpr(lambda x: x * jnp.float32(1.0) + 2)(np.float32(1.0))
    theirs = jax.make_jaxpr(lambda x: x * jax.numpy.float32(1.0) + 2)(np.float32(1.0))
    assert str(ours) == str(theirs)


def test_return_shape_gives_the_output_as_shape_dtype_structs_as_jax():
    def f(x, y):
        return {"a": x * 2, "b": (y, 1.0)}

    args = (np.ones(2, np.float32), 3)
    ours, ours_shape = make_jaxpr(f, return_shape=True)(*args)
    theirs, theirs_shape = jax.make_jaxpr(f, return_shape=True)(*args)
    assert str(ours) == str(theirs) and repr(ours_shape) == repr(theirs_shape)


def test_closed_over_arrays_are_constvars_and_their_values_are_the_consts():
    w = np.arange(3, dtype=np.float32)
    closed = make_jaxpr(lambda x: olax.add(olax.mul(x, w), w))(np.ones(3, np.float32))
    assert str(closed) == str(jax.make_jaxpr(lambda x: jax.lax.add(x * w, w))(np.ones(3)))
    assert len(closed.jaxpr.constvars) == 1 and closed.consts[0] is w


def test_closed_over_float64_arrays_are_canonicalized_to_float32():
    w = np.arange(3, dtype=np.float64)
    closed = make_jaxpr(lambda x: olax.add(x, olax.convert_element_type(w, np.float32)))(
        np.ones(3, np.float32))
    assert closed.consts[0].dtype == np.float32
    assert str(closed.jaxpr.constvars[0].aval) == "float32[3]"


def test_objects_carry_jaxs_attribute_names():
    def fn(lax):
        return lambda x, y: lax.reduce_sum(lax.mul(lax.sin(x), y), (0,))

    args = (np.ones(3, np.float32), np.float32(2))
    ours, theirs = make_jaxpr(fn(olax))(*args), jax.make_jaxpr(fn(jax.lax))(*args)
    assert [e.primitive.name for e in ours.jaxpr.eqns] == [e.primitive.name for e in theirs.eqns]
    assert [sorted(e.params) for e in ours.eqns] == [sorted(e.params) for e in theirs.eqns]
    for o, t in zip(ours.eqns, theirs.eqns, strict=True):
        assert [str(v.aval) for v in o.invars] == [str(v.aval) for v in t.invars]
        assert [str(v.aval) for v in o.outvars] == [str(v.aval) for v in t.outvars]
    assert repr(ours.in_avals) == repr(theirs.in_avals)
    assert repr(ours.out_avals) == repr(theirs.out_avals)
    assert (ours.consts, theirs.consts) == ([], [])


def test_a_new_shape_dtype_or_weak_type_means_a_new_trace():
    traces = []

    def f(x):
        traces.append(x.aval)
        return olax.neg(x)

    def trace(x):
        args_flat, in_tree = tree_flatten(((x,), {}))
        flat_fun, _ = flatten_fun(lu.wrap_init(f), in_tree)
        in_type = tuple(core.get_aval(a) for a in args_flat)
        return pe._cached_trace_to_jaxpr(flat_fun, in_type)

    trace(np.ones(3, np.float32))
    trace(np.zeros(3, np.float32))  # same aval: a cache hit, no trace
    assert len(traces) == 1
    trace(np.ones(4, np.float32))  # new shape
    trace(np.ones(4, np.int32))  # new dtype
    trace(np.float32(1.0))
    trace(1.0)  # same shape and dtype, but weak
    assert [str(a) for a in traces] == ["float32[3]", "float32[4]", "int32[4]", "float32[]",
                                        "~float32[]"]


def test_constants_computed_in_python_are_folded_but_lax_calls_on_constants_are_staged():
    def fn(lax):
        def f(x):
            two = 1.0 + 1.0  # Python arithmetic: just a number by the time lax sees it
            return lax.mul(x, lax.add(two, 3.0))  # a lax call on constants is still an equation

        return f

    ours, theirs = _both(fn, 1.0)
    assert ours == theirs
    assert "add 2.0:f32[] 3.0:f32[]" in ours
