"""Cotangents that meet at one value are summed by add_any. Traced, its result has its first
operand's type, weak type included, as JAX's abstract rule says; run eagerly it is JAX's impl,
`lax.add`, whose result is weak only if both operands are. So an eager vjp's cotangent for a
weak Python-float input, fed by a weak and a strong cotangent, is strong, as JAX's is."""

from __future__ import annotations

import jax
import numpy as np

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
from shared.testing import assert_same_typed_values
from stages.s04_autodiff.ad_util import add_jaxvals

W = np.float32(2.0)


def f(lax, jnp):
    # s feeds a weak output (twice) and, later, a strong one through a strong eager array; the
    # backward pass meets the later use first: its cotangent, made weak as s is, comes first
    w = jnp.asarray(W)

    def fun(s):
        weak = lax.select(lax.gt(s, s), s, s)
        return s + w, weak
    return fun


def test_an_eager_vjp_sums_a_weak_and_a_strong_cotangent_as_jax_does():
    cts = (np.float32(0.5), np.float32(0.25))
    ours = s04.vjp(f(s02.lax, s02.numpy), 0.75)[1](cts)
    theirs = jax.vjp(f(jax.lax, jax.numpy), 0.75)[1](cts)
    assert_same_typed_values(ours, theirs)
    assert not ours[0].weak_type


def test_add_any_is_weak_only_if_both_operands_are_eagerly_and_the_first_one_traced():
    weak, strong = s02.numpy.asarray(1.0) * 1.0, s02.numpy.float32(1.0) * s02.numpy.ones(())
    assert weak.weak_type and not strong.weak_type
    assert add_jaxvals(weak, weak).weak_type and not add_jaxvals(weak, strong).weak_type
    traced = s02.make_jaxpr(lambda a, b: add_jaxvals(a, b))(weak, strong)
    assert traced.out_avals[0].weak_type  # the first operand's type, as JAX's add_any rule
