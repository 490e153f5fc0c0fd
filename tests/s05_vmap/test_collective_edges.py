"""Collectives at their edges, against JAX: positional axes that are negative or out of range
(refused, never counted from the end into the batch axis), a mapped axis of size 0, and the
printed jaxpr of a psum_scatter of an unmapped value."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax import lax as jlax

import stages.s05_vmap as s05
from stages.s02_tracing import make_jaxpr
from stages.s02_tracing import numpy as jnp

X = np.arange(24, dtype=np.float32).reshape(4, 3, 2)
OURS = dict(vmap=s05.vmap, psum=s05.psum, pmax=s05.pmax, pmin=s05.pmin, ppermute=s05.ppermute,
            psum_scatter=s05.psum_scatter, make_jaxpr=make_jaxpr, take=jnp.take)
JAX = dict(vmap=jax.vmap, psum=jlax.psum, pmax=jlax.pmax, pmin=jlax.pmin, ppermute=jlax.ppermute,
           psum_scatter=jlax.psum_scatter, make_jaxpr=jax.make_jaxpr, take=jax.numpy.take)


def _outcome(fn):
    try:
        out = fn()
    except Exception as e:  # the same refusal, word for word
        return type(e).__name__, str(e)
    return "ok", np.asarray(out).dtype, np.asarray(out).tolist()


POSITIONAL = {
    "psum over -1 under a named vmap": lambda n: n["vmap"](lambda v: n["psum"](v, -1),
                                                           axis_name="i")(X),
    "pmax over -1 under an unnamed vmap": lambda n: n["vmap"](lambda v: n["pmax"](v, -1))(X),
    "pmin over ('i', -2)": lambda n: n["vmap"](lambda v: n["pmin"](v, ("i", -2)),
                                               axis_name="i")(X),
    "psum over axis 5 under vmap": lambda n: n["vmap"](lambda v: n["psum"](v, 5),
                                                       axis_name="i")(X),
    "pmax over -1, traced": lambda n: n["make_jaxpr"](lambda v: n["pmax"](v, -1))(X[0]),
    "pmax over (1, 1), eager": lambda n: n["pmax"](X, (1, 1)),
    "psum over ('i', 1) under vmap": lambda n: n["vmap"](lambda v: n["psum"](v, ("i", 1)),
                                                         axis_name="i")(X),
}


@pytest.mark.parametrize("case", sorted(POSITIONAL))
def test_positional_axes_are_checked_as_jaxs_and_never_reach_the_batch_axis(case):
    ours, theirs = _outcome(lambda: POSITIONAL[case](OURS)), _outcome(lambda: POSITIONAL[case](JAX))
    assert ours == theirs
    if case.startswith(("psum over -1", "pmax over -1 under")):  # a wrong sum would be a value
        assert ours[0] == "ValueError" and "out-of-bounds indices for float32[4,3,2]" in ours[1]


EMPTY = {
    "pmax, float32": lambda n: n["vmap"](lambda v: n["pmax"](v, "i"), axis_name="i",
                                         out_axes=None)(np.zeros((0, 3), np.float32)),
    "pmin, int32": lambda n: n["vmap"](lambda v: n["pmin"](v, "i"), axis_name="i",
                                       out_axes=None)(np.zeros((0, 3), np.int32)),
    "psum, int32": lambda n: n["vmap"](lambda v: n["psum"](v, "i"), axis_name="i",
                                       out_axes=None)(np.zeros((0, 3), np.int32)),
    "pmax over a positional empty axis": lambda n: n["pmax"](np.zeros((2, 0), np.float32), 1),
    "ppermute": lambda n: n["vmap"](lambda v: n["ppermute"](v, "i", []),
                                    axis_name="i")(np.zeros((0, 3), np.float32)),
    "take of nothing from an empty axis": lambda n: n["take"](
        np.zeros((0, 3), np.float32), np.zeros((5, 0), np.int32), axis=0),
    "take of something from an empty axis": lambda n: n["take"](
        np.zeros((0, 3), np.float32), np.zeros(2, np.int32), axis=0, mode="wrap"),
}


@pytest.mark.parametrize("case", sorted(EMPTY))
def test_a_mapped_axis_of_size_zero_gives_xlas_identities_as_jax(case):
    ours, theirs = _outcome(lambda: EMPTY[case](OURS)), _outcome(lambda: EMPTY[case](JAX))
    assert ours == theirs


def test_psum_scatter_of_an_unmapped_value_prints_as_jaxs():
    def f(n):
        return n["make_jaxpr"](n["vmap"](lambda a, v: n["psum_scatter"](v, "i"), in_axes=(0, None),
                                         axis_name="i"))(np.zeros(4, np.float32),
                                                         np.ones((4, 3), np.float32))
    assert str(f(OURS)) == str(f(JAX))


Y = np.random.default_rng(0).standard_normal((4, 2, 8, 3)).astype(np.float32)


@pytest.mark.parametrize("names,split_axis,concat_axis,tiled", [
    (("i", "j"), 0, 0, True), (("j", "i"), 0, 0, True), (("i", "j"), 0, 1, True),
    (("i", "j"), 0, 1, False), (("j", "i"), 1, 0, True)])
def test_all_to_all_over_several_names_of_nested_vmaps_equals_jaxs(names, split_axis,
                                                                     concat_axis, tiled):
    def run(n, x):
        f = n["vmap"](n["vmap"](lambda v: n["all_to_all"](v, names, split_axis, concat_axis,
                                                           tiled=tiled),
                                axis_name="j"), axis_name="i")
        return _outcome(lambda: f(x)), str(n["make_jaxpr"](f)(x))
    x = Y if split_axis == 0 else Y.transpose(0, 1, 3, 2)  # the split axis holds 8 = 4 * 2
    ours = run(dict(OURS, all_to_all=s05.all_to_all), x)
    theirs = run(dict(JAX, all_to_all=jlax.all_to_all), x)
    assert ours == theirs  # bit for bit: the same chunks moved, nothing computed
    assert ours[0][0] == "ok"
