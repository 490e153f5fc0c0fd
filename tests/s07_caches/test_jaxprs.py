"""`make_jaxpr` of programs with jit calls prints exactly as JAX's: the `jit[name=... jaxpr=...]`
equation, the inner binders named like the outer ones, a twice-used jaxpr hoisted, and jit under
jvp, vmap, grad, vjp and control flow.

Under reverse mode JAX linearizes a jit in one rule where the course runs jvp, then partial
evaluation (stage 4); both split it into the same known and unknown jits.
"""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.oracle

X3 = np.linspace(-1, 1, 3).astype(np.float32)
W = np.arange(3, dtype=np.float32)
M23 = np.ones((2, 3), np.float32)

CASES = {
    "jit": (lambda ns: ns.jit(lambda x, y: ns.jnp.sin(x) * y + 1.0), (X3, 2.0)),
    "same_jit_twice_is_hoisted": (lambda ns: (lambda g: lambda x: g(x, x) + g(x, x))(
        ns.jit(lambda a, b: ns.jnp.sin(a) * b)), (X3,)),
    "unused_output_prints_underscore_inside": (lambda ns: (lambda g: lambda x: g(x)[0])(
        ns.jit(lambda a: (a * 2.0, ns.jnp.sin(a)))), (1.0,)),
    "passthrough_and_literal_operand": (lambda ns: (lambda g: lambda x: g(x, 3.0))(
        ns.jit(lambda a, b: (a, b * 2.0))), (1.0,)),
    "closed_over_array_is_a_constvar_inside": (lambda ns: ns.jit(lambda x: x * W), (X3,)),
    "donate_and_keep_unused_are_shown": (lambda ns: ns.jit(
        lambda x, y: (x, x * 2.0), donate_argnums=0, keep_unused=True), (X3, 1.0)),
    "static_argument_is_not_an_input": (lambda ns: (lambda g: lambda x: g(x, 3))(
        ns.jit(lambda a, n: a * n, static_argnums=1)), (X3,)),
    "jit_of_jit": (lambda ns: lambda x: ns.jit(ns.jit(ns.jnp.sin))(x), (1.0,)),
    "jvp_of_jit": (lambda ns: lambda x: ns.jvp(ns.jit(lambda x: ns.jnp.sin(x) * x), (x,), (x,)),
                   (1.0,)),
    "vmap_of_jit": (lambda ns: ns.vmap(ns.jit(lambda x, y: x * y)), (X3, X3)),
    # the batch axis of the jit's output stays where the body left it; vmap moves it outside
    "vmap_of_jit_output_axis_moved_outside": (
        lambda ns: ns.vmap(ns.jit(lambda x: ns.jnp.sin(x) * 2.0), in_axes=2),
        (np.ones((3, 4, 5), np.float32),)),
    "vmap_of_jit_other_axes": (lambda ns: ns.vmap(ns.jit(lambda x, y: x * y), in_axes=(1, None)),
                               (M23, np.ones(2, np.float32))),
    "grad_of_jit": (lambda ns: ns.grad(ns.jit(lambda x: ns.jnp.sin(x) * x)), (1.0,)),
    "grad_of_a_jit_call": (lambda ns: ns.grad(
        lambda x: ns.jit(lambda x, y: ns.jnp.sin(x) * y + 1.0)(x, 2.0).sum()), (X3,)),
    "vjp_of_jit": (lambda ns: lambda x: ns.vjp(ns.jit(lambda x: ns.jnp.sin(x) * x), x)[1](x),
                   (X3,)),
    "jit_in_cond_branch": (lambda ns: lambda x: ns.cf.cond(
        x > 0, ns.jit(ns.jnp.sin), lambda a: a, x), (1.0,)),
    "jit_in_scan_body": (lambda ns: lambda x: ns.cf.scan(
        lambda c, xi: (ns.jit(lambda a, b: a * b)(c, xi), c), 1.0, x), (X3,)),
    "cond_in_jit": (lambda ns: ns.jit(lambda x: ns.cf.cond(x > 0, ns.jnp.sin, ns.jnp.cos, x)),
                    (1.0,)),
    # a custom_jvp call staged in a jit and bound again keeps its function's name
    "vmap_of_jit_of_custom_jvp": (lambda ns: ns.vmap(ns.jit(swish(ns))), (M23,)),
    "jvp_of_jit_of_custom_jvp": (lambda ns: lambda x: ns.jvp(ns.jit(swish(ns)), (x,), (x,)),
                                 (X3,)),
}


def swish(ns):
    @ns.custom_jvp
    def swish(x):
        return ns.lax.mul(x, ns.lax.logistic(x))

    @swish.defjvp
    def swish_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return swish(x), ns.lax.mul(t, ns.lax.logistic(x))
    return swish


@pytest.mark.parametrize("name", sorted(CASES))
def test_printed_jaxpr_equals_jaxs(name, ours, theirs):
    build, args = CASES[name]
    assert str(ours.make_jaxpr(build(ours))(*args)) == str(theirs.make_jaxpr(build(theirs))(*args))


def test_jit_of_grad_prints_as_jaxs_with_the_function_s_own_name(ours, theirs):
    # grad(f) is named f, as JAX's transformations name what they return: jit shows name=loss
    def build(ns):
        def loss(w, x):
            return ns.jnp.tanh(x * w).sum()
        return ns.jit(ns.vmap(ns.grad(loss), in_axes=(None, 0)))

    args = (np.float32(0.5), M23)
    got = str(ours.make_jaxpr(build(ours))(*args))
    want = str(theirs.make_jaxpr(build(theirs))(*args))
    assert "name=loss jaxpr=loss" in want
    assert got == want
