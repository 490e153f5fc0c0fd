"""The printer hoists sub-jaxprs out of params as JAX does: `let name = { ... } in` first.

JAX's rule (core.pp_toplevel_jaxpr): walk the jaxpr and its params' sub-jaxprs breadth first,
re-entering a sub-jaxpr at every use; hoist one met twice, or met once with more than 10
equations. Stage 2 has no control flow, so JAX's jaxprs with scan/cond/while/jit equations are
rebuilt with our classes (conftest's `from_jax`, which keeps JAX's sharing of sub-jaxprs) and
printed by both printers.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax import lax

from stages.s02_tracing import core
from stages.s02_tracing import pretty_printer as pp

# JAX prints these through custom rules that hide some params; the rebuilt equations carry
# only the params JAX prints (our fresh primitives have no rules).
PRINTED_PARAMS = {
    "mul": set(),
    "convert_element_type": {"new_dtype", "weak_type"},
    "scan": {"jaxpr", "length", "num_carry", "num_consts", "reverse", "unroll"},
    "jit": {"name", "jaxpr"},
}
# JAX's jit rule also prints `name` before `jaxpr`: a primitive only these tests use, with a rule.
JIT_P = core.Primitive("jit")
core.pp_eqn_rules[JIT_P] = lambda eqn, context, settings: pp.default_pp_eqn(
    eqn, context, settings, params=["name", "jaxpr"])


@pytest.fixture
def from_jax_nested(jaxpr_from_jax):
    return lambda closed: jaxpr_from_jax(closed, {"jit": JIT_P}, PRINTED_PARAMS)


F = np.float32(1.5)
XS = np.ones(3, np.float32)


def _adds(n):
    def step(c, x):
        for i in range(n):
            c = c + float(i)
        return c, c
    return step


def _muls(n):
    def f(c):
        for _ in range(n):
            c = c * 2.0
        return c
    return f


@jax.jit
def b(c):  # named like a variable: variables skip the names of hoisted jaxprs
    return c + 1.0


@jax.jit
def g(c):  # a jit holding a cond: its short branches are met once per use of g
    return lax.cond(c > 0.0, lambda c: c + 1.0, lambda c: c - 1.0, c)


@jax.jit
def h(c):  # a second jitted function, so hoisted names must differ
    return c * 3.0


CASES = {
    "scan_body_of_11_equations_is_hoisted": (
        lambda c, xs: lax.scan(_adds(11), c, xs), F, XS),
    "scan_body_of_10_equations_stays_inline": (
        lambda c, xs: lax.scan(_adds(10), c, xs), F, XS),
    "two_long_scans_are_named_jaxpr_and_jaxpr1": (
        lambda c, xs: lax.scan(_adds(12), lax.scan(_adds(11), c, xs)[0], xs), F, XS),
    "cond_with_the_same_long_branch_twice_hoists_one": (
        lambda p, c: lax.cond(p, _muls(11), _muls(11), c), True, F),
    "short_cond_branches_stay_inline": (
        lambda p, c: lax.cond(p, lambda c: c + 1.0, lambda c: c + 1.0, c), True, F),
    "while_long_body_is_hoisted_short_cond_is_not": (
        lambda c: lax.while_loop(lambda c: c < 10.0, _muls(11), c), F),
    "long_scan_inside_a_cond_branch": (
        lambda p, c, xs: lax.cond(p, lambda c: lax.scan(_adds(11), c, xs)[0], lambda c: c, c),
        True, F, XS),
    "long_cond_inside_a_long_scan_both_hoisted": (
        lambda c, xs: lax.scan(
            lambda c, x: _adds(11)(lax.cond(c > 0.0, _muls(12), lambda c: c, c), x), c, xs),
        F, XS),
    "jit_used_twice_takes_its_name": (lambda c: b(b(c)), F),
    "sub_jaxprs_of_a_twice_used_jaxpr_are_hoisted_too": (lambda c: g(g(c)), F),
    "different_jitted_functions_keep_their_names": (lambda c: h(b(h(b(c)))), F),
}


@pytest.mark.parametrize("name", list(CASES))
def test_hoisting_matches_jax(name, from_jax_nested):
    fn, *args = CASES[name]
    theirs = jax.make_jaxpr(fn)(*args)
    assert str(from_jax_nested(theirs)) == str(theirs)


def test_long_scan_body_prints_as_a_let_prefix(from_jax_nested):
    theirs = jax.make_jaxpr(lambda c, xs: lax.scan(_adds(11), c, xs))(F, XS)
    text = str(from_jax_nested(theirs))
    assert text.startswith("let jaxpr = { lambda ; a:f32[] b:f32[]. let\n")
    assert "  in (m, m) } in\n{ lambda ; n:f32[] o:f32[3]. let\n" in text
    assert "      jaxpr=jaxpr\n" in text


def test_variables_skip_a_hoisted_jaxprs_name(from_jax_nested):
    text = str(from_jax_nested(jax.make_jaxpr(lambda c: b(b(c)))(F)))
    assert text.splitlines()[0] == (
        "let b = { lambda ; a:f32[]. let c:f32[] = add a 1.0:f32[] in (c,) } in")
