"""Shared helpers for stage 2's tests: our modules and JAX's side by side, and a jaxpr converter.

`from_jax(closed_jaxpr)` rebuilds a JAX jaxpr with our classes (same vars, literals, params),
so the printer can be tested against JAX's printer on any layout JAX produces, independently of
our lax.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jax._src import core as jax_core

import stages.s02_tracing as s02
from stages.s02_tracing import core


@pytest.fixture(scope="session")
def ours() -> SimpleNamespace:
    return SimpleNamespace(make_jaxpr=s02.make_jaxpr, lax=s02.lax, jnp=s02.numpy, core=s02.core)


@pytest.fixture(scope="session")
def theirs() -> SimpleNamespace:
    return SimpleNamespace(make_jaxpr=jax.make_jaxpr, lax=jax.lax, jnp=jnp, core=jax_core)


def from_jax(closed: Any) -> core.Jaxpr:
    """Our Jaxpr with the structure of a JAX ClosedJaxpr (one fresh Primitive per name)."""
    variables: dict[Any, core.Var] = {}
    primitives: dict[str, core.Primitive] = {}

    def aval(a: Any) -> core.ShapedArray:
        return core.ShapedArray(a.shape, a.dtype, a.weak_type)

    def atom(v: Any) -> core.Atom:
        if isinstance(v, jax_core.Literal):
            return core.Literal(v.val, aval(v.aval))
        if v not in variables:
            variables[v] = core.Var(aval(v.aval))
        return variables[v]

    jaxpr = closed.jaxpr
    constvars = [atom(v) for v in jaxpr.constvars]
    invars = [atom(v) for v in jaxpr.invars]
    eqns = [
        core.JaxprEqn(
            [atom(x) for x in e.invars],
            [atom(v) for v in e.outvars],
            primitives.setdefault(e.primitive.name, core.Primitive(e.primitive.name)),
            dict(e.params),
        )
        for e in jaxpr.eqns
    ]
    return core.Jaxpr(constvars, invars, [atom(v) for v in jaxpr.outvars], eqns)


@pytest.fixture(scope="session")
def jaxpr_from_jax():
    return from_jax
