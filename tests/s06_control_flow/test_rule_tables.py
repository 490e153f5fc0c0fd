"""Walk the tables: every new primitive has a rule in every table of stages 2-5.

A primitive is not done until each transformation knows it (DESIGN.md). cond, scan and while
hold jaxprs, so they need the stage-3 rules that split a body, not just an equation. clamp and
stop_gradient are first-order: stage 3's default rules split them, and neither is linear, so
neither has a transpose rule (as in JAX).
"""

from __future__ import annotations

import pytest

import stages.s06_control_flow as s06
from stages.s02_tracing.core import Primitive
from stages.s03_partial_eval import partial_eval as pe
from stages.s04_autodiff import ad
from stages.s05_vmap import batching

HOLDS_A_JAXPR = [s06.cond_p, s06.scan_p, s06.while_p]
FIRST_ORDER = [s06.clamp_p, s06.stop_gradient_p]
NEW = HOLDS_A_JAXPR + FIRST_ORDER


@pytest.mark.parametrize("prim", NEW, ids=str)
def test_stage_2_impl_and_abstract_eval_are_defined(prim):
    # the class defaults raise NotImplementedError; a defined rule lives on the instance
    assert prim.impl is not Primitive.impl.__get__(prim)
    assert "impl" in vars(prim) and "abstract_eval" in vars(prim)


@pytest.mark.parametrize("table", ["custom_partial_eval_rules",
                                   "partial_eval_jaxpr_custom_rules", "dce_rules"])
@pytest.mark.parametrize("prim", HOLDS_A_JAXPR, ids=str)
def test_stage_3_rules_split_the_body(prim, table):
    assert prim in getattr(pe, table)


@pytest.mark.parametrize("prim", NEW, ids=str)
def test_stage_4_jvp_rule(prim):
    assert prim in ad.primitive_jvps


@pytest.mark.parametrize("prim", HOLDS_A_JAXPR, ids=str)
def test_stage_4_transpose_rule(prim):
    # while's rule is the refusal with JAX's message (test_errors.py)
    assert prim in ad.primitive_transposes


@pytest.mark.parametrize("prim", FIRST_ORDER, ids=str)
def test_nonlinear_first_order_primitives_have_no_transpose_rule(prim):
    assert prim not in ad.primitive_transposes


@pytest.mark.parametrize("prim", NEW, ids=str)
def test_stage_5_batching_rule(prim):
    assert prim in batching.primitive_batchers


def test_the_tables_hold_nothing_else_from_this_stage():
    # every primitive this stage defines is in the list walked above
    defined = {v for mod in (s06.conditionals, s06.loops, s06.lax_extras)
               for v in vars(mod).values() if isinstance(v, Primitive)}
    assert defined == set(NEW)
