"""Random programs with control flow, against JAX: values, printed jaxprs, jvp, linearize,
grad and vmap, or the same error.

Hypothesis draws programs from `shared.random_programs` whose steps include `cond` (each branch
a unary op, an unused value, maybe a stop_gradient'ed term, maybe a custom_jvp or custom_vjp
function) and `loop` (a fori_loop whose body holds a while_loop, its result unused or only
stop_gradient'ed), beside eager Arrays met through operators, int/bool round trips,
stop_gradient and every float lax step. Forward mode over a custom_vjp branch must be
refused as JAX refuses it, the branch taken or not; reverse mode must prune the while_loop's
tangent and succeed.
"""

from __future__ import annotations

from types import SimpleNamespace

import jax
import numpy as np
from hypothesis import HealthCheck, given, reject, settings

import stages.s04_autodiff as s04
import stages.s06_control_flow as s06
from shared.random_programs import (
    ALL_KINDS,
    CAST_KINDS,
    CONTROL_KINDS,
    EAGER_KINDS,
    GRADIENT_KINDS,
    Program,
    example_inputs,
    programs,
)
from shared.testing import RTOL_REDUCTION, assert_same_typed_values, is_jaxs_pad_transpose_error

from .conftest import OURS, THEIRS

# control flow drawn four times as often as any other kind: it is what this stage tests
KINDS = ALL_KINDS + EAGER_KINDS + CAST_KINDS + GRADIENT_KINDS + CONTROL_KINDS * 4
INPUTS = example_inputs(seed=11)
OPS = {
    "ours": SimpleNamespace(lax=OURS.lax, stop_gradient=s04.stop_gradient, cond=s06.cond,
                            fori_loop=s06.fori_loop, while_loop=s06.while_loop,
                            custom_jvp=s04.custom_jvp, custom_vjp=s04.custom_vjp),
    "jax": SimpleNamespace(lax=jax.lax, stop_gradient=jax.lax.stop_gradient, cond=jax.lax.cond,
                           fori_loop=jax.lax.fori_loop, while_loop=jax.lax.while_loop,
                           custom_jvp=jax.custom_jvp, custom_vjp=jax.custom_vjp),
}


def _outcome(fn):
    try:
        return "ok", fn()
    except (TypeError, ValueError) as err:
        return type(err).__name__, err


def _tolerance(values) -> float:
    leaves = [np.asarray(v) for v in jax.tree_util.tree_leaves(values)]
    return RTOL_REDUCTION * max([1.0] + [float(np.max(np.abs(v), initial=0.0)) for v in leaves
                                         if np.issubdtype(v.dtype, np.floating)])


def same(program: Program, run) -> None:
    """run(ns, f) on ours and on JAX: the same values (dtypes, weak types) or the same error."""
    ours = _outcome(lambda: run(OURS, program.as_function(OURS.lax, OPS["ours"])))
    theirs = _outcome(lambda: run(THEIRS, program.as_function(THEIRS.lax, OPS["jax"])))
    if theirs[0] != "ok" and is_jaxs_pad_transpose_error(theirs[1]):
        reject()  # JAX cannot transpose this pad; stage 4's test_pad_value_gradient pins it
    assert ours[0] == theirs[0], (ours, theirs)
    if ours[0] != "ok":
        assert str(ours[1]) == str(theirs[1])
        return
    assert_same_typed_values(ours[1], theirs[1], RTOL_REDUCTION, _tolerance(theirs[1]))


def _summed(ns, f):
    def total(*args):
        out = f(*args)[0]
        return ns.lax.reduce_sum(out, tuple(range(np.ndim(out))))
    return total


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(KINDS, max_steps=5))
def test_random_control_flow_programs_agree_with_jax(program: Program):
    rng = np.random.default_rng(len(program.steps))
    tangents = tuple(rng.standard_normal(np.shape(x)).astype(np.float32) for x in INPUTS)
    same(program, lambda ns, f: f(*INPUTS))  # eagerly
    ours = OURS.make_jaxpr(program.as_function(OURS.lax, OPS["ours"]))(*INPUTS)
    theirs = THEIRS.make_jaxpr(program.as_function(THEIRS.lax, OPS["jax"]))(*INPUTS)
    assert str(ours) == str(theirs)
    same(program, lambda ns, f: ns.jvp(f, INPUTS, tangents))
    same(program, lambda ns, f: ns.linearize(f, *INPUTS)[1](*tangents))
    same(program, lambda ns, f: ns.grad(_summed(ns, f), (0, 1, 2))(*INPUTS))
    batched = tuple(np.stack([x, np.negative(x)]) for x in INPUTS[:2])
    same(program, lambda ns, f: ns.vmap(lambda x, v: f(x, v, INPUTS[2]))(*batched))
