"""Fidelity: our text against `jax.jit(f).lower(...).as_text()` for every program (the corpora,
their compositions, and single primitives on their edge values).

Most modules are textually identical: same ops, same SSA names, same digits, same private
functions. Each one that is not is listed in KNOWN_DIFFERENCES with the difference of its op
multiset (ours minus JAX's) and the reason. Every listed reason is upstream of this stage: the
test also proves that the jaxpr we lower differs from the jaxpr JAX lowers, so the lowering
rules are not what differs.
"""

from __future__ import annotations

import jax
import pytest

import stages.s02_tracing as s02

from .conftest import COMPOSITIONS, CORPUS, RULE_PROGRAMS, jax_text, lower_ours, op_names

# name -> (ours minus JAX's, per op name; why)
KNOWN_DIFFERENCES: dict[str, tuple[dict[str, int], str]] = {
    "jnp_where": ({"func.call": -1, "func.return": -1, "stablehlo.convert": -1},
                  "JAX's jnp.where is a jit, lowered as a call of a private @_where whose body "
                  "converts the weak 0.0; stage 2's where comes before jit (stage 7), so ours "
                  "is inline, and stage 2 folds that conversion while staging"),
    "grad_scan_pytree_carry": ({}, "our scan partial eval keeps the carry read as a constant "
                                   "of the known scan (num_consts=1), which JAX forwards away: "
                                   "the same ops, the residuals in another order"),
}

PROGRAMS = CORPUS + COMPOSITIONS + RULE_PROGRAMS
IDENTICAL_GOAL = 2 / 3


def _delta(program) -> dict[str, int]:
    ours, theirs = op_names(lower_ours(program)), op_names(jax_text(program))
    return {k: ours[k] - theirs[k] for k in sorted(set(ours) | set(theirs))
            if ours[k] != theirs[k]}


def test_at_least_two_thirds_of_the_corpus_lower_to_jaxs_exact_text():
    identical = [p.name for p in CORPUS if lower_ours(p) == jax_text(p)]
    assert len(identical) >= IDENTICAL_GOAL * len(CORPUS), (len(identical), len(CORPUS))
    everything = [p.name for p in PROGRAMS if lower_ours(p) == jax_text(p)]
    assert len(everything) >= IDENTICAL_GOAL * len(PROGRAMS), (len(everything), len(PROGRAMS))


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_our_text_is_jaxs_or_a_known_difference(program):
    if program.name not in KNOWN_DIFFERENCES:
        assert lower_ours(program) == jax_text(program)
        return
    assert lower_ours(program) != jax_text(program), "now identical: drop it from the table"
    expected, reason = KNOWN_DIFFERENCES[program.name]
    assert reason
    assert _delta(program) == expected


@pytest.mark.parametrize("name", sorted(KNOWN_DIFFERENCES))
def test_each_known_difference_comes_from_the_jaxpr_we_are_given(name):
    (program,) = [p for p in PROGRAMS if p.name == name]
    ours = s02.make_jaxpr(program.ours, static_argnums=program.static_argnums)(*program.args)
    theirs = jax.make_jaxpr(program.theirs, static_argnums=program.static_argnums)(
        *program.args)
    assert str(ours) != str(theirs)
    if name == "jnp_where":  # a jit equation, which stage 2 cannot stage
        assert "jit[" in str(theirs) and "jit[" not in str(ours)
