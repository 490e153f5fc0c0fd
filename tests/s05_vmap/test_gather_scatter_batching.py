"""vmap of gather and the scatters, against jax.vmap: every batched/unbatched combination of
operand, indices and updates, the values and the printed jaxprs."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import jax
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
import stages.s05_vmap as s05
from shared.testing import RTOL_REDUCTION, assert_same_typed_values

OURS = SimpleNamespace(lax=s02.lax, make_jaxpr=s02.make_jaxpr, vmap=s05.vmap, grad=s04.grad)
THEIRS = SimpleNamespace(lax=jax.lax, make_jaxpr=jax.make_jaxpr, vmap=jax.vmap, grad=jax.grad)

f32 = np.float32
_rng = np.random.default_rng(23)
B = 3
XS = _rng.standard_normal((B, 5, 4)).astype(f32)
IS = np.array([[[1], [4]], [[0], [0]], [[3], [2]]], np.int32)
US = _rng.standard_normal((B, 2, 4)).astype(f32)


def _gather(lax, x, i):
    return lax.gather(x, i, lax.GatherDimensionNumbers((1,), (0,), (0,)), (1, 4), mode="clip")


def _scatter(name):
    def f(lax, x, i, u):
        return getattr(lax, name)(x, i, u, lax.ScatterDimensionNumbers((1,), (0,), (0,)))
    return f


AXES2 = [a for a in itertools.product((None, 0), repeat=2) if a != (None, None)]
AXES3 = [a for a in itertools.product((None, 0), repeat=3) if a != (None, None, None)]


def _args(axes, *batched):
    return [b if a is not None else b[0] for a, b in zip(axes, batched, strict=True)]


@pytest.mark.parametrize("in_axes", AXES2, ids=str)
def test_vmap_of_gather_matches_jax(in_axes):
    args = _args(in_axes, XS, IS)

    def run(ns):
        f = ns.vmap(lambda x, i: _gather(ns.lax, x, i), in_axes=in_axes)
        return f(*args), str(ns.make_jaxpr(f)(*args))
    (ours, ours_jaxpr), (theirs, theirs_jaxpr) = run(OURS), run(THEIRS)
    assert_same_typed_values(ours, theirs)
    assert ours_jaxpr == theirs_jaxpr


@pytest.mark.parametrize("name", ["scatter", "scatter_add", "scatter_mul", "scatter_max"])
@pytest.mark.parametrize("in_axes", AXES3, ids=str)
def test_vmap_of_scatter_matches_jax(name, in_axes):
    args = _args(in_axes, XS, IS, US)

    def run(ns):
        f = ns.vmap(lambda x, i, u: _scatter(name)(ns.lax, x, i, u), in_axes=in_axes)
        return f(*args), str(ns.make_jaxpr(f)(*args))
    (ours, ours_jaxpr), (theirs, theirs_jaxpr) = run(OURS), run(THEIRS)
    assert_same_typed_values(ours, theirs)
    assert ours_jaxpr == theirs_jaxpr


def test_per_example_gradient_of_an_embedding_lookup_matches_jax():
    table = _rng.standard_normal((10, 4)).astype(f32)
    ids = np.array([[1, 7, 1], [0, 9, 3]], np.int32)

    def run(ns):
        def loss(t, i):
            rows = ns.lax.gather(t, i[:, None], ns.lax.GatherDimensionNumbers((1,), (0,), (0,)),
                                 (1, 4), mode="clip")
            return (rows * rows).sum()
        return ns.vmap(ns.grad(loss), in_axes=(None, 0))(table, ids)
    assert_same_typed_values(run(OURS), run(THEIRS), rtol=RTOL_REDUCTION)


@pytest.mark.parametrize("in_axes", [(None, 0), (0, 0), (0, None)], ids=str)
def test_vmap_of_dynamic_slices_is_one_gather_or_scatter_as_in_jax(in_axes):
    starts = np.array([0, 3, 1], np.int32)
    args = _args(in_axes, XS, starts)

    def run(ns):
        f = ns.vmap(lambda x, s: ns.lax.dynamic_update_slice(
            x, ns.lax.dynamic_slice(x, (s, 0), (2, 4)) * 2.0, (s + 1, 0)), in_axes=in_axes)
        return f(*args), str(ns.make_jaxpr(f)(*args))
    (ours, ours_jaxpr), (theirs, theirs_jaxpr) = run(OURS), run(THEIRS)
    assert_same_typed_values(ours, theirs)
    assert ours_jaxpr == theirs_jaxpr
