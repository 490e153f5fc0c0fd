"""Walk the primitives: every primitive of stages 2-7 has a lowering rule.

The primitives are not listed by hand: every Primitive object defined at module level in the
packages of stages 2-7 (subpackages included) is found, so a primitive added later is walked too.
A primitive is not done until it has a rule in every table (docs/course.md, "One stage, one
layer").
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import sys

import pytest

import stages.s08_lowering as s08
from stages.s02_tracing.core import Primitive

EARLIER_STAGES = ["s02_tracing", "s03_partial_eval", "s04_autodiff", "s05_vmap",
                  "s06_control_flow", "s07_caches"]


def _primitives() -> dict[str, Primitive]:
    found: dict[int, Primitive] = {}
    for stage in EARLIER_STAGES:
        package = importlib.import_module(f"stages.{stage}")
        for info in pkgutil.walk_packages(package.__path__, f"stages.{stage}."):
            module = importlib.import_module(info.name)
            for value in vars(module).values():
                if isinstance(value, Primitive):
                    found.setdefault(id(value), value)
    return {p.name: p for p in found.values()}


PRIMITIVES = _primitives()

# Collectives over named axes (stage 5's parallel.py) lower only inside a map that binds their
# names to devices (replica groups), which is stage 11's shard_map: it registers their rules.
# Under vmap they never reach lowering: vmap's rules turn them into array code first.
NEEDS_A_MESH = {"psum", "pmax", "pmin", "ppermute", "all_gather", "reduce_scatter",
                "all_to_all", "axis_index", "psum_invariant",
                "pvary"}  # pvary (a cast between the types of a shard_map body): the same


def test_the_walk_finds_the_primitives_of_every_earlier_stage():
    # the walk must not pass by finding nothing: one primitive of each stage that has some
    assert {"add", "dot_general", "custom_jvp_call", "remat2", "cond", "while", "scan",
            "jit"} <= set(PRIMITIVES)
    assert len(PRIMITIVES) >= 70


@pytest.mark.parametrize("name", sorted(set(PRIMITIVES) - NEEDS_A_MESH))
def test_every_primitive_has_a_lowering_rule(name):
    assert PRIMITIVES[name] in s08.lowering_rules


def test_the_collectives_waiting_for_a_mesh_are_real_primitives():
    assert NEEDS_A_MESH <= set(PRIMITIVES)


def _later_stage_primitives() -> set:
    """Primitives of stages after 8 that are imported: each registers its own lowering rule
    (stage 12's erf_inv), as a later stage extends the table."""
    found = set()
    for name, module in list(sys.modules.items()):
        if re.fullmatch(r"stages\.s(09|1\d)_\w+(\.\w+)*", name):
            found |= {v for v in vars(module).values() if isinstance(v, Primitive)}
    return found


def test_the_table_holds_only_primitives_of_earlier_stages():
    assert set(s08.lowering_rules) - _later_stage_primitives() <= set(PRIMITIVES.values())


def test_a_platform_rule_is_preferred_and_named_by_platform():
    dot = PRIMITIVES["dot_general"]
    assert dot in s08.platform_specific_lowerings["cpu"]
    assert dot in s08.platform_specific_lowerings["tpu"]
    assert dot not in s08.platform_specific_lowerings["cuda"]
