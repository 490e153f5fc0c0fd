"""The rule table: every stage-2 primitive has a batching rule, and each rule batches the way
jax.vmap does (same values, and the same printed jaxpr where JAX has the same primitives)."""

from __future__ import annotations

import importlib
import pkgutil

import jax
import numpy as np
import pytest
from jax.extend.core import Primitive

import stages.s02_tracing as s02
import stages.s05_vmap as s05
from shared.testing import RTOL_ELEMENTWISE
from stages.s02_tracing import core
from stages.s05_vmap import batching, primitive_batchers

f32 = np.float32
_rng = np.random.default_rng(3)


def _f(*shape):
    return _rng.standard_normal(shape).astype(f32)


def _stage2_primitives() -> dict[str, core.Primitive]:
    found = {}
    for info in pkgutil.iter_modules(s02.__path__):
        module = importlib.import_module(f"stages.s02_tracing.{info.name}")
        for value in vars(module).values():
            if isinstance(value, core.Primitive):
                found[value.name] = value
    return found


def test_every_stage2_primitive_has_a_batching_rule():
    primitives = _stage2_primitives()
    assert len(primitives) >= 50  # the walk really found stage 2's primitives
    missing = sorted(name for name, p in primitives.items() if p not in primitive_batchers)
    assert missing == []


# (id, fn(lax), args, in_axes, printed jaxpr compared?) -- per-example functions of the batch
RULE_CASES = [
    ("unary_moves_nothing", lambda lax: lambda x: lax.sin(x), (_f(3, 5),), 1, True),
    ("integer_pow", lambda lax: lambda x: lax.integer_pow(x, 3), (_f(3, 5),), 1, True),
    ("convert", lambda lax: lambda x: lax.convert_element_type(x, np.int32), (_f(3, 5),), 1,
     True),
    ("binary_same_axis", lambda lax: lambda x, y: lax.mul(x, y), (_f(3, 5), _f(3, 5)), 1, True),
    ("binary_axes_differ", lambda lax: lambda x, y: lax.sub(x, y), (_f(5, 3), _f(3, 5)),
     (0, 1), True),
    ("binary_one_unbatched", lambda lax: lambda x, y: lax.max(x, y), (_f(3, 5), _f(3)),
     (1, None), True),
    ("binary_batched_scalar", lambda lax: lambda x, y: lax.add(x, y), (_f(5), _f(3)), (0, None),
     True),
    ("compare", lambda lax: lambda x, y: lax.lt(x, y), (_f(5, 3), _f(3, 5)), (0, 1), True),
    ("select_n", lambda lax: lambda c, x, y: lax.select(c, x, y),
     (_f(5, 3) > 0, _f(5, 3), _f(3)), (0, 0, None), True),
    ("select_scalar_which", lambda lax: lambda c, x, y: lax.select(c, x, y),
     (_f(5) > 0, _f(5, 3), _f(3)), (0, 0, None), True),
    ("select_unbatched_which", lambda lax: lambda c, x, y: lax.select(c, x, y),
     (_f(3) > 0, _f(3, 5), _f(3)), (None, 1, None), True),
    ("select_scalar_unbatched_which", lambda lax: lambda c, x, y: lax.select_n(c, x, y),
     (np.bool_(True), _f(3, 5), _f(5, 3)), (None, 1, 0), True),
    ("clamp_batched_bound", lambda lax: lambda lo, x, hi: lax.clamp(lo, x, hi),
     (np.array([0, 1], np.int32), np.array([5, -2], np.int32), np.int32(3)), (0, 0, None),
     True),
    ("clamp_scalar_bounds", lambda lax: lambda lo, x, hi: lax.clamp(lo, x, hi),
     (np.int32(0), np.array([5, -2], np.int32), np.int32(3)), (None, 0, None), True),
    ("clamp_array_bounds", lambda lax: lambda lo, x, hi: lax.clamp(lo, x, hi),
     (_f(3), _f(3, 5), _f(3)), (None, 1, None), True),
    ("clamp_constant_bounds_axis_1", lambda lax: lambda x: lax.clamp(0.0, x, 1.0),
     (_f(2, 3),), 1, True),
    ("mul_unbatched_scalar_axis_1", lambda lax: lambda x, s: lax.mul(x, s),
     (_f(3, 5), f32(2.0)), (1, None), True),
    ("add_constant_axis_1", lambda lax: lambda x: lax.add(x, 2.0), (_f(3, 5),), 1, True),
    ("clamp_all_on_one_axis", lambda lax: lambda lo, x, hi: lax.clamp(lo, x, hi),
     (_f(2, 3), _f(2, 3), _f(2, 3)), 1, True),
    ("clamp_vector_bounds_one_axis", lambda lax: lambda lo, x, hi: lax.clamp(lo, x, hi),
     (_f(3), _f(3, 4), _f(3)), 0, True),
    ("clamp_batched_scalar_bound", lambda lax: lambda lo, x, hi: lax.clamp(lo, x, hi),
     (_f(3), _f(2, 3), f32(1.0)), (0, 1, None), True),
    ("reduce_sum", lambda lax: lambda x: lax.reduce_sum(x, (0,)), (_f(4, 5, 6),), 1, True),
    ("reduce_max", lambda lax: lambda x: lax.reduce_max(x, (1,)), (_f(4, 5, 6),), 1, True),
    ("reduce_min", lambda lax: lambda x: lax.reduce_min(x, (0, 1)), (_f(4, 5, 6),), 2, True),
    ("argmax", lambda lax: lambda x: lax.argmax(x, 1, np.int32), (_f(4, 5, 6),), 2, True),
    ("argmin", lambda lax: lambda x: lax.argmin(x, 0, np.int32), (_f(4, 5, 6),), 0, True),
    ("cumsum", lambda lax: lambda x: lax.cumsum(x, 1, reverse=True), (_f(4, 5, 6),), 1, True),
    ("dot_both", lambda lax: lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ()))),
     (_f(2, 5, 3), _f(3, 5)), (1, 1), True),
    ("dot_lhs", lambda lax: lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ()))),
     (_f(2, 3, 5), _f(3, 4)), (2, None), True),
    ("dot_rhs", lambda lax: lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ()))),
     (_f(2, 3), _f(3, 5, 4)), (None, 1), True),
    ("dot_batch_dims", lambda lax: lambda a, b: lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
     (_f(2, 3, 5, 4), _f(2, 4, 6)), (2, None), True),
    # the vmapped axis comes before the operand's own batch dimension, which must shift past it
    ("dot_batch_dims_lhs_mapped_first",
     lambda lax: lambda a, b: lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
     (_f(5, 2, 3, 4), _f(2, 4, 6)), (0, None), True),
    ("broadcast_in_dim", lambda lax: lambda x: lax.broadcast_in_dim(x, (4, 3), (1,)),
     (_f(3, 5),), 1, True),
    ("reshape", lambda lax: lambda x: lax.reshape(x, (6,)), (_f(2, 5, 3),), 1, True),
    ("transpose", lambda lax: lambda x: lax.transpose(x, (1, 0)), (_f(2, 5, 3),), 1, True),
    ("squeeze", lambda lax: lambda x: lax.squeeze(x, (0,)), (_f(1, 5, 3),), 1, True),
    ("expand_dims", lambda lax: lambda x: lax.expand_dims(x, (0,)), (_f(5, 3),), 0, True),
    ("concatenate", lambda lax: lambda x, y: lax.concatenate([x, y], 0), (_f(2, 5), _f(3)),
     (1, None), True),
    ("pad", lambda lax: lambda x, v: lax.pad(x, v, ((1, 2, 1),)), (_f(3, 5), f32(0)),
     (1, None), True),
    ("pad_batched_value", lambda lax: lambda x, v: lax.pad(x, v, ((1, -1, 0),)),
     (_f(3, 5), _f(5)), (1, 0), True),
    ("pad_only_value_batched", lambda lax: lambda x, v: lax.pad(x, v, ((1, 1, 0),)),
     (_f(3), _f(5)), (None, 0), True),
    ("slice", lambda lax: lambda x: lax.slice(x, (1,), (4,), (2,)), (_f(4, 5),), 1, True),
    ("iota", lambda lax: lambda x: lax.add(x, lax.iota(f32, 3)), (_f(5, 3),), 0, True),
    ("dynamic_slice", lambda lax: lambda x: lax.dynamic_slice(x, (1,), (2,)), (_f(4, 5),), 1,
     False),
    ("dynamic_slice_batched_index", lambda lax: lambda x, i: lax.dynamic_slice(x, (i,), (2,)),
     (_f(4, 5), np.arange(-2, 3, dtype=np.int32)), (1, 0), False),
    ("dynamic_update_slice", lambda lax: lambda x, u: lax.dynamic_update_slice(x, u, (1,)),
     (_f(4, 5), _f(2)), (1, None), False),
    ("dynamic_update_slice_batched_index",
     lambda lax: lambda x, u, i: lax.dynamic_update_slice(x, u, (i,)),
     (_f(4), _f(2, 5), np.arange(5, dtype=np.int32)), (None, 1, 0), False),
]


@pytest.mark.parametrize("fn, args, in_axes, same_text", [c[1:] for c in RULE_CASES],
                         ids=[c[0] for c in RULE_CASES])
def test_rule_batches_like_jax(fn, args, in_axes, same_text, ours, theirs, close, tol):
    got = ours.vmap(fn(ours.lax), in_axes)(*args)
    want = theirs.vmap(fn(theirs.lax), in_axes)(*args)
    close(got, want, rtol=tol.rtol_for(ours.vmap(fn(ours.lax), in_axes), *args))
    if same_text:
        ours_jaxpr = ours.make_jaxpr(ours.vmap(fn(ours.lax), in_axes))(*args)
        jax_jaxpr = theirs.make_jaxpr(theirs.vmap(fn(theirs.lax), in_axes))(*args)
        assert str(ours_jaxpr) == str(jax_jaxpr)


def test_dot_general_adds_a_batch_dimension_when_both_operands_are_batched(ours):
    jaxpr = ours.make_jaxpr(ours.vmap(ours.jnp.dot))(np.ones((5, 2, 3), f32),
                                                      np.ones((5, 3), f32))
    assert str(jaxpr) == (
        "{ lambda ; a:f32[5,2,3] b:f32[5,3]. let\n"
        "    c:f32[5,2] = dot_general[\n"
        "      dimension_numbers=(([2], [1]), ([0], [0]))\n"
        "      preferred_element_type=float32\n"
        "    ] a b\n"
        "  in (c,) }"
    )


def test_dot_general_with_one_batched_operand_makes_it_a_free_dimension(ours):
    jaxpr = ours.make_jaxpr(ours.vmap(ours.jnp.dot, in_axes=(None, 0)))(
        np.ones((2, 3), f32), np.ones((5, 3), f32))
    text = str(jaxpr)
    assert "dot_general[\n      dimension_numbers=(([1], [1]), ([], []))" in text
    # the batch axis comes out second (rhs free dims follow lhs's); out_axes=0 moves it
    assert "d:f32[5,2] = transpose[permutation=(1, 0)] c" in text


def test_a_reduction_shifts_its_axes_past_the_batch_axis(ours):
    jaxpr = ours.make_jaxpr(ours.vmap(lambda a: ours.jnp.sum(a, axis=0), in_axes=1))(
        np.ones((4, 5, 6), f32))
    assert "b:f32[5,6] = reduce_sum[axes=(np.int64(0),) out_sharding=None] a" in str(jaxpr)


def test_an_elementwise_op_on_agreeing_axes_moves_nothing(ours):
    f = ours.vmap(lambda x, y: ours.lax.mul(ours.lax.sin(x), y), in_axes=(2, 2), out_axes=2)
    jaxpr = ours.make_jaxpr(f)(np.ones((3, 4, 5), f32), np.ones((3, 4, 5), f32))
    assert [e.primitive.name for e in jaxpr.eqns] == ["sin", "mul"]


def test_a_value_keeps_its_batch_axis_through_a_program(ours):
    seen = []

    def f(x):
        y = ours.lax.sin(x)
        z = ours.lax.reduce_sum(y, (0,))
        seen.extend([(type(t).__name__, t.batch_dim, t.aval.shape) for t in (x, y, z)])
        return z

    ours.vmap(f, in_axes=1)(np.ones((3, 5, 4), f32))
    assert seen == [("BatchTracer", 1, (3, 4)), ("BatchTracer", 1, (3, 4)),
                    ("BatchTracer", 0, (4,))]


def _noop_primitive(name: str) -> core.Primitive:
    prim = core.Primitive(name)
    prim.def_impl(lambda x: x)
    prim.def_abstract_eval(lambda aval: aval)
    return prim


def test_a_primitive_without_a_rule_is_named_in_the_error(ours):
    my_prim = _noop_primitive("my_nobatch")
    with pytest.raises(NotImplementedError, match=r"^Batching rule for 'my_nobatch' not "
                                                  r"implemented$"):
        ours.vmap(my_prim.bind)(np.ones(3, f32))


def test_a_primitive_without_a_rule_still_runs_on_unbatched_operands(ours, close):
    my_prim = _noop_primitive("my_unbatched")
    w = np.arange(3, dtype=f32)
    got = ours.vmap(lambda x: ours.lax.add(x, my_prim.bind(w)))(np.ones((2, 3), f32))
    close(got, np.ones((2, 3), f32) + w, rtol=RTOL_ELEMENTWISE)


def test_a_primitive_without_a_rule_on_unbatched_operands_is_bound_on_the_outer_trace():
    """Nothing batched: the primitive is bound on the trace under vmap's (here make_jaxpr's),
    as JAX's BatchTrace does; bound on the current trace instead, make_jaxpr's tracer escapes."""
    def text(primitive, make_jaxpr, vmap, lax):
        w, x = np.arange(3, dtype=f32), np.ones((2, 3), f32)
        return str(make_jaxpr(lambda w, x: vmap(lambda x: lax.add(x, primitive.bind(w)))(x))(
            w, x))

    theirs = Primitive("my_unbatched")
    theirs.def_impl(lambda x: x)
    theirs.def_abstract_eval(lambda aval: aval)
    ours = text(_noop_primitive("my_unbatched"), s02.make_jaxpr, s05.vmap, s02.lax)
    assert ours == text(theirs, jax.make_jaxpr, jax.vmap, jax.lax)
    assert ours.splitlines()[1].strip() == "c:f32[3] = my_unbatched a"


def test_registering_a_rule_extends_vmap_to_a_new_primitive(ours, close):
    my_double = core.Primitive("my_double")
    my_double.def_impl(lambda x: 2 * x)
    my_double.def_abstract_eval(lambda aval: aval)
    batching.defvectorized(my_double)
    try:
        x = np.arange(6, dtype=f32).reshape(2, 3)
        close(ours.vmap(my_double.bind, in_axes=1)(x), 2 * x.T, rtol=RTOL_ELEMENTWISE)
        jaxpr = ours.make_jaxpr(ours.vmap(my_double.bind, in_axes=1))(x)
        assert str(jaxpr) == ("{ lambda ; a:f32[2,3]. let\n    b:f32[2,3] = my_double a\n"
                              "    c:f32[3,2] = transpose[permutation=(1, 0)] b\n  in (c,) }")
    finally:
        del primitive_batchers[my_double]


def test_a_batched_dot_general_keeps_its_precision_as_jax_does():
    """The rule rewrites the dimension numbers and must pass the rest on: precision too."""
    def text(make_jaxpr, vmap, lax):
        def f(x, y):
            return lax.dot_general(x, y, (((1,), (0,)), ((), ())),
                                   precision=lax.Precision.HIGHEST)
        return str(make_jaxpr(vmap(f, in_axes=(0, None)))(np.ones((4, 2, 3), f32),
                                                            np.ones((3, 5), f32)))

    ours = text(s02.make_jaxpr, s05.vmap, s02.lax)
    assert ours == text(jax.make_jaxpr, jax.vmap, jax.lax)
    assert "precision=(Precision.HIGHEST, Precision.HIGHEST)" in ours
