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


def from_jax(closed: Any, primitives: dict[str, core.Primitive] | None = None,
             printed_params: dict[str, set[str]] | None = None) -> core.Jaxpr:
    """Our Jaxpr with the structure of a JAX ClosedJaxpr, sub-jaxprs in params included.

    One fresh Primitive per name unless `primitives` names one; `printed_params` keeps only the
    listed params of a primitive (for JAX print rules that hide some). JAX's sharing is kept:
    one of ours per JAX jaxpr object.
    """
    variables: dict[Any, core.Var] = {}
    primitives = dict(primitives or {})
    printed_params = printed_params or {}
    jaxprs: dict[int, core.Jaxpr] = {}

    def aval(a: Any) -> core.ShapedArray:
        return core.ShapedArray(a.shape, a.dtype, a.weak_type)

    def atom(v: Any) -> core.Atom:
        if isinstance(v, jax_core.Literal):
            return core.Literal(v.val, aval(v.aval))
        if v not in variables:
            variables[v] = core.Var(aval(v.aval))
        return variables[v]

    def param(v: Any) -> Any:
        if isinstance(v, tuple) and v and all(isinstance(j, jax_core.ClosedJaxpr) for j in v):
            return tuple(param(j) for j in v)
        if isinstance(v, jax_core.ClosedJaxpr):
            return core.ClosedJaxpr(convert(v.jaxpr), v.consts)
        return v

    def convert(jaxpr: Any) -> core.Jaxpr:
        if id(jaxpr) not in jaxprs:
            eqns = []
            for e in jaxpr.eqns:
                kept = printed_params.get(e.primitive.name, e.params)
                prim = primitives.setdefault(e.primitive.name, core.Primitive(e.primitive.name))
                eqns.append(core.JaxprEqn(
                    [atom(x) for x in e.invars], [atom(v) for v in e.outvars], prim,
                    {k: param(v) for k, v in e.params.items() if k in kept}))
            jaxprs[id(jaxpr)] = core.Jaxpr(
                [atom(v) for v in jaxpr.constvars], [atom(v) for v in jaxpr.invars],
                [atom(v) for v in jaxpr.outvars], eqns)
        return jaxprs[id(jaxpr)]

    return convert(closed.jaxpr)


@pytest.fixture(scope="session")
def jaxpr_from_jax():
    return from_jax
