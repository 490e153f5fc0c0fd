"""What a custom_vjp bwd rule may return, as JAX reads it: None for zeros of a whole subtree, a
leaf for every leaf under it, anything at all for an int argument (its cotangent is float0)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import stages.s04_autodiff as s04
from shared.testing import assert_same_typed_values


def _outcome(fn):
    try:
        return "ok", fn()
    except (TypeError, ValueError) as err:
        return type(err).__name__, str(err)


def check(bwd, args, argnums=0):
    """grad and vjp of x * y with this bwd rule, ours against JAX's: values or errors."""
    results = []
    for lib in (s04, jax):
        @lib.custom_vjp
        def f(x, y):
            return x * 2.0

        f.defvjp(lambda x, y: (x * 2.0, None), bwd)
        results.append((_outcome(lambda lib=lib, f=f: lib.grad(f, argnums)(*args)),
                        _outcome(lambda lib=lib, f=f: lib.vjp(f, *args)[1](np.float32(1.0)))))
    for ours, theirs in zip(*results, strict=True):
        assert ours[0] == theirs[0], (ours, theirs)
        if ours[0] == "ok":
            assert_same_typed_values(ours[1], theirs[1])
        else:
            assert ours[1] == theirs[1]


@pytest.mark.parametrize("bwd", [
    lambda r, g: (g, (None, None)),
    lambda r, g: (g, None),
    lambda r, g: (g, (None, 1.0)),
    lambda r, g: (g, 3.0),
], ids=["none_leaves", "none_subtree", "none_beside_a_value", "one_leaf_for_a_subtree"])
def test_none_and_prefix_cotangents_read_as_in_jax(bwd):
    check(bwd, (1.0, (2.0, 3.0)), argnums=(0, 1))


@pytest.mark.parametrize("ct", [1, 2.0, None, np.zeros((), jax.dtypes.float0)],
                         ids=["int", "float", "none", "float0"])
def test_an_int_arguments_cotangent_is_float0_whatever_bwd_returns(ct):
    check(lambda r, g: (g, ct), (1.0, 3))


@pytest.mark.parametrize("bwd", [
    lambda r, g: (np.ones(2, np.float32), None),
    lambda r, g: (1, None),
    lambda r, g: (np.float16(1), None),
    lambda r, g: (g, [1.0, 2.0]),
    lambda r, g: g,
], ids=["wrong_shape", "int_for_a_float", "float16_for_a_float32", "list_for_a_tuple",
        "not_a_tuple"])
def test_other_bwd_outputs_are_accepted_or_refused_as_jax_does(bwd):
    check(bwd, (1.0, (2.0, 3.0)))
