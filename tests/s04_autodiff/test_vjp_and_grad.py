"""Reverse mode: vjp and grad of the stage-2 corpus equal jax.vjp and jax.grad, to second order."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from stages.s01_pytrees import tree_flatten
from stages.s04_autodiff import value_and_grad

pytestmark = pytest.mark.oracle


def test_vjp_matches_jax_on_the_corpus(case, ours, theirs, helpers):
    f_ours, args = helpers.dynamic(case, ours.lax, ours.jnp)
    f_theirs, _ = helpers.dynamic(case, theirs.lax, theirs.jnp)
    out, f_vjp = ours.vjp(f_ours, *args)
    want_out, their_f_vjp = theirs.vjp(f_theirs, *args)
    helpers.assert_trees_close(out, want_out, rtol=helpers.rtol_for(f_ours, *args))
    cts = helpers.random_like_tree(out, np.random.default_rng(2))
    rtol = helpers.rtol_for(lambda *a: ours.vjp(f_ours, *a)[1](cts), *args)
    helpers.assert_trees_close(f_vjp(cts), their_f_vjp(cts), rtol=rtol)


def _scalarized(f: Any, lax: Any) -> Any:
    """sum over every element of every float output: a scalar function to take grad of."""
    def g(*args: Any) -> Any:
        leaves, _ = tree_flatten(f(*args))
        total = np.float32(0.0)
        for leaf in leaves:
            dtype = leaf.dtype if hasattr(leaf, "dtype") else np.asarray(leaf).dtype
            if np.issubdtype(dtype, np.floating):
                summed = lax.reduce_sum(leaf, tuple(range(np.ndim(leaf))))
                total = lax.add(total, lax.convert_element_type(summed, np.float32))
        return total
    return g


def test_grad_matches_jax_on_the_corpus(case, ours, theirs, helpers):
    f_ours, args = helpers.dynamic(case, ours.lax, ours.jnp)
    f_theirs, _ = helpers.dynamic(case, theirs.lax, theirs.jnp)
    argnums = tuple(range(len(args)))
    got = ours.grad(_scalarized(f_ours, ours.lax), argnums, allow_int=True)(*args)
    want = theirs.grad(_scalarized(f_theirs, theirs.lax), argnums, allow_int=True)(*args)
    helpers.assert_trees_close(got, want, rtol=helpers.RTOL_REDUCTION)  # the sum of outputs


SMOOTH = {
    "tanh_of_dot": lambda lax, w, x: lax.reduce_sum(
        lax.tanh(lax.dot_general(w, x, (((1,), (0,)), ((), ())))), (0,)),
    "softplus_chain": lambda lax, w, x: lax.reduce_sum(
        lax.log1p(lax.exp(lax.mul(lax.sin(x), lax.reduce_sum(w, (0,))))), (0,)),
    "rational": lambda lax, w, x: lax.reduce_sum(
        lax.div(lax.integer_pow(x, 3), lax.add(lax.mul(x, x), 1.0)), (0,)),
}
W = np.random.default_rng(3).standard_normal((2, 3)).astype(np.float32)
X = np.random.default_rng(4).standard_normal(3).astype(np.float32)


@pytest.mark.parametrize("name", sorted(SMOOTH))
def test_grad_of_grad_matches_jax(name, ours, theirs, helpers):
    """A Hessian-vector product: grad of <grad f(x), v>."""
    v = np.linspace(-1.0, 1.0, 3, dtype=np.float32)

    def hvp(grad, lax):
        def inner(x):
            return lax.reduce_sum(lax.mul(grad(lambda x: SMOOTH[name](lax, W, x))(x), v), (0,))
        return grad(inner)

    helpers.assert_trees_close(hvp(ours.grad, ours.lax)(X), hvp(theirs.grad, theirs.lax)(X),
                               rtol=helpers.RTOL_REDUCTION)


def test_value_and_grad_with_argnums_and_aux(ours, theirs, helpers):
    import jax

    def f(lax):
        def fn(w, x, scale):
            y = lax.reduce_sum(lax.tanh(lax.dot_general(w, x, (((1,), (0,)), ((), ())))), (0,))
            return lax.mul(y, scale), {"y": y}
        return fn

    got = value_and_grad(f(ours.lax), argnums=(0, 2), has_aux=True)(W, X, 2.0)
    want = jax.value_and_grad(f(theirs.lax), argnums=(0, 2), has_aux=True)(W, X, 2.0)
    helpers.assert_trees_close(got, want, rtol=helpers.RTOL_REDUCTION)  # a dot, a sum
    g, aux = ours.grad(f(ours.lax), argnums=1, has_aux=True)(W, X, 2.0)
    helpers.assert_trees_close((g, aux), theirs.grad(f(theirs.lax), 1, has_aux=True)(W, X, 2.0),
                               rtol=helpers.RTOL_REDUCTION)


def test_grad_with_allow_int_gives_a_float0_gradient(ours, helpers):
    g = ours.grad(lambda x, i: ours.lax.mul(x, 2.0), argnums=(0, 1), allow_int=True)(1.0, 3)
    assert float(g[0]) == 2.0
    assert np.asarray(g[1]).dtype == helpers.FLOAT0


def test_grad_with_respect_to_an_unused_argument_is_zero(ours, theirs):
    assert ours.grad(lambda x, y: x, argnums=1)(1.0, 2.0) == 0.0
    assert repr(ours.grad(ours.lax.round)(1.3)) == repr(theirs.grad(theirs.lax.round)(1.3))
    assert repr(ours.grad(lambda x, y: x, argnums=1)(1.0, 2.0)) == \
        repr(theirs.grad(lambda x, y: x, argnums=1)(1.0, 2.0))


def test_max_splits_a_tie_like_jax(ours, theirs, helpers):
    x = np.array([1.0, 2.0, 2.0], np.float32)
    def reduce_max(lax):
        return lambda x: lax.reduce_max(x, (0,))

    def elementwise_max(lax):
        two = lax.broadcast_in_dim(np.float32(2.0), (3,), ())
        return lambda x: lax.reduce_sum(lax.max(x, two), (0,))

    for fn in (reduce_max, elementwise_max):
        helpers.assert_trees_close(ours.grad(fn(ours.lax))(x), theirs.grad(fn(theirs.lax))(x),
                                   rtol=helpers.RTOL_REDUCTION)


def test_an_aux_that_is_not_an_array_comes_back_untouched_like_jax(ours, theirs, helpers):
    # only JVPTracers are unwrapped from the aux: a string, an int pass through as they are
    import jax

    def f(lax):
        return lambda x: (lax.mul(x, x), {"n": 3, "s": "str", "y": lax.sin(x)})

    def run(lib, grad, value_and_grad, vjp, jvp, linearize):
        fn = f(lib.lax)
        return {"grad": grad(fn, has_aux=True)(1.5),
                "value_and_grad": value_and_grad(fn, has_aux=True)(1.5),
                "vjp": vjp(fn, 1.5, has_aux=True)[2],
                "jvp": jvp(fn, (1.5,), (1.0,), has_aux=True),
                "linearize": linearize(fn, 1.5, has_aux=True)[2]}

    got = run(ours, ours.grad, value_and_grad, ours.vjp, ours.jvp, ours.linearize)
    want = run(theirs, jax.grad, jax.value_and_grad, jax.vjp, jax.jvp, jax.linearize)
    for name in got:
        assert jax.tree_util.tree_structure(got[name]) == jax.tree_util.tree_structure(
            want[name]), name
        for o, t in zip(jax.tree_util.tree_leaves(got[name]),
                        jax.tree_util.tree_leaves(want[name]), strict=True):
            if isinstance(t, (int, str)):
                assert (type(o), o) == (type(t), t), name  # the very object, not an array
            else:
                helpers.assert_trees_close(o, t, rtol=helpers.RTOL_ELEMENTWISE)


@pytest.mark.parametrize("ct", [np.int32(0), np.float32(2.0), np.zeros(2, np.int32)],
                         ids=["int", "float", "wrong shape"])
def test_an_int_output_takes_any_cotangent_of_its_shape_as_jax(ours, theirs, ct):
    # its tangent type is float0, but JAX lets any same-shaped cotangent through
    results = []
    for ns in (ours, theirs):
        zeros = ns.jnp.zeros
        _, pullback = ns.vjp(lambda x, zeros=zeros: (x * 2.0, zeros((), np.int32) + 3),
                             np.float32(0.5))
        try:
            results.append(repr(pullback((np.float32(1.0), ct))))
        except ValueError as err:
            results.append(str(err))
    assert results[0] == results[1]


def test_a_one_element_argnums_tuple_gives_a_one_element_tuple_like_jax(ours, theirs):
    got = ours.grad(lambda x, y: ours.lax.mul(x, y), argnums=(0,))(2.0, 3.0)
    want = theirs.grad(lambda x, y: theirs.lax.mul(x, y), argnums=(0,))(2.0, 3.0)
    assert type(got) is type(want) is tuple
    assert len(got) == len(want) == 1 and float(got[0]) == float(want[0]) == 3.0
