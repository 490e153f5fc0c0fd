"""Compiled.input_shardings and output_shardings against JAX: one SingleDeviceSharding per
argument leaf and per output leaf, in the (args, kwargs) tree and the output tree, statics left
out; the device is the client's first, printed as JAX prints it."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import stages.s07_caches as s07

ONE = np.ones(2, np.float32)
CASES = {
    "keyword": (lambda a, b=1: a * b, (ONE,), {"b": np.float32(2)}, {}),
    "tree_out": (lambda a: {"p": a, "q": (a, a)}, (ONE,), {}, {}),
    "static": (lambda a, k: a * k, (ONE, 3), {}, {"static_argnums": 1}),
    "nothing_out": (lambda a: (), (ONE,), {}, {}),
}


@pytest.mark.parametrize("f, args, kwargs, options", CASES.values(), ids=CASES.keys())
def test_compiled_shardings_are_jaxs(f, args, kwargs, options):
    ours = s07.jit(f, **options).lower(*args, **kwargs).compile()
    theirs = jax.jit(f, **options).lower(*args, **kwargs).compile()
    assert repr(ours.input_shardings) == repr(theirs.input_shardings)
    assert repr(ours.output_shardings) == repr(theirs.output_shardings)


def test_an_unread_argument_has_no_sharding_unless_kept_as_in_jax():
    def second(a, b):
        return b * 2

    for keep in (False, True):
        ours = s07.jit(second, keep_unused=keep).lower(ONE, ONE).compile()
        theirs = jax.jit(second, keep_unused=keep).lower(ONE, ONE).compile()
        assert repr(ours.input_shardings) == repr(theirs.input_shardings)
