"""Printed jaxprs of vmap and control flow that must equal JAX's, weak types included: a
fori_loop with a traced bound, a batched cond forwarding an unbatched operand; and vmap's
docstring."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import stages.s05_vmap as s05
import stages.s06_control_flow as s06
from stages.s02_tracing import make_jaxpr

from .conftest import OURS, THEIRS

P = np.array([True, False])
X = np.float32(2.0)
XS = np.array([1.0, 2.0], np.float32)


def _binder_avals(jaxpr):
    out = [repr(v.aval) for v in jaxpr.invars]
    for eqn in jaxpr.eqns:
        out += [repr(v.aval) for v in eqn.outvars]
        for value in eqn.params.values():
            for sub in value if isinstance(value, tuple) else (value,):
                if hasattr(sub, "jaxpr") and hasattr(sub.jaxpr, "eqns"):
                    out += _binder_avals(sub.jaxpr)
    return out


def same_jaxpr(build, *args):
    ours = OURS.make_jaxpr(build(OURS))(*args)
    theirs = THEIRS.make_jaxpr(build(THEIRS))(*args)
    assert str(ours) == str(theirs)
    assert _binder_avals(ours.jaxpr) == _binder_avals(theirs.jaxpr)


@pytest.mark.parametrize("upper", [3, np.int32(3)], ids=["weak_bound", "int32_bound"])
@pytest.mark.parametrize("lower", [0, np.int32(0)], ids=["weak_start", "int32_start"])
def test_a_fori_loop_with_a_traced_bound_carries_jaxs_counter(lower, upper):
    same_jaxpr(lambda ns: lambda n: ns.cf.fori_loop(lower, n, lambda i, c: c + i, 0.0), upper)


FORWARDING = {
    "identity_in_both_branches": (
        lambda cf: lambda p, x: cf.cond(p, lambda y: y, lambda y: y, x), (0, None), (P, X)),
    "identity_in_one_branch": (
        lambda cf: lambda p, x: cf.cond(p, lambda y: y, lambda y: y * 2, x), (0, None), (P, X)),
    "a_forwarded_first_output": (
        lambda cf: lambda p, x, z: cf.cond(p, lambda y, w: (y, w * 2), lambda y, w: (y, w), x,
                                           z), (0, None, 0), (P, X, XS)),
    "unbatched_predicate": (
        lambda cf: lambda p, x, z: cf.cond(p, lambda y, w: (y, w * 2), lambda y, w: (y, w), x,
                                           z), (None, None, 0), (True, X, XS)),
    "switch": (
        lambda cf: lambda i, x, z: cf.switch(i, [lambda y, w: (y, w), lambda y, w: (y, w * 2),
                                                 lambda y, w: (y, -w)], x, z),
        (0, None, 0), (np.array([0, 2]), X, XS)),
}


@pytest.mark.parametrize("name", list(FORWARDING))
def test_vmap_of_cond_forwards_an_unbatched_operand_as_jax(name):
    build, in_axes, args = FORWARDING[name]
    same_jaxpr(lambda ns: ns.vmap(build(ns.cf), in_axes=in_axes), *args)


def test_vmap_rewrites_the_docstring_as_jax():
    def documented(x):
        """Its own documentation."""
        return x

    def undocumented(x):
        return x

    for fun in (documented, undocumented):
        assert s05.vmap(fun).__doc__ == jax.vmap(fun).__doc__
        assert s05.vmap(fun).__name__ == jax.vmap(fun).__name__


def test_make_jaxpr_of_a_method_matches(tmp_path):
    class K:
        def method(self, x):
            return s06.cond(x > 0, lambda y: y, lambda y: -y, x)

    assert make_jaxpr(K().method).__qualname__ == jax.make_jaxpr(K().method).__qualname__
