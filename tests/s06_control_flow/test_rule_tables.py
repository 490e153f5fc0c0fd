"""Walk the tables: every new primitive has a rule in every table of stages 2-5.

A primitive is not done until each transformation knows it (docs/course.md, "One stage, one
layer"). The tables are not listed by hand: every module-level dict keyed by Primitive in stages
2-5 is found, so a table added later is walked too. cond, scan and while hold jaxprs, so they need
the stage-3 rules that split a body, not just an equation. The few absences are JAX's own, listed
in SKIP with why.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import stages.s06_control_flow as s06
from stages.s02_tracing.core import Primitive

# Every primitive of this stage holds a jaxpr (clamp and stop_gradient, which switch and cond
# use, are stage 2's and stage 4's, walked by those stages' tests).
HOLDS_A_JAXPR = [s06.cond_p, s06.scan_p, s06.while_p]
NEW = HOLDS_A_JAXPR
EARLIER_STAGES = ["s02_tracing", "s03_partial_eval", "s04_autodiff", "s05_vmap"]

# table -> the new primitives that rightly have no entry in it
SKIP = {
    # a custom print rule only where JAX 0.10.2 has one: none of these three has
    "pp_eqn_rules": set(NEW),
    # constant folding is for a few cheap first-order primitives (convert_element_type), as
    # in JAX, whose const_fold_rules has no entry for cond, scan or while either
    "const_fold_rules": set(NEW),
    # the varying-axes rules are for first-order primitives that change a value's type
    # (pvary, the collectives); one holding a jaxpr keeps the types its body gave its outputs,
    # as JAX's cond, scan and while take theirs from their bodies
    "vma_rules": set(NEW),
    # staging as something other than one equation is jit's with inline=True (stage 7 fills
    # this table, so it is empty when only stages 2-6 are imported); JAX stages cond, scan and
    # while as equations of their own, and its custom_staging_rules has none of them either
    "custom_staging_rules": set(NEW),
}
FILLED_LATER = {"custom_staging_rules"}


def _rule_tables() -> dict[str, dict]:
    """Every non-empty module-level dict keyed by Primitive in stages 2-5, once by name."""
    tables: dict[str, dict] = {}
    for stage in EARLIER_STAGES:
        package = importlib.import_module(f"stages.{stage}")
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"stages.{stage}.{info.name}")
            for name, value in vars(module).items():
                if isinstance(value, dict) and value and \
                        all(isinstance(k, Primitive) for k in value):
                    tables.setdefault(name, value)
    return tables


TABLES = _rule_tables()


def test_the_walk_finds_the_tables_of_every_earlier_stage():
    # the walk must not pass by finding nothing
    assert {"pp_eqn_rules", "custom_partial_eval_rules", "partial_eval_jaxpr_custom_rules",
            "dce_rules", "primitive_jvps", "primitive_transposes",
            "primitive_batchers"} <= set(TABLES)
    assert set(SKIP) - FILLED_LATER <= set(TABLES)


@pytest.mark.parametrize("prim", NEW, ids=str)
@pytest.mark.parametrize("table", sorted(TABLES))
def test_every_new_primitive_has_a_rule_in_every_table(table, prim):
    if prim in SKIP.get(table, ()):
        assert prim not in TABLES[table]  # the absence is the point: see SKIP
    else:
        assert prim in TABLES[table]


@pytest.mark.parametrize("prim", NEW, ids=str)
def test_stage_2_impl_and_abstract_eval_are_defined(prim):
    # the class defaults raise NotImplementedError; a defined rule lives on the instance
    assert "impl" in vars(prim) and "abstract_eval" in vars(prim)


def test_the_tables_hold_nothing_else_from_this_stage():
    # every primitive this stage defines is in the list walked above
    modules = [importlib.import_module(f"stages.s06_control_flow.{info.name}")
               for info in pkgutil.iter_modules(s06.__path__)]
    defined = {v for mod in modules for v in vars(mod).values() if isinstance(v, Primitive)}
    assert defined == set(NEW)
