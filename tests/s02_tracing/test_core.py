"""core: avals, Primitive.bind and the trace context, tracers, eval_jaxpr, check_jaxpr."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax._src import core as jax_core

from shared.testing import RTOL_ELEMENTWISE
from stages.s02_tracing import Array, core, make_jaxpr
from stages.s02_tracing import lax as olax
from stages.s02_tracing import partial_eval as pe
from stages.s02_tracing.errors import UnexpectedTracerError
from stages.s02_tracing.partial_eval import DynamicJaxprTrace, DynamicJaxprTracer

# ------------------------------------------------------------------ ShapedArray and get_aval

AVAL_CASES = [
    ((3, 4), np.float32, False),
    ((), np.int32, False),
    ((), np.float32, True),
    ((2, 0, 5), np.uint8, False),
    ((7,), np.bool_, False),
    ((1, 1), np.complex64, True),
]


@pytest.mark.parametrize("shape,dtype,weak", AVAL_CASES)
def test_shaped_array_prints_like_jax(shape, dtype, weak):
    ours = core.ShapedArray(shape, dtype, weak)
    theirs = jax_core.ShapedArray(shape, np.dtype(dtype), weak_type=weak)
    assert repr(ours) == repr(theirs)
    assert str(ours) == str(theirs)
    assert ours.str_short() == theirs.str_short()
    assert ours.str_short(short_dtypes=True) == theirs.str_short(short_dtypes=True)
    assert (ours.ndim, ours.size) == (theirs.ndim, theirs.size)


def test_shaped_array_equality_and_hash_cover_shape_dtype_and_weak_type():
    a = core.ShapedArray((3,), np.float32)
    assert a == core.ShapedArray([3], "float32")
    assert hash(a) == hash(core.ShapedArray((3,), np.float32))
    assert a != core.ShapedArray((3,), np.float32, weak_type=True)
    assert a != core.ShapedArray((3,), np.int32)
    assert a != core.ShapedArray((4,), np.float32)
    assert a.update(weak_type=True) == core.ShapedArray((3,), np.float32, True)
    assert a.update(shape=(2, 2)).shape == (2, 2)
    assert a.update(weak_type=True).strip_weak_type() == a


VALUES = [1.0, 7, True, 2j, np.float32(1), np.float64(1), np.int64(3), np.uint8(3),
          np.ones(3), np.ones((2, 3), np.int64), np.zeros(4, np.float16), np.array(True)]


@pytest.mark.parametrize("value", VALUES, ids=lambda v: f"{type(v).__name__}")
def test_get_aval_matches_jax_including_weak_types(value):
    # JAX canonicalizes 64-bit to 32-bit (x64 off) and makes Python int/float/complex weak
    (theirs,) = jax.make_jaxpr(lambda x: x)(value).in_avals
    assert repr(core.get_aval(value)) == repr(theirs)


def test_get_aval_rejects_non_array_values():
    with pytest.raises(TypeError, match="is not a valid JAX type"):
        core.get_aval("a string")
    with pytest.raises(TypeError, match="Dtype <U1 is not a valid JAX array type"):
        core.get_aval(np.array(["a"]))


# ------------------------------------------------------------------ primitives and bind


def _toy_primitive(name: str = "toy_add") -> core.Primitive:
    p = core.Primitive(name)
    p.def_impl(lambda x, y: np.add(x, y))
    p.def_abstract_eval(lambda x, y: x)
    return p


def test_bind_outside_any_transformation_runs_the_impl_and_returns_an_array():
    # the impl runs on numpy; the result is an eager Array typed by the abstract eval
    p = _toy_primitive()
    out = p.bind(np.ones(3, np.float32), 2.0)
    assert isinstance(out, Array) and out.dtype == np.float32 and not out.weak_type
    np.testing.assert_array_equal(out, [3.0, 3.0, 3.0])
    weak = p.bind(2.0, 1.0)  # weak in, weak out, as the abstract eval says
    assert weak.weak_type and repr(weak) == repr(jax.numpy.add(2.0, 1.0))


def test_eval_trace_gives_impls_arrays_of_the_canonical_dtype():
    seen = []
    p = core.Primitive("record")
    p.def_impl(lambda *xs: seen.extend(xs) or xs[0])
    p.def_abstract_eval(lambda *avals: avals[0])
    p.bind(1.5, 2, True, np.float64(1.0), np.arange(3), p.bind(np.ones(2)))
    assert all(isinstance(x, np.ndarray) for x in seen)
    assert [x.dtype.name for x in seen] == ["float32", "float32", "int32", "bool", "float32",
                                            "int32", "float32"]


def test_missing_rules_name_the_primitive():
    p = core.Primitive("my_noimpl")
    with pytest.raises(NotImplementedError, match="Evaluation rule for 'my_noimpl' not impl"):
        p.bind(1.0)
    with pytest.raises(NotImplementedError, match="Abstract evaluation for 'my_noimpl' not impl"):
        make_jaxpr(lambda x: p.bind(x))(1.0)


def test_multiple_results_primitive_stages_one_equation_with_two_binders():
    p = core.Primitive("split2")
    p.multiple_results = True
    p.def_impl(lambda x: [x, -x])
    p.def_abstract_eval(lambda x: [x, x])
    closed = make_jaxpr(lambda x: p.bind(x))(np.ones(2, np.float32))
    assert str(closed) == "{ lambda ; a:f32[2]. let b:f32[2] c:f32[2] = split2 a in (b, c) }"
    out = core.eval_jaxpr(closed.jaxpr, closed.consts, np.ones(2, np.float32))
    np.testing.assert_array_equal(out[1], [-1.0, -1.0])


@pytest.mark.parametrize("multiple_results", [False, True])
def test_abstract_eval_must_return_a_sequence_iff_multiple_results_as_in_jax(multiple_results):
    """A list from a single-result primitive, or one aval from a multiple-results one: both are
    refused with JAX's message."""
    messages = []
    for prim, trace in ((core.Primitive, make_jaxpr), (jax_core.Primitive, jax.make_jaxpr)):
        p = prim("confused")
        p.multiple_results = multiple_results
        p.def_abstract_eval((lambda x: x) if multiple_results else (lambda x: [x]))
        with pytest.raises(ValueError) as e:
            trace(lambda x, p=p: p.bind(x))(1.0)
        messages.append(str(e.value))
    assert messages[0] == messages[1] == ("confused.abstract_eval() method should return a tuple "
                                          "or a list iff confused.multiple_results.")


# ------------------------------------------------------------------ the trace context


def test_the_current_trace_is_the_eval_trace_at_top_level_and_the_jaxpr_trace_inside():
    seen = []

    def f(x):
        seen.append(core.trace_ctx.trace)
        assert x._trace is core.trace_ctx.trace  # each tracer knows its trace
        return x

    assert core.trace_ctx.trace is core.eval_trace
    make_jaxpr(f)(1.0)
    assert isinstance(seen[0], DynamicJaxprTrace)
    assert core.trace_ctx.trace is core.eval_trace


def test_the_trace_is_restored_when_the_traced_function_raises():
    def f(x):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        make_jaxpr(f)(1.0)
    assert core.trace_ctx.trace is core.eval_trace


def test_rules_run_with_the_eval_trace_current():
    # JAX's bind does take_current_trace: a rule that binds evaluates eagerly by default.
    during = []
    p = core.Primitive("peek")
    p.def_abstract_eval(lambda x: during.append(core.trace_ctx.trace) or x)
    make_jaxpr(lambda x: p.bind(x))(1.0)
    assert during == [core.eval_trace]


def test_set_current_trace_and_take_current_trace_nest_and_restore():
    trace = DynamicJaxprTrace()
    with core.set_current_trace(trace):
        assert core.trace_ctx.trace is trace
        with core.take_current_trace() as prev:
            assert prev is trace and core.trace_ctx.trace is core.eval_trace
        assert core.trace_ctx.trace is trace
    assert core.trace_ctx.is_top_level()


def test_nested_make_jaxpr_closes_over_the_outer_tracer_as_a_constvar_like_jax():
    def run(make_jaxpr, lax):
        inner = []

        def f(x):
            inner.append(make_jaxpr(lambda y: lax.add(y, x))(1.0))
            return lax.mul(x, 2.0)

        outer = make_jaxpr(f)(3.0)
        return str(outer), str(inner[0]), repr(inner[0].consts)

    assert run(make_jaxpr, olax) == run(jax.make_jaxpr, jax.lax)


def test_a_leaked_tracer_used_later_raises_unexpected_tracer_error():
    leaked = []
    make_jaxpr(lambda x: leaked.append(x) or x)(1.0)
    with pytest.raises(UnexpectedTracerError, match="Encountered an unexpected tracer"):
        olax.sin(leaked[0])
    with pytest.raises(UnexpectedTracerError, match=r"float32\[\] wrapped in a DynamicJaxprTracer"):
        make_jaxpr(lambda y: olax.add(y, leaked[0]))(1.0)


# ------------------------------------------------------------------ tracers


def test_tracer_exposes_shape_dtype_ndim_size_and_len():
    seen = {}

    def f(x):
        seen.update(shape=x.shape, dtype=x.dtype, ndim=x.ndim, size=x.size, len=len(x))
        return x

    make_jaxpr(f)(np.ones((3, 4), np.int32))
    assert seen == dict(shape=(3, 4), dtype=np.int32, ndim=2, size=12, len=3)


def test_len_of_a_scalar_tracer_fails_like_numpy():
    with pytest.raises(TypeError, match="len.. of unsized object"):
        make_jaxpr(lambda x: len(x))(1.0)


def test_tracer_operators_forward_to_the_aval(monkeypatch):
    calls = []
    monkeypatch.setattr(core.ShapedArray, "_add", lambda aval, x, y: calls.append((x, y)) or x,
                        raising=False)

    def f(x):
        assert (x + 7) is x
        return x

    make_jaxpr(f)(1.0)
    assert len(calls) == 1 and isinstance(calls[0][0], DynamicJaxprTracer) and calls[0][1] == 7


def test_a_missing_aval_method_names_the_operation(monkeypatch):
    monkeypatch.delattr(core.ShapedArray, "_matmul", raising=False)
    with pytest.raises(TypeError, match="does not support `matmul`"):
        make_jaxpr(lambda x: x @ x)(np.ones((2, 2), np.float32))


def test_numpy_array_on_the_left_defers_to_the_tracer():
    # __array_priority__: ndarray.__mul__ returns NotImplemented, so tracer.__rmul__ runs
    c = np.arange(3, dtype=np.float32)
    closed = make_jaxpr(lambda x: c * x)(np.ones(3, np.float32))
    assert str(closed) == str(jax.make_jaxpr(lambda x: c * x)(np.ones(3, np.float32)))


def test_dynamic_jaxpr_tracer_prints_like_jaxs():
    reprs = []
    make_jaxpr(lambda x, y: reprs.extend([repr(x), repr(y)]) or x)(1.0, np.ones(3, np.float32))
    assert reprs == ["JitTracer(~float32[])", "JitTracer(float32[3])"]


# ------------------------------------------------------------------ eval_jaxpr and check_jaxpr


def _hand_built_jaxpr() -> tuple[core.Jaxpr, np.ndarray]:
    """{ lambda a:f32[3]; b:f32[3]. let c = sub b 2.0; d = add c a in (d, b) }"""
    f32 = core.ShapedArray((3,), np.float32)
    a, b, c, d = (core.Var(f32) for _ in range(4))
    two = core.Literal(2.0, core.ShapedArray((), np.float32, weak_type=True))
    eqns = [core.new_jaxpr_eqn([b, two], [c], olax.sub_p, {}),
            core.new_jaxpr_eqn([c, a], [d], olax.add_p, {})]
    return core.Jaxpr([a], [b], [d, b], eqns), np.arange(3, dtype=np.float32)


def test_eval_jaxpr_walks_the_equations():
    jaxpr, const = _hand_built_jaxpr()
    x = np.ones(3, np.float32)
    out, passthrough = core.eval_jaxpr(jaxpr, [const], x)
    np.testing.assert_array_equal(out, x - 2.0 + const)
    assert passthrough is x


def test_eval_jaxpr_binds_with_the_params_get_bind_params_gives():
    # as JAX's eval_jaxpr: a primitive may stage params other than those it binds with (stage
    # 4's custom_jvp_call stages a jaxpr and binds a function); get_bind_params turns one into
    # the other
    class Staged(core.Primitive):
        def get_bind_params(self, params):
            return {"factor": params["staged_factor"]}

    p = Staged("scale_by")
    p.def_impl(lambda x, *, factor: np.multiply(x, factor))
    p.def_abstract_eval(lambda x, *, factor: x)
    f32 = core.ShapedArray((3,), np.float32)
    a, b = core.Var(f32), core.Var(f32)
    eqn = core.new_jaxpr_eqn([a], [b], p, {"staged_factor": 3.0})
    (out,) = core.eval_jaxpr(core.Jaxpr([], [a], [b], [eqn]), [], np.ones(3, np.float32))
    np.testing.assert_array_equal(out, [3.0, 3.0, 3.0])


def test_eval_jaxpr_refuses_the_wrong_number_of_args_or_consts_as_jax_does():
    const = np.arange(3, dtype=np.float32)
    x = np.ones(3, np.float32)
    closed = make_jaxpr(lambda x: olax.add(x, const))(x)
    theirs = jax.make_jaxpr(lambda x: jax.lax.add(x, const))(x)
    assert len(closed.consts) == len(theirs.consts) == 1
    for consts, args in [([const], (x, x)), ([const], ()), ([const, const], (x,)), ([], (x,))]:
        with pytest.raises(ValueError):  # JAX: safe_map's "argument 2 is longer/shorter"
            jax_core.eval_jaxpr(theirs.jaxpr, consts, *args)
        with pytest.raises(ValueError):
            core.eval_jaxpr(closed.jaxpr, consts, *args)


def test_eval_jaxpr_under_make_jaxpr_retraces_to_the_same_program():
    const = np.arange(3, dtype=np.float32)  # a constvar, passed back in as a const
    fn = lambda lax: lambda x: lax.add(lax.mul(lax.sin(x), 2.0), lax.mul(x, const))
    x = np.linspace(0.0, 1.0, 3, dtype=np.float32)
    closed = make_jaxpr(fn(olax))(x)
    again = make_jaxpr(lambda x: core.eval_jaxpr(closed.jaxpr, closed.consts, x))(x)
    their_closed = jax.make_jaxpr(fn(jax.lax))(x)
    their_again = jax.make_jaxpr(
        lambda x: jax_core.eval_jaxpr(their_closed.jaxpr, their_closed.consts, x))(x)
    # JAX retraces its own jaxpr to the same program; ours must print as JAX's does, both times
    assert str(closed) == str(their_closed)
    assert str(again) == str(their_again) == str(their_closed)
    np.testing.assert_allclose(core.eval_jaxpr(again.jaxpr, again.consts, x)[0],
                               jax_core.eval_jaxpr(their_again.jaxpr, their_again.consts, x)[0],
                               rtol=RTOL_ELEMENTWISE)


def test_jaxpr_as_fun_runs_a_closed_jaxpr():
    jaxpr, const = _hand_built_jaxpr()
    fun = core.jaxpr_as_fun(core.ClosedJaxpr(jaxpr, [const]))
    np.testing.assert_array_equal(fun(np.full(3, 2.0, np.float32))[0], const)


def test_check_jaxpr_accepts_traced_jaxprs_and_rejects_broken_ones():
    jaxpr, _ = _hand_built_jaxpr()
    core.check_jaxpr(jaxpr)
    traced = make_jaxpr(lambda x: olax.cumsum(olax.exp(x), 0))(np.ones(3, np.float32))
    core.check_jaxpr(traced.jaxpr)
    swapped = jaxpr.replace(eqns=jaxpr.eqns[::-1])
    with pytest.raises(core.JaxprTypeError, match="used before it is bound"):
        core.check_jaxpr(swapped)
    bad_var = core.Var(core.ShapedArray((4,), np.float32))
    wrong = jaxpr.replace(eqns=[jaxpr.eqns[0].replace(outvars=[bad_var])])
    with pytest.raises(core.JaxprTypeError, match="binds float32.4. but its rule gives"):
        core.check_jaxpr(wrong)


def test_concrete_or_error_passes_values_and_names_the_context_for_tracers():
    assert core.concrete_or_error(int, np.float32(3.0)) == 3
    assert core.concrete_or_error(None, (1, 2)) == (1, 2)
    with pytest.raises(core.ConcretizationTypeError, match="the axis argument to my_op"):
        make_jaxpr(lambda x: core.concrete_or_error(int, x, "the axis argument to my_op"))(1)


def test_convert_constvars_jaxpr_makes_constants_leading_arguments():
    w = np.arange(3, dtype=np.float32)
    closed = make_jaxpr(lambda x: olax.add(x, w))(np.ones(3, np.float32))
    converted = pe.convert_constvars_jaxpr(closed.jaxpr)
    assert str(converted) == "{ lambda ; a:f32[3] b:f32[3]. let c:f32[3] = add b a in (c,) }"
    out = core.eval_jaxpr(converted, [], w, np.ones(3, np.float32))
    np.testing.assert_array_equal(out[0], w + 1)


class _Spec:
    """A stand-in for stage 11's NamedSharding: only `.spec` is read by stage 2."""

    def __init__(self, *spec):
        self.spec = spec

    def __eq__(self, other):
        return isinstance(other, _Spec) and self.spec == other.spec

    def __hash__(self):
        return hash(self.spec)


def test_a_sharding_in_the_type_prints_per_dimension_and_enters_equality():
    plain = core.ShapedArray((8, 4, 2), np.float32)
    typed = plain.update(sharding=_Spec("x", None, ("y", "z")))
    assert typed.str_short(True) == "f32[8@x,4,2@(y,z)]"
    assert typed != plain and hash(typed) != hash(plain)
    assert typed.update(weak_type=True).sharding == typed.sharding  # kept by update...
    assert typed.update(shape=(8, 4)).sharding is None  # ...unless the shape changes
