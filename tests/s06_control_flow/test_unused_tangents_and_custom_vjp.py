"""Tangents nothing reads, and forward mode over custom_vjp inside control flow, as JAX decides.

Reverse mode prunes a loop's tangents that no output reads before it transposes (so a
while_loop whose tangent is unused, or only feeds a stop_gradient, is no obstacle); forward
mode over a custom_vjp function is refused when its program is compiled, after pruning: in a
cond branch that never runs it is refused, and where nothing reads it, it is pruned away.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from shared.testing import assert_same_typed_values
from stages.s04_autodiff import stop_gradient

from .conftest import OURS, THEIRS


def _outcome(fn):
    try:
        return "ok", fn()
    except (TypeError, ValueError) as err:
        return type(err).__name__, str(err)


def assert_same_outcome(build):
    """build(ns) -> a thunk; ours and JAX's give the same values or the same error."""
    ours, theirs = _outcome(build(OURS)), _outcome(build(THEIRS))
    assert ours[0] == theirs[0], (ours, theirs)
    if ours[0] == "ok":
        assert_same_typed_values(ours[1], theirs[1], rtol=1e-5)
    else:
        assert ours[1] == theirs[1]


def _stop_gradient(ns):
    return jax.lax.stop_gradient if ns is THEIRS else stop_gradient


def _while(ns, a):
    return ns.cf.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.0), (0, a))[1]


# ------------------------------------------------------------------ reverse mode prunes

REVERSE = {
    "stop_gradient_of_a_while_of_a_closure": lambda ns: lambda a: ns.cf.scan(
        lambda c, _: (c * 3.0 + _stop_gradient(ns)(_while(ns, a)), None), a, None,
        length=2)[0],
    "stop_gradient_of_a_while_of_the_carry": lambda ns: lambda a: ns.cf.scan(
        lambda c, _: (c * 3.0 + _stop_gradient(ns)(_while(ns, c)), None), a, None,
        length=2)[0],
    "an_unused_y_from_a_while": lambda ns: lambda a: ns.cf.scan(
        lambda c, _: (c * 3.0, _while(ns, c)), a, None, length=2)[0],
    "an_unused_carry_from_a_while": lambda ns: lambda a: ns.cf.scan(
        lambda c, _: ((c[0] * 3.0, _while(ns, c[1])), None), (a, a), None, length=2)[0][0],
    "a_carry_only_stop_gradient_reads": lambda ns: lambda a: ns.cf.scan(
        lambda c, _: ((c[0] * 3.0 + _stop_gradient(ns)(c[1]), _while(ns, c[1])), None),
        (a, a), None, length=2)[0][0],
    "fori_loop_with_a_while_inside": lambda ns: lambda a: ns.cf.fori_loop(
        0, 2, lambda i, c: (c[0] * 3.0, _while(ns, c[1])), (a, a))[0],
    "cond_with_an_unused_while": lambda ns: lambda a: ns.cf.cond(
        a > 0.0, lambda x: (x * 3.0, _while(ns, x))[0], lambda x: x, a),
    "a_used_while_is_still_refused": lambda ns: lambda a: ns.cf.scan(
        lambda c, _: ((c[0] * 3.0 + c[1], _while(ns, c[1])), None), (a, a), None,
        length=2)[0][0],
}


@pytest.mark.parametrize("name", list(REVERSE))
@pytest.mark.parametrize("arg", [1.0, np.float32(0.5)], ids=["weak", "strong"])
def test_reverse_mode_prunes_unused_tangents_as_jax(name, arg):
    assert_same_outcome(lambda ns: lambda: ns.grad(REVERSE[name](ns))(arg))
    assert_same_outcome(lambda ns: lambda: ns.vjp(REVERSE[name](ns), arg)[1](np.float32(1.0)))


# ------------------------------------------------------------------ forward mode over custom_vjp


def _cv(ns):
    lib = jax if ns is THEIRS else __import__("stages.s04_autodiff", fromlist=["custom_vjp"])

    @lib.custom_vjp
    def cv(x):
        return ns.jnp.sin(x)

    cv.defvjp(lambda x: (ns.jnp.sin(x), x), lambda r, g: (g * ns.jnp.cos(r),))
    return cv


FORWARD = {
    "a_cond_branch_not_taken": lambda ns, cv: lambda x: ns.cf.cond(
        x > 10.0, cv, ns.jnp.cos, x),
    "a_cond_branch_taken": lambda ns, cv: lambda x: ns.cf.cond(x < 10.0, cv, ns.jnp.cos, x),
    "unused_in_a_cond_branch": lambda ns, cv: lambda x: ns.cf.cond(
        x > 0.0, lambda y: (cv(y), y * 2.0)[1], ns.jnp.cos, x),
    "unused_in_a_switch_branch": lambda ns, cv: lambda x: ns.cf.switch(
        1, [ns.jnp.cos, lambda y: (cv(y), y * 2.0)[1]], x),
    "unused_in_a_scan_body": lambda ns, cv: lambda x: ns.cf.scan(
        lambda c, _: (c * 2.0, (cv(c), c)[1]), x, None, length=2)[0],
    "an_unused_scan_output_in_a_branch": lambda ns, cv: lambda x: ns.cf.cond(
        x > 0.0, lambda y: ns.cf.scan(lambda c, _: (c * 2.0, cv(c)), y, None, length=2)[0],
        ns.jnp.cos, x),
    "a_scan_output": lambda ns, cv: lambda x: ns.cf.scan(
        lambda c, _: (c * 2.0, cv(c)), x, None, length=2)[0],
    "a_while_never_entered": lambda ns, cv: lambda x: ns.cf.while_loop(
        lambda c: c > 5.0, lambda c: cv(c) + c * 2.0, x),
    "unused_in_a_while_body": lambda ns, cv: lambda x: ns.cf.while_loop(
        lambda c: c < 5.0, lambda c: (cv(c), c * 2.0)[1], x),
}


@pytest.mark.parametrize("name", list(FORWARD))
def test_forward_mode_over_custom_vjp_is_decided_after_pruning(name):
    assert_same_outcome(lambda ns: lambda: ns.jvp(FORWARD[name](ns, _cv(ns)), (1.0,), (1.0,)))
    if name == "unused_in_a_while_body":
        # our while has a DCE rule (JAX's has none): linearize prunes the unused custom_vjp
        # out of the loop's linear part and runs, where JAX keeps it and refuses
        return
    assert_same_outcome(
        lambda ns: lambda: ns.linearize(FORWARD[name](ns, _cv(ns)), 1.0)[1](1.0))


@pytest.mark.parametrize("name", ["a_cond_branch_not_taken", "a_cond_branch_taken",
                                  "unused_in_a_cond_branch", "a_scan_output"])
def test_reverse_mode_over_custom_vjp_in_control_flow_is_fine(name):
    assert_same_outcome(lambda ns: lambda: ns.grad(FORWARD[name](ns, _cv(ns)))(1.0))
