"""save_from_both_policies: a remat policy that saves what either of two policies saves,
splitting jaxprs exactly as JAX's (jax.checkpoint_policies.save_from_both_policies)."""

from __future__ import annotations

import jax
import pytest

from stages.s03_partial_eval import ad_checkpoint, partial_eval_jaxpr_custom

pytestmark = pytest.mark.oracle

UNKNOWNS = [False, False, False, True]  # W1, W2, x known; dx unknown
PAIRS = [("dots_saveable", "nothing_saveable"), ("nothing_saveable", "everything_saveable"),
         ("dots_with_no_batch_dims_saveable", "nothing_saveable")]


@pytest.mark.parametrize("first, second", PAIRS)
def test_the_split_under_either_policy_equals_jaxs(first, second, ours, theirs,
                                                   mlp_jvp_jaxprs):
    mine, real = mlp_jvp_jaxprs
    policy = ad_checkpoint.save_from_both_policies(ours.policies[first], ours.policies[second])
    their_policy = jax.checkpoint_policies.save_from_both_policies(
        theirs.policies[first], theirs.policies[second])
    args = (UNKNOWNS, [True] * 4, False, False)
    known, staged, out_unknowns, out_inst, num_res = partial_eval_jaxpr_custom(
        mine.jaxpr, *args, policy)
    j_known, j_staged, j_out_unknowns, j_out_inst, j_num_res = \
        theirs.pe.partial_eval_jaxpr_custom(real.jaxpr, *args, their_policy)
    assert (str(known), str(staged), num_res) == (str(j_known), str(j_staged), j_num_res)
    assert (out_unknowns, out_inst) == (list(j_out_unknowns), list(j_out_inst))


def test_a_policy_that_does_not_answer_a_bool_is_refused_as_in_jax(ours, theirs,
                                                                   mlp_jvp_jaxprs):
    mine, real = mlp_jvp_jaxprs
    args = (UNKNOWNS, [True] * 4, False, False)
    with pytest.raises(ValueError) as got:
        partial_eval_jaxpr_custom(mine.jaxpr, *args, ad_checkpoint.save_from_both_policies(
            ours.policies["dots_saveable"], lambda *_, **__: None))
    with pytest.raises(ValueError) as want:
        theirs.pe.partial_eval_jaxpr_custom(
            real.jaxpr, *args, jax.checkpoint_policies.save_from_both_policies(
                theirs.policies["dots_saveable"], lambda *_, **__: None))
    assert str(got.value) == str(want.value)
    assert "The return value of the policies should be a boolean" in str(got.value)
