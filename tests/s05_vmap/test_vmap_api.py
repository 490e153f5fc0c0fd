"""vmap's API: in_axes/out_axes as pytree prefixes, None, negative axes, axis_size, nesting."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import stages.s05_vmap as s05
from stages.s05_vmap import BatchTracer, not_mapped

f32 = np.float32
_rng = np.random.default_rng(5)


def _f(*shape):
    return _rng.standard_normal(shape).astype(f32)


def _run(lib, make, *args, **kwargs):
    return make(lib)(*args, **kwargs)


def _agree(make, *args, ours, theirs, close, tol, **kwargs):
    # the tolerance is the program's: RTOL_REDUCTION if our jaxpr of it sums
    rtol = tol.rtol_for(lambda *a: make(ours)(*a, **kwargs), *args)
    close(_run(ours, make, *args, **kwargs), _run(theirs, make, *args, **kwargs), rtol=rtol)


def test_in_axes_is_a_pytree_prefix_of_the_arguments(ours, theirs, close, tol):
    params = {"w": _f(3, 4), "b": _f(3)}
    batch = {"x": _f(4, 5), "scale": _f(5)}

    def make(lib):
        def f(p, d):
            y = lib.lax.add(lib.jnp.dot(p["w"], d["x"]), p["b"])
            return lib.lax.mul(y, d["scale"])

        return lib.vmap(f, in_axes=(None, {"x": 1, "scale": 0}))

    _agree(make, params, batch, ours=ours, theirs=theirs, close=close, tol=tol)


def test_a_list_of_in_axes_is_read_as_a_tuple(ours, theirs, close, tol):
    make = lambda lib: lib.vmap(lambda a, b: lib.lax.sub(a, b), in_axes=[1, None])
    _agree(make, _f(3, 4), _f(3), ours=ours, theirs=theirs, close=close, tol=tol)


def test_keyword_arguments_are_mapped_over_axis_0(ours, theirs, close, tol):
    make = lambda lib: lib.vmap(lambda a, b: lib.lax.mul(a, b), in_axes=(1,))
    _agree(make, _f(3, 4), b=_f(4, 3), ours=ours, theirs=theirs, close=close, tol=tol)


@pytest.mark.parametrize("in_axis, out_axis", [(0, -1), (-1, 0), (-2, -2), (1, 2), (-3, 1)])
def test_negative_axes_count_from_the_end(in_axis, out_axis, ours, theirs, close, tol):
    make = lambda lib: lib.vmap(lambda a: lib.lax.tanh(a), in_axes=in_axis, out_axes=out_axis)
    _agree(make, _f(2, 3, 4), ours=ours, theirs=theirs, close=close, tol=tol)
    assert np.shape(_run(ours, make, _f(2, 3, 4))) == (
        np.moveaxis(np.zeros((2, 3, 4)), in_axis, out_axis).shape)


def test_out_axes_is_a_pytree_prefix_of_the_outputs(ours, theirs, close, tol):
    make = lambda lib: lib.vmap(
        lambda a, c: {"y": (lib.lax.sin(a), c), "z": lib.lax.neg(a)},
        in_axes=(0, None), out_axes={"y": (1, None), "z": -1})
    _agree(make, _f(5, 2, 3), _f(2), ours=ours, theirs=theirs, close=close, tol=tol)


def test_unbatched_outputs_are_broadcast_unless_out_axes_is_none(ours, theirs, close, tol):
    make = lambda lib: lib.vmap(lambda a: (1.0, lib.lax.sin(a)), out_axes=(0, 1))
    _agree(make, _f(3, 2), ours=ours, theirs=theirs, close=close, tol=tol)
    got = ours.vmap(lambda a: 1.0, out_axes=None)(_f(3))
    assert got == 1.0 and type(got) is float


def test_axis_size_maps_a_function_of_unmapped_arguments(ours, theirs, close, tol):
    make = lambda lib: lib.vmap(lambda a: lib.lax.cos(a), in_axes=None, axis_size=4)
    _agree(make, _f(3), ours=ours, theirs=theirs, close=close, tol=tol)
    assert np.shape(_run(ours, make, _f(3))) == (4, 3)


def test_an_unmapped_argument_reaches_the_function_as_it_is(ours, theirs, close):
    scale = {"double": 2.0, "half": 0.5}
    make = lambda lib: lib.vmap(lambda a, mode: a * scale[mode], in_axes=(0, None))
    x = _f(3, 2)
    close(_run(ours, make, x, "double"), _run(theirs, make, x, "double"), rtol=1e-6)
    for lib in (ours, theirs):  # mapped, a string is refused, in the same words
        with pytest.raises(TypeError, match="Argument 'double' of type <class 'str'> is not a "
                           "valid JAX type"):
            lib.vmap(lambda a, mode: a)(_f(3, 2), "double")


@pytest.mark.parametrize("transform", ["vmap", "jacfwd", "jacrev", "hessian"])
def test_a_transformation_refuses_a_non_function_when_made_as_in_jax(transform):
    messages = []
    for lib in (s05, jax):
        with pytest.raises(TypeError) as e:
            getattr(lib, transform)(3)
        messages.append(str(e.value))
    assert messages[0] == messages[1] == "Expected a callable value, got 3"


def _generator(x):
    yield x


@pytest.mark.parametrize("transform", ["vmap", "jacfwd", "jacrev", "hessian"])
@pytest.mark.parametrize("fun", [staticmethod(abs), _generator], ids=["staticmethod", "generator"])
def test_a_staticmethod_or_a_generator_function_is_refused_when_made_as_in_jax(transform, fun):
    messages = []
    for lib in (s05, jax):
        with pytest.raises(TypeError) as e:
            getattr(lib, transform)(fun)
        messages.append(str(e.value))
    assert messages[0] == messages[1]
    assert messages[0].startswith(("staticmethod arguments are not supported, got ",
                                   "Expected a function, got a generator function: "))


def test_nested_vmap_maps_two_axes(ours, theirs, close, tol):
    # an outer product by two vmaps: the inner maps x's rows, the outer y's
    make = lambda lib: lib.vmap(lib.vmap(lambda x, y: lib.lax.mul(x, y), in_axes=(0, None)),
                                in_axes=(None, 0), out_axes=1)
    _agree(make, _f(3), _f(4), ours=ours, theirs=theirs, close=close, tol=tol)
    assert np.shape(_run(ours, make, _f(3), _f(4))) == (3, 4)


def test_vmap_under_make_jaxpr_prints_like_jax(ours, theirs):
    make = lambda lib: lib.vmap(lib.vmap(lambda a, b: lib.lax.mul(lib.lax.sin(a), b),
                                         in_axes=(0, None)), in_axes=(1, 0))
    args = (_f(2, 3, 4), _f(3))
    assert str(ours.make_jaxpr(make(ours))(*args)) == str(theirs.make_jaxpr(make(theirs))(*args))


def test_inside_vmap_a_function_sees_one_example(ours):
    seen = []

    def f(x, y):
        seen.append((x.shape, x.batch_dim, type(y).__name__))
        return x

    ours.vmap(f, in_axes=(2, None))(_f(2, 3, 4), _f(5))
    assert seen == [((2, 3), 2, "ndarray")]
    tracer = []
    ours.vmap(lambda x: tracer.append(repr(x)) or x)(_f(4, 3))
    assert tracer == ["VmapTracer(aval=float32[3], batched=float32[4,3])"]


def _both_libraries(ours):
    """(lib, its core, its batching rule table, its batch tracer type): ours, then JAX's."""
    from jax._src import core as jax_core
    from jax._src.interpreters import batching as jax_batching

    from stages.s02_tracing import core
    from stages.s05_vmap.batching import primitive_batchers

    return [(ours, core, primitive_batchers, BatchTracer),
            (None, jax_core, jax_batching.primitive_batchers, jax_batching.BatchTracer)]


def test_an_output_its_rule_leaves_unbatched_comes_back_bare_as_in_jax(ours):
    # a primitive whose value does not depend on the example (the size of one example): its
    # rule says not_mapped, and the function continues with a plain value, not a tracer
    seen = []
    results = []
    for lib, core_, batchers, tracer_type in _both_libraries(ours):
        size_p = core_.Primitive("example_size")
        size_p.def_impl(lambda x: f32(np.size(x)))
        size_p.def_abstract_eval(lambda aval, core_=core_: core_.ShapedArray((), f32))

        def ours_rule(axis_data, vals, dims):
            return f32(np.size(vals[0]) // axis_data.size), not_mapped

        def jax_rule(vals, dims):
            return f32(np.size(vals[0]) // np.shape(vals[0])[dims[0]]), None  # not_mapped

        batchers[size_p] = ours_rule if lib is ours else jax_rule

        def f(x, size_p=size_p, tracer_type=tracer_type):
            n = size_p.bind(x)
            seen.append(isinstance(n, tracer_type))
            return x * n

        vmap = ours.vmap if lib is ours else jax.vmap
        results.append(np.asarray(vmap(f)(np.ones((4, 3), f32))))
    assert seen == [False, False]
    np.testing.assert_array_equal(results[0], results[1])


def test_a_multiple_results_rules_unbatched_output_comes_back_bare_as_in_jax(ours):
    # the multiple-results twin of the test above: one output is per-example (mapped), the other
    # (the size of one example) is not; the function gets the second back as a plain value
    seen = []
    results = []
    for lib, core_, batchers, tracer_type in _both_libraries(ours):
        pair_p = core_.Primitive("doubled_and_example_size")
        pair_p.multiple_results = True
        pair_p.def_impl(lambda x: [x * f32(2), f32(np.size(x))])
        pair_p.def_abstract_eval(
            lambda aval, core_=core_: [aval, core_.ShapedArray((), f32)])

        def ours_rule(axis_data, vals, dims):
            x, = vals
            return [x * f32(2), f32(np.size(x) // axis_data.size)], [dims[0], not_mapped]

        def jax_rule(vals, dims):
            x, = vals
            return [x * f32(2), f32(np.size(x) // np.shape(x)[dims[0]])], [dims[0], None]

        batchers[pair_p] = ours_rule if lib is ours else jax_rule

        def f(x, pair_p=pair_p, tracer_type=tracer_type):
            doubled, n = pair_p.bind(x)
            seen.append((isinstance(doubled, tracer_type), isinstance(n, tracer_type)))
            return doubled * n

        vmap = ours.vmap if lib is ours else jax.vmap
        results.append(np.asarray(vmap(f)(np.ones((4, 3), f32))))
    assert seen == [(True, False), (True, False)]
    np.testing.assert_array_equal(results[0], results[1])


def test_batch_tracer_aval_drops_the_batch_axis(ours):
    from stages.s02_tracing import core
    from stages.s05_vmap.batching import AxisData, BatchTrace, TraceTag

    trace = BatchTrace(core.eval_trace, TraceTag(), AxisData(None, 4))
    t = BatchTracer(trace, np.zeros((3, 4, 5), f32), 1)
    assert t.aval == core.ShapedArray((3, 5), f32) and t.batch_dim == 1
    assert trace.to_batch_info(t)[1] == 1
    assert trace.to_batch_info(np.ones(2))[1] is not_mapped


def test_an_outer_vmaps_tracer_is_unbatched_for_an_inner_vmap(ours):
    # the inner trace sees the outer tracer as a plain value: its batch dim is not_mapped
    dims = []

    def inner(x, y):
        dims.append((x.batch_dim, isinstance(y, BatchTracer) and y.batch_dim))
        return ours.lax.add(x, y)

    ours.vmap(lambda y: ours.vmap(inner, in_axes=(0, None))(_f(4, 3), y))(_f(5, 3))
    assert dims == [(0, 0)]  # x from the inner trace; y is the outer trace's tracer
