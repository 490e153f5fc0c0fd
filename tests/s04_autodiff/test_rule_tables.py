"""The tables are the extension mechanism: walk them.

A primitive is done when it has a rule in every table of its stage and of the stages before
it, or a decision why not. For stage 4's own primitives that decision is written out below,
table by table, and checked against the tables of the installed JAX.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
from stages.s02_tracing import core, vma
from stages.s03_partial_eval import partial_eval as pe
from stages.s04_autodiff import ad, ad_checkpoint, ad_util, custom_calls, custom_derivatives


def _primitives_of(package) -> set[core.Primitive]:
    found = set()
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        found |= {v for v in vars(module).values() if isinstance(v, core.Primitive)}
    return found


def _stage2_primitives() -> set[core.Primitive]:
    return _primitives_of(s02)


def test_the_walk_finds_every_stage2_primitive():
    names = {p.name for p in _stage2_primitives()}
    assert {"sin", "add", "dot_general", "select_n", "dynamic_update_slice", "iota"} <= names
    assert len(names) >= 50


def test_every_stage2_primitive_has_a_jvp_rule():
    missing = sorted(p.name for p in _stage2_primitives() if p not in ad.primitive_jvps)
    assert missing == []


def test_every_stage4_primitive_has_a_jvp_rule():
    # custom_lin only ever lives in linear jaxprs (transposed, never differentiated); the
    # custom_jvp_call/custom_vjp_call primitives are handled by the traces' process_custom_*
    for p in (ad_util.add_jaxvals_p, ad_util.stop_gradient_p, ad_checkpoint.remat_p,
              ad_checkpoint.name_p):
        assert p in ad.primitive_jvps, p


def test_every_linear_primitive_has_a_transpose_rule(linear_primitives):
    linear = linear_primitives | {custom_calls.custom_lin_p, ad_checkpoint.remat_p}
    missing = sorted(p.name for p in linear if p not in ad.primitive_transposes)
    assert missing == []


def test_only_linear_primitives_have_transpose_rules(linear_primitives):
    # Only primitives of stages 2-4: later stages (cond, scan, ...) add transpose rules too.
    # remat2 and custom_jvp_call hold a jaxpr, which is linear when they reach a linear jaxpr.
    # pvary (stage 2's core, as in JAX) is linear too; its transpose, a psum, is stage 5's.
    ours = _primitives_of(s02) | _primitives_of(s04)
    extra = ours & set(ad.primitive_transposes) - linear_primitives - {
        custom_calls.custom_lin_p, ad_checkpoint.remat_p, custom_derivatives.custom_jvp_call_p,
        vma.pvary_p}
    assert extra == set()


# ------------------------------------------------------------------ stage 4's own primitives

TABLES = {
    "custom_partial_eval_rules": pe.custom_partial_eval_rules,
    "partial_eval_jaxpr_custom_rules": pe.partial_eval_jaxpr_custom_rules,
    "dce_rules": pe.dce_rules,
    "primitive_jvps": ad.primitive_jvps,
    "primitive_transposes": ad.primitive_transposes,
}

# The tables each stage-4 primitive has a rule in, decided one by one. A first-order primitive
# needs no stage-3 rule: the default rules record, split and prune it whole.
HAS_RULE = {
    # first-order, linear
    "add_any": {"primitive_jvps", "primitive_transposes"},
    # first-order; not linear in JAX's sense (its tangent is not named), so no transpose
    "name": {"primitive_jvps"},
    # first-order; its tangent is a symbolic zero, so it never reaches a linear jaxpr
    "stop_gradient": {"primitive_jvps"},
    # only ever in a linear jaxpr, transposed into the user's bwd; never differentiated
    "custom_lin": {"primitive_transposes"},
    # holds a jaxpr: splits by the policy, prunes inside, differentiates and transposes it
    "remat2": {"custom_partial_eval_rules", "partial_eval_jaxpr_custom_rules", "dce_rules",
               "primitive_jvps", "primitive_transposes"},
    # differentiated and partially evaluated by its rules per trace type (custom_calls'
    # custom_jvp_call_rules), not by these tables; transposed by its body
    "custom_jvp_call": {"primitive_transposes"},
    # the same, custom_vjp_call_rules; its transpose is custom_lin's (the user's bwd)
    "custom_vjp_call": set(),
}

# Where JAX has a rule and ours has none, why. (Ours has no rule JAX lacks.)
NOT_BUILT = {
    ("custom_jvp_call", "dce_rules"): "JAX prunes unused outputs inside the call and its jvp; "
    "our default rule keeps the call whole: the same values, less pruning",
    ("custom_vjp_call", "dce_rules"): "the same, for the call, fwd and bwd",
}


def test_every_stage4_primitive_has_a_decision_for_every_table():
    found = {p.name: p for p in _primitives_of(s04) - _primitives_of(s02)}
    assert set(found) == set(HAS_RULE)  # a new primitive needs its decisions written down
    for name, p in found.items():
        got = {table for table, rules in TABLES.items() if p in rules}
        assert got == HAS_RULE[name], name


def _trace_types(package) -> set[type]:
    found = set()
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        found |= {v for v in vars(module).values()
                  if isinstance(v, type) and issubclass(v, core.Trace) and v is not core.Trace}
    return found


def test_custom_calls_have_a_rule_for_every_trace_of_stages_2_to_4():
    # one mechanism: each trace type's rule is in the table; nothing else is consulted
    traces = _trace_types(s02) | _trace_types(s04) | {pe.JaxprTrace}
    assert {core.EvalTrace, ad.JVPTrace, pe.JaxprTrace} <= traces
    for table in (custom_calls.custom_jvp_call_rules, custom_calls.custom_vjp_call_rules):
        assert traces <= set(table), traces - set(table)
    assert custom_derivatives.custom_jvp_call_rules is custom_calls.custom_jvp_call_rules
    assert not hasattr(ad.JVPTrace, "process_custom_jvp_call")  # no second mechanism


def test_a_trace_with_no_custom_call_rule_names_the_table():
    class NewTrace(core.Trace):
        pass

    with pytest.raises(NotImplementedError,
                       match="'custom_jvp_call' has no rule for NewTrace in custom_jvp_call_rules"):
        custom_calls.custom_jvp_call_p.bind_with_trace(NewTrace(), [], dict(subfuns=(None, None)))


def test_the_decisions_agree_with_jaxs_tables():
    from jax._src import ad_checkpoint as jax_ad_checkpoint
    from jax._src import ad_util as jax_ad_util
    from jax._src import custom_derivatives as jax_custom_derivatives
    from jax._src.interpreters import ad as jax_ad
    from jax._src.interpreters import partial_eval as jax_pe

    theirs = {"add_any": jax_ad_util.add_jaxvals_p, "name": jax_ad_checkpoint.name_p,
              "stop_gradient": jax_ad_util.stop_gradient_p,
              "custom_lin": jax_ad.custom_lin_p, "remat2": jax_ad_checkpoint.remat_p,
              "custom_jvp_call": jax_custom_derivatives.custom_jvp_call_p,
              "custom_vjp_call": jax_custom_derivatives.custom_vjp_call_p}
    their_tables = {
        "custom_partial_eval_rules": [jax_pe.custom_partial_eval_rules],
        "partial_eval_jaxpr_custom_rules": [jax_pe.partial_eval_jaxpr_custom_rules],
        "dce_rules": [jax_pe.dce_rules],
        "primitive_jvps": [jax_ad.primitive_jvps],
        # JAX keeps the rules of primitives holding jaxprs apart, in fancy_transposes
        "primitive_transposes": [jax_ad.primitive_transposes, jax_ad.fancy_transposes],
    }
    for name, p in theirs.items():
        jax_has = {t for t, tables in their_tables.items() if any(p in r for r in tables)}
        assert jax_has - HAS_RULE[name] == {t for n, t in NOT_BUILT if n == name}, name
        assert HAS_RULE[name] <= jax_has, name


def test_the_linear_set_is_the_issue_list(linear_primitives):
    names = {p.name for p in linear_primitives}
    issue = {"add", "sub", "neg", "mul", "dot_general", "broadcast_in_dim", "reshape",
             "transpose", "reduce_sum", "convert_element_type", "select_n", "slice", "pad",
             "dynamic_slice", "dynamic_update_slice", "concatenate", "cumsum"}
    assert issue <= names
