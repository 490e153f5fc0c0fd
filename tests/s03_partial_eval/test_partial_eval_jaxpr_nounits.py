"""partial_eval_jaxpr_nounits: the known/unknown split of a whole jaxpr, checked against JAX's.

For every corpus function (shared/corpus_s02.py) and several unknown masks, our known jaxpr,
unknown jaxpr, out_unknowns and residual avals equal what jax's own
`partial_eval_jaxpr_nounits` gives on jax.make_jaxpr of the same function, and running the
known jaxpr then the unknown one computes what the whole jaxpr computes.
"""

from __future__ import annotations

import numpy as np
import pytest

from shared.corpus_s02 import CASES
from stages.s02_tracing import eval_jaxpr, lax, make_jaxpr
from stages.s03_partial_eval import partial_eval_jaxpr_nounits

IDS = [c.name for c in CASES]


def _compare(ours_split, theirs_split, where: str) -> None:
    known, unknown, out_unknowns, res_avals = ours_split
    j_known, j_unknown, j_out_unknowns, j_res_avals = theirs_split
    assert str(known) == str(j_known), f"known jaxpr differs, {where}"
    assert str(unknown) == str(j_unknown), f"unknown jaxpr differs, {where}"
    assert out_unknowns == list(j_out_unknowns), where
    # ShapedArray reprs agree between ours and JAX's, weak types included
    assert [repr(a) for a in res_avals] == [repr(a) for a in j_res_avals], where


@pytest.mark.oracle
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_split_equals_jaxs_for_every_mask(case, ours, theirs, helpers):
    mine, real = helpers.trace_case(case, ours), helpers.trace_case(case, theirs)
    for mask in helpers.masks_for(len(mine.in_avals)):
        for instantiate in (False, True):
            where = f"unknowns={list(mask)} instantiate={instantiate}"
            _compare(ours.pe.partial_eval_jaxpr_nounits(mine, mask, instantiate),
                     theirs.pe.partial_eval_jaxpr_nounits(real, mask, instantiate), where)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_known_then_unknown_computes_the_whole_jaxpr(case, ours, helpers):
    closed = helpers.trace_case(case, ours)
    args = helpers.dynamic_leaves(case)
    whole = eval_jaxpr(closed.jaxpr, closed.consts, *args)
    for mask in helpers.masks_for(len(closed.in_avals)):
        for instantiate in (False, True):
            known, unknown, out_unknowns, _ = partial_eval_jaxpr_nounits(closed, mask, instantiate)
            split = helpers.run_split(known, unknown, out_unknowns, mask, args)
            helpers.assert_same_values(split, whole)


def _g(lax):
    return lambda x, y: lax.add(lax.mul(lax.sin(x), lax.cos(y)), x)


def test_residuals_are_appended_to_known_outputs_and_lead_unknown_inputs():
    closed = make_jaxpr(_g(lax))(1.0, 2.0)
    known, unknown, out_unknowns, res_avals = partial_eval_jaxpr_nounits(
        closed, [False, True], instantiate=False)
    # sin x is computed now; it and x itself (a known input the unknown side reads) cross over
    assert str(known) == "{ lambda ; a:f32[]. let b:f32[] = sin a in (b, a) }"
    assert str(unknown) == (
        "{ lambda ; a:f32[] b:f32[] c:f32[]. let\n"
        "    d:f32[] = cos c\n"
        "    e:f32[] = mul a d\n"
        "    f:f32[] = add e b\n"
        "  in (f,) }"
    )
    assert out_unknowns == [True]
    assert [str(a) for a in res_avals] == ["~float32[]", "~float32[]"]


def test_a_value_read_twice_is_one_residual(ours):
    def f(x, y):
        s = ours.lax.sin(x)
        return ours.lax.add(ours.lax.mul(s, y), ours.lax.mul(y, s))

    closed = make_jaxpr(f)(np.ones(3, np.float32), np.ones(3, np.float32))
    known, unknown, _, res_avals = partial_eval_jaxpr_nounits(closed, [False, True], False)
    assert len(res_avals) == 1
    assert str(known) == "{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }"


def test_a_known_scalar_is_inlined_not_a_residual(ours):
    # mul x 2.0: the literal is known, but a scalar goes into the unknown jaxpr as a Literal
    closed = make_jaxpr(lambda x: ours.lax.mul(x, 2.0))(np.ones(3, np.float32))
    known, unknown, _, res_avals = partial_eval_jaxpr_nounits(closed, [True], False)
    assert res_avals == []
    assert str(unknown) == "{ lambda ; a:f32[3]. let b:f32[3] = mul a 2.0:f32[] in (b,) }"


def test_unknown_work_no_output_needs_is_dropped_but_known_work_is_kept(ours):
    def f(x, y):
        ours.lax.sin(x)  # known, unused: staged into the known jaxpr as-is (printed `_`)
        ours.lax.cos(y)  # unknown, unused: never reached from an output, so never emitted
        return ours.lax.neg(y)

    closed = make_jaxpr(f)(1.0, 2.0)
    known, unknown, _, _ = partial_eval_jaxpr_nounits(closed, [False, True], False)
    assert str(known) == "{ lambda ; a:f32[]. let _:f32[] = sin a in () }"
    assert str(unknown) == "{ lambda ; a:f32[]. let b:f32[] = neg a in (b,) }"


def test_instantiate_forces_a_known_output_onto_the_unknown_side(ours):
    closed = make_jaxpr(lambda x: ours.lax.sin(x))(1.0)
    known, unknown, out_unknowns, res_avals = partial_eval_jaxpr_nounits(closed, [False], True)
    assert str(known) == "{ lambda ; a:f32[]. let b:f32[] = sin a in (b,) }"
    assert str(unknown) == "{ lambda ; a:f32[]. let  in (a,) }"  # the identity on a residual
    assert out_unknowns == [True] and len(res_avals) == 1


def test_closed_over_constants_stay_constvars_of_the_known_jaxpr(ours, theirs):
    w = np.arange(6, dtype=np.float32).reshape(2, 3)

    def f(lax):
        return lambda x, y: lax.add(lax.mul(lax.exp(w), x), lax.mul(w, y))

    x = np.ones((2, 3), np.float32)
    mine = ours.pe.partial_eval_jaxpr_nounits(make_jaxpr(f(ours.lax))(x, x), [False, True], False)
    real = theirs.pe.partial_eval_jaxpr_nounits(
        theirs.make_jaxpr(f(theirs.lax))(x, x), [False, True], False)
    _compare(mine, real, "closure constant")
    assert len(mine[0].consts) == 1 and mine[0].consts[0] is w  # w itself crosses as a residual


def test_a_mask_of_the_wrong_length_is_an_error(ours):
    closed = make_jaxpr(lambda x, y: ours.lax.add(x, y))(1.0, 2.0)
    with pytest.raises(ValueError, match="got 1 unknowns for a jaxpr of 2 inputs"):
        partial_eval_jaxpr_nounits(closed, [True], False)
