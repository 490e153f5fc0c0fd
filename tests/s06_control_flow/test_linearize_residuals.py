"""linearize keeps only the residuals its linear jaxpr reads, as JAX's does (its tangent trace
prunes dead equations and the constants they read). A cond or scan whose second output's
tangent is never asked for still computes that output's residuals on the known side, but they
are not held by the linearized function: they print as `_` outputs of the loop or branch."""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import OURS, THEIRS

F32 = np.float32
X3 = np.array([0.3, -0.7, 1.2], F32)
XS4 = np.array([0.5, -0.2, 0.9, 0.1], F32)


def _programs(ns):
    cf, jnp = ns.cf, ns.jnp
    return {
        "cond_first_of_two": lambda x: cf.cond(
            x.sum() > 0, lambda x: (jnp.sin(x), jnp.cos(x)),
            lambda x: (jnp.cos(x), jnp.sin(x) * x), x)[0].sum(),
        "cond_residual_in_one_branch": lambda x: cf.cond(
            x.sum() > 0, lambda x: (jnp.sin(x) * x, x),
            lambda x: (x, jnp.exp(x)), x)[1].sum(),
        "scan_first_of_two_ys": lambda c: cf.scan(
            lambda c, x: (c * x, (jnp.sin(c), jnp.cos(c) * c)), c, XS4)[1][0].sum(),
        "scan_carry_only": lambda c: cf.scan(
            lambda c, x: (jnp.sin(c) * x, jnp.cos(c) * c), c, XS4)[0],
    }


NAMES = list(_programs(OURS))


def _arg(name):
    return F32(0.8) if name.startswith("scan") else X3


@pytest.mark.parametrize("name", NAMES)
def test_the_linearized_function_holds_jax_s_residuals(name):
    def build(ns):
        return ns.make_jaxpr(lambda x: ns.linearize(_programs(ns)[name], x))(_arg(name))

    assert str(build(OURS)) == str(build(THEIRS))


@pytest.mark.parametrize("name", NAMES)
def test_the_pruned_residuals_still_give_jax_s_tangent(name):
    ours_out, ours_jvp = OURS.linearize(_programs(OURS)[name], _arg(name))
    their_out, their_jvp = THEIRS.linearize(_programs(THEIRS)[name], _arg(name))
    t = np.ones_like(_arg(name)) * F32(0.5)
    np.testing.assert_allclose(ours_out, their_out, rtol=1e-6)
    np.testing.assert_allclose(ours_jvp(t), their_jvp(t), rtol=1e-6)
    assert len(ours_jvp.residuals) == len(THEIRS.tree_leaves(their_jvp))  # JAX's Partial
