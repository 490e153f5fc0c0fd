"""The rule tables later stages extend, and the contract they check: a primitive that holds a
jaxpr (cond, scan, jit, remat) needs a rule in every stage-3 table; a first-order primitive is
split by the default rules."""

from __future__ import annotations

import pytest

from shared.corpus_s02 import CASES
from stages.s02_tracing import core
from stages.s03_partial_eval import dce, partial_eval_custom
from stages.s03_partial_eval import partial_eval as pe

TABLES = {
    "custom_partial_eval_rules": pe.custom_partial_eval_rules,
    "partial_eval_jaxpr_custom_rules": pe.partial_eval_jaxpr_custom_rules,
    "dce_rules": pe.dce_rules,
}


def test_the_tables_are_dicts_keyed_by_primitive_under_jaxs_names():
    assert all(isinstance(t, dict) for t in TABLES.values())
    # one dict each, wherever it is reached from: a rule registered anywhere is seen everywhere
    assert pe.partial_eval_jaxpr_custom_rules is partial_eval_custom.partial_eval_jaxpr_custom_rules
    assert pe.dce_rules is dce.dce_rules
    assert all(isinstance(p, core.Primitive) for t in TABLES.values() for p in t)


def _holds_a_jaxpr(eqn: core.JaxprEqn) -> bool:
    def is_jaxpr(v):
        return isinstance(v, (core.Jaxpr, core.ClosedJaxpr))

    return any(is_jaxpr(v) or (isinstance(v, tuple) and any(map(is_jaxpr, v)))
               for v in eqn.params.values())


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_primitive_that_holds_a_jaxpr_has_a_rule_in_every_table(case, ours, helpers):
    closed = helpers.trace_case(case, ours)
    for eqn in closed.eqns:
        if _holds_a_jaxpr(eqn):
            missing = [name for name, table in TABLES.items() if eqn.primitive not in table]
            assert not missing, f"{eqn.primitive} has no rule in {missing}"
