"""The functions linearize and vjp return are pytrees whose leaves are the residuals, as JAX's
(a tree_util.Partial and an api.VJP): a transformation can return them, and vmap can batch them.
"""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import stages.s04_autodiff as s04
import stages.s05_vmap as s05
from shared.testing import assert_same_typed_values
from stages.s01_pytrees import tree_flatten, tree_leaves, tree_unflatten
from stages.s02_tracing import make_jaxpr
from stages.s02_tracing import numpy as jnp

FUNCTIONS = {
    "sin": (jnp.sin, jjnp.sin),
    "product": (lambda y: jnp.sin(y) * y, lambda y: jjnp.sin(y) * y),
    "several_outputs": (lambda y: (jnp.sin(y), y * 2, 3.0), lambda y: (jjnp.sin(y), y * 2, 3.0)),
}


# (JAX's vjp orders the residuals of `product` its own way, the primal input first: the leaves
# are the same values, in another order)
@pytest.mark.parametrize("which, name", [("linearize", n) for n in FUNCTIONS]
                         + [("vjp", "sin"), ("vjp", "several_outputs")])
def test_returning_the_function_from_a_trace_stages_its_residuals(name, which):
    ours_f, their_f = FUNCTIONS[name]
    ours = make_jaxpr(lambda x: getattr(s04, which)(ours_f, x)[1])(1.0)
    theirs = jax.make_jaxpr(lambda x: getattr(jax, which)(their_f, x)[1])(1.0)
    assert str(ours) == str(theirs)


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_the_leaves_are_the_residuals_and_rebuild_a_working_function(name):
    ours_f, their_f = FUNCTIONS[name]
    _, f_jvp = s04.linearize(ours_f, 1.0)
    _, their_f_jvp = jax.linearize(their_f, 1.0)
    assert_same_typed_values(tree_leaves(f_jvp), jax.tree_util.tree_leaves(their_f_jvp))
    leaves, treedef = tree_flatten(f_jvp)
    rebuilt = tree_unflatten(treedef, leaves)
    assert_same_typed_values(rebuilt(2.0), their_f_jvp(2.0))
    _, f_vjp = s04.vjp(ours_f, 1.0)
    leaves, treedef = tree_flatten(f_vjp)
    cts = jax.tree_util.tree_map(lambda o: np.float32(1.0), ours_f(1.0))
    _, their_f_vjp = jax.vjp(their_f, 1.0)
    assert_same_typed_values(tree_unflatten(treedef, leaves)(cts), their_f_vjp(cts))


def test_a_vjp_function_returned_from_vmap_is_batched_in_its_residuals():
    xs = np.linspace(0.1, 0.9, 3, dtype=np.float32)
    ours = s05.vmap(lambda x: s04.vjp(jnp.sin, x)[1])(xs)
    theirs = jax.vmap(lambda x: jax.vjp(jjnp.sin, x)[1])(xs)
    assert_same_typed_values(tree_leaves(ours), jax.tree_util.tree_leaves(theirs))


def test_a_vjp_function_called_with_several_arguments_gets_jaxs_error():
    _, ours = s04.vjp(lambda x: x * 2, 1.0)
    _, theirs = jax.vjp(lambda x: x * 2, 1.0)
    with pytest.raises(TypeError) as mine:
        ours(1.0, 2.0)
    with pytest.raises(TypeError) as real:
        theirs(1.0, 2.0)
    assert str(mine.value) == str(real.value)
