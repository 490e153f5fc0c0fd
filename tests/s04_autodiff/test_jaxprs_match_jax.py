"""The jaxprs of jvp and vjp print exactly as JAX's: same equations, same order, same params.

Values are compared on the whole corpus elsewhere; here the text, of every corpus case but the
one in DIFFER, which differs for a reason outside this stage (a new corpus case is compared too).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from shared.corpus_s02 import CASES
from stages.s01_pytrees import tree_flatten, tree_unflatten

pytestmark = pytest.mark.oracle

# case -> why its jvp and vjp jaxprs differ from JAX's
DIFFER = {
    # JAX's jnp.where is itself a jit: its jaxpr holds a `jit[name=_where ...]` equation
    "jnp_where": "name=_where",
}
JVP_SAME = VJP_SAME = [c.name for c in CASES if c.name not in DIFFER]


def test_the_cases_left_out_do_differ(ours, theirs):
    """DIFFER says why a case is left out: the reason must still be there in JAX's text."""
    for name, reason in DIFFER.items():
        (case,) = [c for c in CASES if c.name == name]
        g, args = _float_args_function(case, theirs.lax, theirs.jnp)
        assert reason in str(theirs.make_jaxpr(lambda *xs, g=g: theirs.jvp(g, xs, xs))(*args))


def _float_args_function(case, lax, jnp_) -> tuple[Any, list[Any]]:
    """The case as a function of its float leaves (ints are closed over as constants)."""
    leaves, tree = tree_flatten(case.args)
    floats = [i for i, x in enumerate(leaves) if np.issubdtype(np.asarray(x).dtype, np.floating)]
    fn = case.bind(lax, jnp_)

    def g(*float_leaves: Any) -> Any:
        full = list(leaves)
        for i, v in zip(floats, float_leaves, strict=True):
            full[i] = v
        return fn(*tree_unflatten(tree, full))

    return g, [leaves[i] for i in floats]


def _float_tangents(tangents: Any) -> list[Any]:
    leaves, _ = tree_flatten(tangents)
    return [t for t in leaves if getattr(t, "dtype", np.dtype("f")).kind != "V"]


def _assert_prints_like_jax(name: str, ours, theirs, transformed) -> None:
    """make_jaxpr of `transformed(lib, g)`, g the corpus case `name`: ours prints as JAX's."""
    (case,) = [c for c in CASES if c.name == name]
    g_ours, args = _float_args_function(case, ours.lax, ours.jnp)
    g_theirs, _ = _float_args_function(case, theirs.lax, theirs.jnp)
    got = ours.make_jaxpr(transformed(ours, g_ours))(*args)
    assert str(got) == str(theirs.make_jaxpr(transformed(theirs, g_theirs))(*args))


@pytest.mark.parametrize("name", JVP_SAME)
def test_jvp_jaxpr_prints_like_jax(name, ours, theirs):
    def jvp_of(lib, g):
        def h(*xs):
            primals, tangents = lib.jvp(g, xs, xs)
            return primals, _float_tangents(tangents)
        return h

    _assert_prints_like_jax(name, ours, theirs, jvp_of)


@pytest.mark.parametrize("name", VJP_SAME)
def test_vjp_jaxpr_prints_like_jax(name, ours, theirs):
    def vjp_of(lib, g):
        def h(*xs):
            out, f_vjp = lib.vjp(g, *xs)
            return f_vjp(out)
        return h

    _assert_prints_like_jax(name, ours, theirs, vjp_of)


GRADS = {
    "sin_x_times_x": (lambda lax, x: lax.mul(lax.sin(x), x), (1.0,)),
    "sum_of_squares": (lambda lax, x: lax.reduce_sum(lax.mul(x, x), (0,)),
                       (np.arange(3, dtype=np.float32),)),
    "tanh_layer": (lambda lax, w, x: lax.reduce_sum(
        lax.tanh(lax.dot_general(w, x, (((1,), (0,)), ((), ())))), (0,)),
        (np.ones((2, 3), np.float32), np.ones(3, np.float32))),
    # broadcast_in_dim's transpose: reduce_sum, then expand_dims back over the unit axes
    "broadcast_unit_axis": (lambda lax, x: lax.reduce_sum(
        lax.broadcast_in_dim(x, (3,), (0,)), (0,)), (np.ones(1, np.float32),)),
    "broadcast_unit_and_new_axes": (lambda lax, x: lax.reduce_sum(
        lax.broadcast_in_dim(x, (2, 4, 3), (0, 2)), (0, 1, 2)), (np.ones((1, 3), np.float32),)),
    # dot_general's transpose keeps the dot's precision, and finds y's batch axes where y has
    # them
    "dot_with_precision": (lambda lax, w, x: lax.reduce_sum(lax.dot_general(
        w, x, (((1,), (0,)), ((), ())), precision=lax.Precision.HIGHEST), (0,)),
        (np.ones((2, 3), np.float32), np.ones(3, np.float32))),
    "dot_rhs_batch_axis_last": (lambda lax, w, x: lax.reduce_sum(lax.dot_general(
        w, x, (((1,), (0,)), ((0,), (1,)))), (0,)),
        (np.arange(6, dtype=np.float32).reshape(2, 3), np.ones((3, 2), np.float32))),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_grad_jaxpr_prints_like_jax(name, ours, theirs):
    fn, args = GRADS[name]
    got = ours.make_jaxpr(ours.grad(lambda *a: fn(ours.lax, *a)))(*args)
    assert str(got) == str(theirs.make_jaxpr(theirs.grad(lambda *a: fn(theirs.lax, *a)))(*args))


def test_grad_of_scalar_broadcast_adds_no_reshape(ours, theirs):
    """A scalar's cotangent is the sum alone: expand_dims over no axes emits nothing."""
    args = (np.float32(1), np.ones(3, np.float32))
    got = ours.make_jaxpr(ours.grad(lambda x, y: ours.jnp.sum(x + y)))(*args)
    want = theirs.make_jaxpr(theirs.grad(lambda x, y: theirs.jnp.sum(x + y)))(*args)
    assert str(got) == str(want)


def test_select_n_jvp_makes_its_zeros_like_the_first_nonzero_tangent(ours, theirs):
    """A case without a tangent gets zeros like another case's tangent (its weak type too),
    made even when no case needs them, as JAX's rule makes them."""
    def f(lib, x):
        return lib.jvp(lambda x: lib.lax.select(lib.lax.gt(x, x), x, x), (x,), (x,))
    x = np.ones(2, np.float32)
    assert str(ours.make_jaxpr(lambda x: f(ours, x))(x)) == \
        str(theirs.make_jaxpr(lambda x: f(theirs, x))(x))

    def g(lib):  # the weak case's tangent is weak: so are the zeros, and the output
        def h(s):
            x, b = np.float32(1.0), lib.lax.gt(s, s) * s  # b is weak, x has no tangent
            return lib.lax.select(lib.lax.gt(x, b), x, b)
        return lib.jvp(h, (0.75,), (np.float32(.5),))
    (_, t_ours), (_, t_theirs) = g(ours), g(theirs)
    assert (t_ours.dtype, t_ours.weak_type) == (t_theirs.dtype, t_theirs.weak_type)
