"""Printed jaxprs that must equal JAX's, down to the weak type of every binder: rank-0 reshapes,
the comparisons inside negative-index handling and floor_divide, keepdims reductions over no
axes, power's promotions, constants; and the printer's options (colors, no shapes)."""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

from stages.s02_tracing import lax as olax
from stages.s02_tracing import make_jaxpr
from stages.s02_tracing import numpy as onp

S = np.float32(2.0)
V = np.arange(3, dtype=np.float32)
C64 = np.arange(3.0)


def _binder_avals(closed):
    """Every binder's aval, weak type included (the printed text does not show it)."""
    def walk(jaxpr):
        out = [repr(v.aval) for v in [*jaxpr.invars, *jaxpr.constvars]]
        for eqn in jaxpr.eqns:
            out += [repr(v.aval) for v in eqn.outvars]
            for value in eqn.params.values():
                for sub in value if isinstance(value, tuple) else (value,):
                    if hasattr(sub, "eqns"):
                        out += walk(sub.jaxpr if hasattr(sub, "jaxpr") else sub)
        return out
    return walk(closed.jaxpr)


CASES = {
    "reshape_of_a_rank0_value": (lambda l, n: lambda x: l.reshape(x, ()), (S,), False),
    "reshape_of_a_weak_rank0_value": (lambda l, n: lambda x: l.reshape(x, ()), (2.0,), False),
    "dynamic_slice_at_a_weak_index": (
        lambda l, n: lambda x, i: l.dynamic_slice(x, (i,), (1,)), (V, 1), False),
    "floor_divide_of_weak_ints": (lambda l, n: n.floor_divide, (5, 2), True),
    "floor_divide_of_ints": (lambda l, n: n.floor_divide, (np.int32(5), 2), True),
    "sum_over_no_axes_keepdims": (
        lambda l, n: lambda x: n.sum(x, axis=(), keepdims=True), (V,), False),
    "max_over_no_axes_keepdims": (
        lambda l, n: lambda x: n.max(x, axis=(), keepdims=True), (V,), False),
    "power_by_a_weak_int": (lambda l, n: n.power, (V, 2), True),
    "power_by_an_int_array": (lambda l, n: n.power, (V, np.array([1, 2, 3])), True),
    "power_of_weak_values": (lambda l, n: n.power, (2.0, 3), True),
    "power_by_a_concrete_weak_int_array": (
        lambda l, n: lambda x: n.power(x, n.asarray(2)), (V,), False),
    "power_by_a_concrete_bool": (lambda l, n: lambda x: n.power(x, True), (V,), False),
    "a_constant_used_twice": (
        lambda l, n: lambda x: x + n.asarray(C64) * n.asarray(C64), (V,), False),
    "a_weak_0d_array_constant": (lambda l, n: lambda x: x + n.asarray(2.0), (V,), False),
    "a_0d_numpy_constant": (lambda l, n: lambda x: x + np.array(2.0), (V,), False),
    "a_list_constant": (lambda l, n: lambda x: x * n.array([1, 2, 3]), (V,), False),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_jaxpr_and_its_weak_types_are_jaxs(name):
    make, args, jitted_in_jax = CASES[name]
    ours = make_jaxpr(make(olax, onp))(*args)
    # jnp functions JAX wraps in a jit are compared with JAX's inlined ones, as ours are
    with jax.disable_jit() if jitted_in_jax else contextlib.nullcontext():
        theirs = jax.make_jaxpr(make(jax.lax, jjnp))(*args)
    assert str(ours) == str(theirs)
    assert _binder_avals(ours) == _binder_avals(theirs)


@pytest.mark.parametrize("options", [{"use_color": True}, {"use_color": False},
                                     {"print_shapes": False}, {"width": 30, "use_color": True}])
def test_pretty_print_takes_jaxs_options(options):
    def f(np_):
        return lambda x: (np_.sin(x) * 2.0, x.sum())

    ours = make_jaxpr(f(onp))(V).pretty_print(**options)
    theirs = jax.make_jaxpr(f(jjnp))(V).pretty_print(**options)
    assert ours == theirs


def test_make_jaxpr_names_itself_after_the_functions_qualname():
    class K:
        def method(self, x):
            return x

    ours, theirs = make_jaxpr(K().method), jax.make_jaxpr(K().method)
    assert (ours.__name__, ours.__qualname__) == (theirs.__name__, theirs.__qualname__)
