"""dce_jaxpr: equations whose outputs no used output needs are pruned; against JAX's dce_jaxpr."""

from __future__ import annotations

import numpy as np
import pytest

from shared.corpus_s02 import CASES
from stages.s02_tracing import core, eval_jaxpr, lax, make_jaxpr
from stages.s03_partial_eval import dce_jaxpr
from stages.s03_partial_eval import partial_eval as pe

IDS = [c.name for c in CASES]


def _output_masks(n: int) -> list[list[bool]]:
    masks = {(True,) * n, (False,) * n}
    masks.update(tuple(j == i for j in range(n)) for i in range(n))
    return [list(m) for m in sorted(masks)]


@pytest.mark.oracle
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_pruned_jaxpr_and_used_inputs_equal_jaxs(case, ours, theirs, helpers):
    mine, real = helpers.trace_case(case, ours), helpers.trace_case(case, theirs)
    for used in _output_masks(len(mine.jaxpr.outvars)):
        for instantiate in (False, True):
            new, used_inputs = dce_jaxpr(mine.jaxpr, used, instantiate)
            j_new, j_used_inputs = theirs.pe.dce_jaxpr(real.jaxpr, used, instantiate)
            assert used_inputs == list(j_used_inputs), f"used_outputs={used}"
            assert str(new) == str(j_new), f"used_outputs={used} instantiate={instantiate}"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_pruned_jaxpr_computes_the_used_outputs(case, ours, helpers):
    closed = helpers.trace_case(case, ours)
    args = helpers.dynamic_leaves(case)
    whole = eval_jaxpr(closed.jaxpr, closed.consts, *args)
    for used in _output_masks(len(closed.jaxpr.outvars)):
        new, used_inputs = dce_jaxpr(closed.jaxpr, used)
        kept_args = [a for a, u in zip(args, used_inputs, strict=True) if u]
        outs = eval_jaxpr(new, closed.consts, *kept_args)
        helpers.assert_same_values(outs, [w for w, u in zip(whole, used, strict=True) if u])


def test_the_backward_walk_keeps_only_what_the_used_output_needs():
    def f(x, y):
        a = lax.sin(x)
        b = lax.cos(y)  # feeds only the unused output
        return lax.mul(a, 2.0), lax.neg(b)

    closed = make_jaxpr(f)(1.0, 2.0)
    new, used_inputs = dce_jaxpr(closed.jaxpr, [True, False])
    assert used_inputs == [True, False]
    assert str(new) == (
        "{ lambda ; a:f32[]. let b:f32[] = sin a; c:f32[] = mul b 2.0:f32[] in (c,) }")


def test_instantiate_keeps_an_unread_input():
    closed = make_jaxpr(lambda x, y: lax.sin(x))(1.0, 2.0)
    new, used_inputs = dce_jaxpr(closed.jaxpr, True, instantiate=[False, True])
    assert used_inputs == [True, True]
    assert str(new) == "{ lambda ; a:f32[] b:f32[]. let c:f32[] = sin a in (c,) }"


def test_an_equation_with_an_effect_is_kept_though_unused():
    closed = make_jaxpr(lambda x: (lax.sin(x), lax.cos(x)))(1.0)
    sin_eqn = closed.jaxpr.eqns[0]
    effectful = closed.jaxpr.replace(eqns=[sin_eqn.replace(effects=frozenset({"io"})),
                                           *closed.jaxpr.eqns[1:]])
    new, _ = dce_jaxpr(effectful, [False, True])
    assert [e.primitive.name for e in new.eqns] == ["sin", "cos"]


def test_a_dce_rule_decides_for_its_primitive():
    closed = make_jaxpr(lambda x, y: lax.add(lax.sin(x), y))(1.0, 2.0)
    calls = []

    def keep_everything(used_outs, eqn):
        calls.append(used_outs)
        return [True] * len(eqn.invars), eqn

    pe.dce_rules[lax.sin_p] = keep_everything
    try:
        new, used_inputs = dce_jaxpr(closed.jaxpr, [False])
    finally:
        del pe.dce_rules[lax.sin_p]
    assert calls == [[False]] and used_inputs == [True, False]
    assert [e.primitive for e in new.eqns] == [lax.sin_p]


@pytest.mark.oracle
def test_a_rule_is_told_which_of_its_outputs_are_used_as_in_jax(ours, theirs):
    # a loop's rule prunes its body output by output: it needs each output's own verdict
    told = []
    for lib in (ours, theirs):
        calls = []

        def record(used_outs, eqn, calls=calls):
            calls.append(list(used_outs))
            return [True] * len(eqn.invars), eqn

        closed = lib.make_jaxpr(lambda x, lax=lib.lax: lax.split(x, (1, 2)))(
            np.ones(3, np.float32))
        lib.pe.dce_rules[lib.lax.split_p] = record
        try:
            lib.pe.dce_jaxpr(closed.jaxpr, [False, True])
        finally:
            del lib.pe.dce_rules[lib.lax.split_p]
        told.append(calls)
    assert told[0] == told[1] == [[False, True]]


@pytest.mark.oracle
def test_an_input_a_rule_says_it_does_not_use_is_not_kept_alive_as_in_jax(ours, theirs):
    # a kept equation makes live only the inputs its rule names: cos(y) here is pruned
    seen = []
    for lib in (ours, theirs):
        closed = lib.make_jaxpr(lambda x, y, lax=lib.lax: lax.add(lax.sin(x), lax.cos(y)))(
            1.0, 2.0)
        lib.pe.dce_rules[lib.lax.add_p] = lambda used_outs, eqn: ([True, False], eqn)
        try:
            new, used_inputs = lib.pe.dce_jaxpr(closed.jaxpr, [True])
        finally:
            del lib.pe.dce_rules[lib.lax.add_p]
        seen.append((used_inputs, [str(e.primitive) for e in new.eqns]))
    assert seen[0] == seen[1] == ([True, False], ["sin", "add"])


@pytest.mark.oracle
def test_the_equation_a_rule_hands_back_is_the_one_kept_as_in_jax(ours, theirs):
    # a rule may rewrite its equation (a loop or a jit prunes its body): the rewrite is kept
    def rewrite_to(cos_p):
        def rule(used_outs, eqn):
            return [True] * len(eqn.invars), eqn.replace(primitive=cos_p)
        return rule

    printed = []
    for lib in (ours, theirs):
        closed = lib.make_jaxpr(lambda x, y, lax=lib.lax: lax.mul(lax.sin(x), y))(1.0, 2.0)
        lib.pe.dce_rules[lib.lax.sin_p] = rewrite_to(lib.lax.cos_p)
        try:
            new, used_inputs = lib.pe.dce_jaxpr(closed.jaxpr, [True])
        finally:
            del lib.pe.dce_rules[lib.lax.sin_p]
        printed.append((str(new), list(used_inputs)))
    assert printed[0] == printed[1]
    assert [e.primitive.name for e in new.eqns] == ["cos", "mul"]


def test_dce_keeps_the_constvars():
    w = np.ones(3, np.float32)
    closed = make_jaxpr(lambda x: lax.add(x, w))(np.ones(3, np.float32))
    new, _ = dce_jaxpr(closed.jaxpr, [False])
    assert new.constvars == closed.jaxpr.constvars and new.eqns == []
    assert isinstance(new, core.Jaxpr)
