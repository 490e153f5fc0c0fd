"""The AOT stations, trace -> lower -> compile, each compared with JAX's where JAX has the same."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s07_caches as s07

pytestmark = pytest.mark.oracle

jnp = s02.numpy
A = np.arange(6, dtype=np.float32).reshape(2, 3)
V = np.arange(3, dtype=np.float32)


def f_of(ns):
    def f(x, y):
        return ns.dot(x, y) + 1.0
    return f


def _error(fn):
    with pytest.raises(TypeError) as info:
        fn()
    return str(info.value)


def test_trace_gives_the_jaxpr_and_out_info_jax_gives():
    ours, theirs = s07.jit(f_of(jnp)).trace(A, V), jax.jit(f_of(jjnp)).trace(A, V)
    assert str(ours.jaxpr) == str(theirs.jaxpr)
    assert ours.fun_name == theirs.fun_name == "f"
    info, jinfo = ours.out_info, theirs.out_info
    assert (info.shape, info.dtype) == (jinfo.shape, jinfo.dtype)
    assert repr(s07.jit(f_of(jnp)).eval_shape(A, V)) == \
        repr(jax.jit(f_of(jjnp)).eval_shape(A, V)) == "ShapeDtypeStruct(shape=(2,), dtype=float32)"


def test_args_info_prints_as_jaxs_weak_type_included():
    def run(jit):
        return repr(jit(lambda a, b, c: a, donate_argnums=2).lower(1.0, A, V).args_info)
    assert run(s07.jit) == run(jax.jit)


def test_a_pytree_of_outputs_and_donated_arguments_are_described():
    def g(x, y):
        return {"sum": x + y, "pair": (x, y * 2)}

    traced = s07.jit(g, donate_argnums=1).trace(V, V)
    assert [leaf.shape for leaf in jax.tree_util.tree_leaves(traced.out_info)] == [(3,)] * 3
    assert [a.donated for a in jax.tree_util.tree_leaves(traced.args_info)] == [False, True]
    # each output's key path, kept in the jaxpr's debug info for lowering to name the results
    theirs = jax.jit(lambda x, y: {"sum": x + y, "pair": (x, y * 2)}).trace(V, V)
    assert traced.jaxpr.jaxpr.debug_info.result_paths == \
        theirs.jaxpr.jaxpr.debug_info.result_paths == \
        ("result['pair'][0]", "result['pair'][1]", "result['sum']")


def test_lower_shows_the_program_and_compile_runs_it():
    lowered = s07.jit(f_of(jnp)).lower(A, V)
    assert lowered.as_text() == str(s07.jit(f_of(jnp)).trace(A, V).jaxpr)  # a jaxpr, here
    compiled = lowered.compile()
    np.testing.assert_allclose(compiled(A, V), jax.jit(f_of(jjnp)).lower(A, V).compile()(A, V))
    with pytest.raises(ValueError, match="^unknown dialect: foo$"):
        lowered.as_text(dialect="foo")
    with pytest.raises(ValueError, match="^unknown dialect: foo$"):
        jax.jit(f_of(jjnp)).lower(A, V).as_text(dialect="foo")


def test_cost_analysis_counts_flops_as_xla_does_for_a_dot_and_an_add():
    ours = s07.jit(f_of(jnp)).lower(A, V).compile().cost_analysis()
    theirs = jax.jit(f_of(jjnp)).lower(A, V).compile().cost_analysis()
    assert ours["flops"] == theirs["flops"] == 14.0  # 2*2*3 for the dot, 2 for the add
    assert s07.jit(f_of(jnp)).lower(A, V).cost_analysis()["flops"] == 14.0


@pytest.mark.parametrize("bad", ["shapes", "pytree"])
def test_calling_a_compiled_function_with_other_types_is_jaxs_error(bad):
    def run(ns, jit):
        compiled = jit(f_of(ns)).lower(A, np.ones(3, np.int32)).compile()
        if bad == "shapes":
            return _error(lambda: compiled(np.ones((2, 4), np.float32), V))
        return _error(lambda: compiled(A))

    assert run(jnp, s07.jit) == run(jjnp, jax.jit)


def test_a_compiled_function_takes_only_its_dynamic_arguments():
    def h(x, n):
        return x * n

    ours = s07.jit(h, static_argnums=1).lower(V, 3).compile()
    theirs = jax.jit(h, static_argnums=1).lower(V, 3).compile()
    np.testing.assert_allclose(ours(V), theirs(V))


def test_a_compiled_function_refuses_transformations():
    compiled = s07.jit(lambda x: x * 2.0).lower(V).compile()
    message = _error(lambda: s02.make_jaxpr(compiled)(V))
    assert message.startswith("Cannot apply JAX transformations to a function lowered and "
                              "compiled for a particular signature. Detected argument of "
                              "Tracer type")


def test_keep_unused_decides_whether_lowering_drops_an_unread_argument():
    def g(x, unused):
        return x * 2.0

    pruned = s07.jit(g).lower(V, V)
    kept = s07.jit(g, keep_unused=True).lower(V, V)
    assert pruned.as_text().startswith("{ lambda ; a:f32[3]. let")
    assert kept.as_text().startswith("{ lambda ; a:f32[3] b:f32[3]. let")
    for lowered in (pruned, kept):  # either way the compiled function takes both arguments
        np.testing.assert_allclose(lowered.compile()(V, V), V * 2.0)


def test_tracing_needs_only_shapes_and_dtypes():
    def g(x, y):
        return jnp.sin(x) * y

    spec = s07.ShapeDtypeStruct((2, 3), np.float32)
    ours = s07.jit(g).trace(spec, 2.0)
    theirs = jax.jit(lambda x, y: jjnp.sin(x) * y).trace(jax.ShapeDtypeStruct((2, 3),
                                                                              np.float32), 2.0)
    assert str(ours.jaxpr) == str(theirs.jaxpr)
    assert repr(s07.jit(g)) == f"<PjitFunction of {g!r}>" and repr(jax.jit(g)).startswith(
        "<PjitFunction of <function")
