"""The jaxpr printer: JAX's exact text, including where lines break.

Layout is tested against JAX's own printer on jaxprs JAX traced (rebuilt with our classes by
`jaxpr_from_jax`), so these tests do not depend on our lax. Primitives JAX prints through a
custom rule (sin hides accuracy=None, dot_general hides None params, ...) are avoided here; the
corpus tests cover them through our lax's rules.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax import lax
from jax._src import core as jax_core

from stages.s02_tracing import core
from stages.s02_tracing import pretty_printer as pp

X34 = np.ones((3, 4), np.float32)

LAYOUTS = {
    "one_line": (lambda x: lax.add(x, 1.0), X34),
    "one_line_two_outputs": (lambda x: (lax.add(x, 1.0), lax.sub(x, 2.0)), X34),
    "multi_line_when_over_80_columns": (
        lambda x: (lax.add(x, 1.0), lax.sub(x, 2.0), x), np.float32(1)),
    "no_equations_one_line": (lambda x: x, 1.0),
    "no_equations_broken_leaves_an_indented_blank_line": (lambda *a: a, *[X34] * 9),
    "binders_wrap_at_80_columns": (lambda *a: lax.concatenate(a, 0), *[X34] * 19),
    "outputs_wrap_too": (lambda *a: a, *[X34] * 30),
    "operands_wrap_inside_an_equation": (lambda *a: lax.concatenate(a, 0), *[X34] * 40),
    "params_on_one_line": (lambda x: lax.reshape(x, (1,) * 3 + (3,) + (1,) * 20 + (4,)), X34),
    "params_one_per_line_when_too_long": (
        lambda x: lax.reshape(x, (1,) * 3 + (3,) + (1,) * 40 + (4,)), X34),
    "variable_names_past_z": (lambda x: [lax.add(x, 1.0) for _ in range(30)], X34),
    "constvars_before_the_semicolon": (lambda x: lax.add(lax.add(x, X34), X34 + 1), X34),
    "literal_output": (lambda x: 1.0, 2),
    "unused_binder_prints_underscore": (lambda x: (lax.neg(x), lax.abs(x))[1], X34),
    "integer_bool_and_complex_literals": (
        lambda i, b, c: (lax.add(i, 3), lax.bitwise_and(b, True), lax.sub(c, 2j)),
        np.int32(1), np.bool_(True), np.complex64(1)),
    "special_float_literals": (
        lambda x: (lax.add(x, float("inf")), lax.add(x, 1e20), lax.add(x, float("nan")),
                   lax.add(x, 1e-7), lax.add(x, 0.1)), 1.0),
    "strong_scalar_constant_is_a_literal": (lambda x: lax.add(x, np.float32(0.1)), np.float32(1)),
}


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_printer_matches_jax_on_jaxprs_jax_traced(name, jaxpr_from_jax):
    fn, *args = LAYOUTS[name]
    theirs = jax.make_jaxpr(fn)(*args)
    assert str(jaxpr_from_jax(theirs)) == str(theirs)


def test_an_equation_without_outputs_prints_only_its_right_hand_side(jaxpr_from_jax):
    # a primitive bound for its effect (JAX's debug_callback is one) binds no variable: no " = "
    traced = jax.make_jaxpr(lambda x: x)(np.float32(1)).jaxpr
    x = traced.invars[0]
    effect = jax_core.Primitive("effect_only")
    effect.multiple_results = True
    eqn = jax_core.new_jaxpr_eqn([x], [], effect, {"tag": 3}, set())
    theirs = jax_core.ClosedJaxpr(
        jax_core.Jaxpr([], [x], [x], [eqn], debug_info=traced.debug_info), [])
    assert str(theirs) == "{ lambda ; a:f32[]. let effect_only[tag=3] a in (a,) }"
    assert str(jaxpr_from_jax(theirs)) == str(theirs)


def test_equation_repr_matches_jax(jaxpr_from_jax):
    theirs = jax.make_jaxpr(lambda x, y: lax.concatenate([x, y, x], 1))(X34, X34)
    ours = jaxpr_from_jax(theirs)
    assert repr(ours.eqns[0]) == repr(theirs.eqns[0])


def test_variable_names_are_base_26_with_letters_as_digits():
    for n in [0, 1, 25, 26, 27, 51, 52, 675, 676, 702, 10_000]:
        assert pp._encode_digits_alphabetic(n) == jax_core._encode_digits_alphabetic(n)
    assert [pp._encode_digits_alphabetic(n) for n in (0, 25, 26, 27)] == ["a", "z", "ba", "bb"]


def test_a_group_prints_flat_only_if_it_fits_in_the_rest_of_the_line():
    doc = pp.group(pp.text("let") + pp.nest(2, pp.brk() + pp.text("x = 1")) + pp.brk()
                   + pp.text("in"))
    assert doc.format(width=80) == "let x = 1 in"
    assert doc.format(width=8) == "let\n  x = 1\nin"


def test_a_nested_group_decides_for_itself():
    inner = pp.group(pp.text("aa") + pp.brk() + pp.text("bb"))
    outer = pp.group(pp.text("x") + pp.brk() + inner + pp.brk() + pp.text("yyyyyyyy"))
    # outer does not fit in 10 columns, so its breaks are newlines; inner still fits flat
    assert outer.format(width=10) == "x\naa bb\nyyyyyyyy"


def test_custom_printing_rules_are_looked_up_by_primitive():
    p = core.Primitive("quiet")
    p.def_abstract_eval(lambda x, **params: x)
    f32 = core.ShapedArray((), np.float32)
    a, b = core.Var(f32), core.Var(f32)
    eqn = core.new_jaxpr_eqn([a], [b], p, {"shown": 1, "hidden": None})
    jaxpr = core.Jaxpr([], [a], [b], [eqn])
    assert str(jaxpr) == "{ lambda ; a:f32[]. let b:f32[] = quiet[hidden=None shown=1] a in (b,) }"

    def rule(eqn, context, settings):
        params = {k: v for k, v in eqn.params.items() if v is not None}
        return core.default_pp_eqn(eqn.replace(params=params), context, settings)

    core.pp_eqn_rules[p] = rule
    try:
        assert str(jaxpr) == "{ lambda ; a:f32[]. let b:f32[] = quiet[shown=1] a in (b,) }"
    finally:
        del core.pp_eqn_rules[p]


def test_object_addresses_in_params_are_masked():
    f32 = core.ShapedArray((), np.float32)
    a, b = core.Var(f32), core.Var(f32)
    p = core.Primitive("callback")
    fn = lambda x: x  # noqa: E731
    jaxpr = core.Jaxpr([], [a], [b], [core.new_jaxpr_eqn([a], [b], p, {"fn": fn})])
    text = str(jaxpr)
    assert " at 0xXXXX" in text and hex(id(fn))[2:] not in text


def test_a_jaxpr_in_a_param_prints_nested_with_names_unique_across_both():
    f32 = core.ShapedArray((), np.float32)
    x, y = core.Var(f32), core.Var(f32)
    inner_in, inner_out = core.Var(f32), core.Var(f32)
    neg = core.Primitive("neg")
    inner = core.Jaxpr([], [inner_in], [inner_out],
                       [core.new_jaxpr_eqn([inner_in], [inner_out], neg, {})])
    call = core.Primitive("call")
    outer = core.Jaxpr([], [x], [y], [core.new_jaxpr_eqn([x], [y], call, {"jaxpr": inner})])
    assert str(outer) == (
        "{ lambda ; a:f32[]. let\n"
        "    b:f32[] = call[jaxpr={ lambda ; c:f32[]. let d:f32[] = neg c in (d,) }] a\n"
        "  in (b,) }"
    )
