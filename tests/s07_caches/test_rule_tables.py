"""Walk the tables: the jit primitive has a rule in every table of stages 2-6.

A primitive is not done until each transformation knows it (docs/course.md, "One stage, one
layer"). The tables are not listed by hand: every module-level dict keyed by Primitive in stages
2-6 is found, so a table added later is walked too. Stage 2's impl and abstract eval live on the
primitive itself. The one absence is JAX's own, listed in SKIP with why.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import stages.s07_caches as s07
from stages.s02_tracing.core import Primitive

EARLIER_STAGES = ["s02_tracing", "s03_partial_eval", "s04_autodiff", "s05_vmap",
                  "s06_control_flow"]

# table -> why jit rightly has no entry in it
SKIP = {
    # constant folding is for a few cheap first-order primitives (convert_element_type), as in
    # JAX, whose const_fold_rules has no entry for jit_p: a jit of constants is staged whole
    "const_fold_rules": "JAX 0.10.2 folds no jit",
    # the varying-axes rules are for first-order primitives that change a value's type; a jit
    # inside a shard_map body keeps the types its jaxpr gave its outputs, as JAX's pjit does
    "vma_rules": "typed by its jaxpr",
}


def _rule_tables() -> dict[str, dict]:
    """Every non-empty module-level dict keyed by Primitive in stages 2-6, once by name."""
    tables: dict[str, dict] = {}
    for stage in EARLIER_STAGES:
        package = importlib.import_module(f"stages.{stage}")
        for info in pkgutil.walk_packages(package.__path__, f"stages.{stage}."):
            module = importlib.import_module(info.name)
            for name, value in vars(module).items():
                if isinstance(value, dict) and value and \
                        all(isinstance(k, Primitive) for k in value):
                    tables.setdefault(name, value)
    return tables


TABLES = _rule_tables()


def test_the_walk_finds_the_tables_of_every_earlier_stage():
    assert {"pp_eqn_rules", "custom_partial_eval_rules", "partial_eval_jaxpr_custom_rules",
            "dce_rules", "primitive_jvps", "primitive_transposes",
            "primitive_batchers"} <= set(TABLES)
    assert set(SKIP) <= set(TABLES)


@pytest.mark.parametrize("table", sorted(TABLES))
def test_jit_has_a_rule_in_every_table(table):
    # JAX 0.10.2 has a custom print rule for jit (it hides default params): so do we
    if table in SKIP:
        assert s07.jit_p not in TABLES[table]  # the absence is the point: see SKIP
    else:
        assert s07.jit_p in TABLES[table]


def test_stage_2_impl_and_abstract_eval_are_defined():
    assert "impl" in vars(s07.jit_p) and "abstract_eval" in vars(s07.jit_p)


def test_jit_is_the_only_primitive_this_stage_defines():
    defined = {v for mod in vars(s07).values() if isinstance(mod, type(s07))
               for v in vars(mod).values() if isinstance(v, Primitive)}
    assert defined == {s07.jit_p}
    assert s07.jit_p.name == "jit" and s07.jit_p.multiple_results
