"""partial_eval_jaxpr_custom and the remat policies, on the jvp of a small MLP, against JAX.

The program remat splits is a jvp: primals known, tangents unknown. `mlp_jvp`
(shared/corpus_s03.py) is written by hand equation for equation as JAX's jvp emits it, which the
first test proves, so both splitters see the same jaxpr. What a policy saves crosses as
residuals; what it does not save is recomputed on the staged side.
"""

from __future__ import annotations

import contextlib
import io

import jax
import jax.ad_checkpoint
import numpy as np
import pytest

from stages.s02_tracing import core, eval_jaxpr, lax, make_jaxpr
from stages.s03_partial_eval import ad_checkpoint, partial_eval_jaxpr_custom
from stages.s03_partial_eval import partial_eval as pe

POLICIES = ["everything_saveable", "nothing_saveable", "dots_saveable",
            "dots_with_no_batch_dims_saveable"]
UNKNOWNS = [False, False, False, True]  # W1, W2, x known; dx unknown
# in_inst: whether the staged side receives each input itself. All True is how JAX's remat
# calls the splitter (the checkpointed function's inputs are saved anyway); with the known
# inputs not instantiated, the ones the staged side reads also cross as residuals.
IN_INSTS = {"inputs-available": [True] * 4, "inputs-as-residuals": UNKNOWNS}


def test_the_hand_written_jvp_is_jaxs_jvp(mlp_jvp_jaxprs):
    mine, real = mlp_jvp_jaxprs
    assert str(mine) == str(real)


@pytest.mark.oracle
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("in_inst", list(IN_INSTS), ids=list(IN_INSTS))
@pytest.mark.parametrize("ensure_out_inst", [False, True])
def test_split_under_each_policy_equals_jaxs(policy, in_inst, ensure_out_inst, ours, theirs,
                                             mlp_jvp_jaxprs):
    mine, real = mlp_jvp_jaxprs
    args = (UNKNOWNS, IN_INSTS[in_inst], False, ensure_out_inst)
    known, staged, out_unknowns, out_inst, num_res = partial_eval_jaxpr_custom(
        mine.jaxpr, *args, ours.policies[policy])
    j_known, j_staged, j_out_unknowns, j_out_inst, j_num_res = \
        theirs.pe.partial_eval_jaxpr_custom(real.jaxpr, *args, theirs.policies[policy])
    assert num_res == j_num_res
    assert str(known) == str(j_known)
    assert str(staged) == str(j_staged)
    assert (out_unknowns, out_inst) == (list(j_out_unknowns), list(j_out_inst))


# Residuals that are not inputs, per policy: the activations kept for the backward pass.
SAVED_ACTIVATIONS = {"everything_saveable": 4, "nothing_saveable": 0, "dots_saveable": 2,
                     "dots_with_no_batch_dims_saveable": 2}


@pytest.mark.parametrize("policy", POLICIES)
def test_residual_count_per_policy(policy, ours, mlp_jvp_jaxprs):
    mine, _ = mlp_jvp_jaxprs
    *_, num_res = partial_eval_jaxpr_custom(mine.jaxpr, UNKNOWNS, True, False, False,
                                            ours.policies[policy])
    assert num_res == SAVED_ACTIVATIONS[policy]


@pytest.mark.oracle
@pytest.mark.parametrize("policy", POLICIES)
def test_count_matches_jaxs_print_saved_residuals_for_checkpoint(policy, theirs, helpers):
    # print_saved_residuals(jax.checkpoint(f, policy)) lists the arguments (a checkpoint saves
    # its inputs) and then what the policy saved: the second part is our count.
    out = io.StringIO()
    f = jax.checkpoint(lambda *a: helpers.mlp(jax.lax, *a), policy=theirs.policies[policy])
    with contextlib.redirect_stdout(out):
        jax.ad_checkpoint.print_saved_residuals(f, helpers.W1, helpers.W2, helpers.X)
    lines = out.getvalue().splitlines()
    assert sum("from the argument" in line for line in lines) == 3
    assert len(lines) - 3 == SAVED_ACTIVATIONS[policy]


@pytest.mark.parametrize("policy", POLICIES)
def test_known_then_staged_computes_the_whole_jvp(policy, ours, helpers, mlp_jvp_jaxprs):
    mine, _ = mlp_jvp_jaxprs
    dx = helpers.DX
    args = [helpers.W1, helpers.W2, helpers.X, dx]
    whole = eval_jaxpr(mine.jaxpr, mine.consts, *args)
    known, staged, out_unknowns, out_inst, num_res = partial_eval_jaxpr_custom(
        mine.jaxpr, UNKNOWNS, UNKNOWNS, False, False, ours.policies[policy])
    known_outs = eval_jaxpr(known, mine.consts, *args[:3])
    primal_outs, residuals = known_outs[:-num_res], known_outs[len(known_outs) - num_res:]
    staged_outs = eval_jaxpr(staged, mine.consts, *residuals, dx)
    assert out_unknowns == [False, True]
    helpers.assert_same_values([primal_outs[0], staged_outs[-1]], whole)
    # an output the staged side also has (recomputed there) has the same value there
    staged_whole = [w for w, inst in zip(whole, out_inst, strict=True) if inst]
    helpers.assert_same_values(staged_outs, staged_whole)


def test_dots_with_no_batch_dims_does_not_save_a_batched_dot(ours, theirs):
    batched = (((2,), (1,)), ((0,), (0,)))

    def f(lax):
        def jvp_like(a, b, db):
            y = lax.dot_general(a, b, batched)
            return lax.mul(lax.tanh(y), lax.dot_general(a, db, batched))
        return jvp_like

    a, b = np.ones((2, 3, 4), np.float32), np.ones((2, 4, 5), np.float32)
    mine = make_jaxpr(f(lax))(a, b, b)
    real = theirs.make_jaxpr(f(theirs.lax))(a, b, b)
    counts = {}
    for policy in ("dots_saveable", "dots_with_no_batch_dims_saveable"):
        for closed, lib in ((mine, ours), (real, theirs)):
            *_, num_res = lib.pe.partial_eval_jaxpr_custom(
                closed.jaxpr, [False, False, True], True, False, False, lib.policies[policy])
            counts.setdefault(policy, []).append(num_res)
    # dots_saveable keeps the batched dot's output; the other recomputes it from a and b
    assert counts == {"dots_saveable": [1, 1], "dots_with_no_batch_dims_saveable": [0, 0]}


@pytest.mark.oracle
@pytest.mark.parametrize("shapes, dims, saveable", [
    (((2, 3, 4), (4, 5)), (((2,), (0,)), ((), ())), True),  # rank 3, but no batch dimension
    (((3, 4), (3, 4)), (((1,), (1,)), ((0,), (0,))), False),  # rank 2, with a batch dimension
], ids=["rank-3-unbatched", "rank-2-batched"])
def test_no_batch_dims_means_no_batch_dimension_numbers_not_a_small_rank(shapes, dims, saveable,
                                                                         ours, theirs):
    verdicts = []
    for lib in (ours, theirs):
        args = [np.ones(s, np.float32) for s in shapes]
        eqn = lib.make_jaxpr(lambda a, b, lax=lib.lax: lax.dot_general(a, b, dims))(*args).eqns[0]
        policy = lib.policies["dots_with_no_batch_dims_saveable"]
        verdicts.append(bool(policy(eqn.primitive, *[v.aval for v in eqn.invars], **eqn.params)))
    assert verdicts == [saveable, saveable]


def _with_an_effectful_sin(closed, effect):
    """`closed`'s jaxpr with its first equation (a sin) marked as having `effect`."""
    jaxpr = closed.jaxpr
    sin_eqn = jaxpr.eqns[0].replace(effects=frozenset({effect}))
    return jaxpr.replace(eqns=[sin_eqn, *jaxpr.eqns[1:]], effects=frozenset({effect}))


@pytest.mark.oracle
@pytest.mark.parametrize("in_inst", [[True, True], [False, True]],
                         ids=["inputs-available", "inputs-as-residuals"])
def test_an_effectful_equation_runs_once_on_the_known_side_like_jaxs(in_inst, ours, theirs):
    from jax._src import effects as jax_effects

    class Io(jax_effects.Effect):
        pass

    def f(lax):
        return lambda x, dx: lax.mul(lax.sin(x), dx)

    mine = _with_an_effectful_sin(ours.make_jaxpr(f(ours.lax))(1.0, 2.0), "io")
    real = _with_an_effectful_sin(theirs.make_jaxpr(f(theirs.lax))(1.0, 2.0), Io())
    # nothing is saveable, yet the effect must not happen twice: sin is not recomputed, and
    # its output crosses as a residual
    args = ([False, True], in_inst, False, False)  # x known, dx unknown
    known, staged, out_unknowns, out_inst, num_res = partial_eval_jaxpr_custom(
        mine, *args, ours.policies["nothing_saveable"])
    j_known, j_staged, j_out_unknowns, j_out_inst, j_num_res = \
        theirs.pe.partial_eval_jaxpr_custom(real, *args, theirs.policies["nothing_saveable"])
    assert str(known) == str(j_known) == "{ lambda ; a:f32[]. let b:f32[] = sin a in (b,) }"
    assert str(staged) == str(j_staged)
    assert "sin" not in str(staged)
    assert (num_res, out_unknowns, out_inst) == (j_num_res, list(j_out_unknowns),
                                                 list(j_out_inst)) == (1, [True], [True])


def test_the_policy_is_asked_about_known_equations_only(mlp_jvp_jaxprs):
    mine, _ = mlp_jvp_jaxprs
    asked = []

    def policy(prim, *avals, **params):
        asked.append(prim.name)
        return True

    partial_eval_jaxpr_custom(mine.jaxpr, UNKNOWNS, True, False, False, policy)
    primal = ["dot_general", "tanh", "sub", "dot_general", "tanh", "sub", "reduce_sum"]
    assert asked == primal


@pytest.mark.oracle
def test_the_policy_is_handed_the_operands_avals_as_in_jax(theirs, mlp_jvp_jaxprs):
    asked = []
    for split, closed in ((partial_eval_jaxpr_custom, mlp_jvp_jaxprs[0]),
                          (theirs.pe.partial_eval_jaxpr_custom, mlp_jvp_jaxprs[1])):
        seen = []

        def policy(prim, *avals, seen=seen, **params):
            seen.append((prim.name, [(a.shape, str(a.dtype)) for a in avals]))
            return True

        split(closed.jaxpr, UNKNOWNS, True, False, False, policy)
        asked.append(seen)
    assert asked[0] == asked[1]
    assert asked[0][0] == ("dot_general", [((4, 3), "float32"), ((3,), "float32")])


def test_saveable_and_recompute_markers_act_as_true_and_false(mlp_jvp_jaxprs):
    mine, _ = mlp_jvp_jaxprs
    for marker, flag in ((pe.Saveable, True), (pe.Recompute, False)):
        with_marker = partial_eval_jaxpr_custom(mine.jaxpr, UNKNOWNS, True, False, False,
                                                lambda *_, m=marker, **__: m)
        with_bool = partial_eval_jaxpr_custom(mine.jaxpr, UNKNOWNS, True, False, False,
                                              lambda *_, f=flag, **__: f)
        assert [str(j) for j in with_marker[:2]] == [str(j) for j in with_bool[:2]]


def test_a_policy_that_returns_none_is_an_error(mlp_jvp_jaxprs):
    mine, _ = mlp_jvp_jaxprs
    with pytest.raises(TypeError) as info:
        partial_eval_jaxpr_custom(mine.jaxpr, UNKNOWNS, True, False, False, lambda *_, **__: None)
    assert str(info.value) == (
        "Value returned by a remat policy should be a bool or `ad_checkpoint.Recompute`, "
        "`ad_checkpoint.Saveable`. Got None of type <class 'NoneType'>.")


def test_an_unknown_input_must_be_instantiated(mlp_jvp_jaxprs):
    mine, _ = mlp_jvp_jaxprs
    with pytest.raises(ValueError) as info:
        partial_eval_jaxpr_custom(mine.jaxpr, UNKNOWNS, False, False, False,
                                  ad_checkpoint.nothing_saveable)
    assert str(info.value) == ("input 3 (float32[3]) is unknown, so the staged side must "
                               "receive it: in_inst[3] must be True")


def test_a_table_rule_splits_its_primitive(mlp_jvp_jaxprs):
    mine, _ = mlp_jvp_jaxprs
    calls = []

    def always_staged(saveable, unks_in, inst_in, eqn):
        calls.append(list(unks_in))
        needs = [x for x, inst in zip(eqn.invars, inst_in, strict=True)
                 if isinstance(x, core.Var) and not inst]
        n = len(eqn.outvars)
        return None, eqn, [True] * n, [True] * n, needs

    pe.partial_eval_jaxpr_custom_rules[lax.tanh_p] = always_staged
    try:
        known, staged, out_unknowns, _, _ = partial_eval_jaxpr_custom(
            mine.jaxpr, UNKNOWNS, True, False, False, ad_checkpoint.everything_saveable)
    finally:
        del pe.partial_eval_jaxpr_custom_rules[lax.tanh_p]
    assert calls == [[False], [True]]  # the second tanh reads work staged after the first
    assert "tanh" not in str(known) and str(staged).count("tanh") == 2
    assert out_unknowns == [True, True]  # the primal output now depends on staged work


def test_everything_saveable_is_the_same_function_in_both_modules():
    assert ad_checkpoint.everything_saveable is pe.everything_saveable
    assert ad_checkpoint.checkpoint_dots is ad_checkpoint.dots_saveable
