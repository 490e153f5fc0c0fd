"""Random programs, random masks: every split equals JAX's.

Hypothesis draws a straight-line program over three f32[3,3] inputs (elementwise ops, a matmul,
scalar literals), a set of outputs, an unknown mask and a policy; the same program is traced with
our lax and with jax.lax, and all three passes of this stage are compared with JAX's.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stages.s02_tracing import eval_jaxpr

ARGS = tuple(np.full((3, 3), v, np.float32) for v in (0.5, -1.0, 2.0))
UNARY = ["sin", "cos", "tanh", "neg", "exp"]
BINARY = ["add", "sub", "mul", "max", "dot"]
POLICIES = ["everything_saveable", "nothing_saveable", "dots_saveable",
            "dots_with_no_batch_dims_saveable"]


@st.composite
def programs(draw):
    steps, n = [], len(ARGS)
    for _ in range(draw(st.integers(1, 10))):
        kind = draw(st.sampled_from(["unary", "binary", "literal"]))
        i = draw(st.integers(0, n - 1))
        if kind == "unary":
            steps.append((draw(st.sampled_from(UNARY)), i, None))
        elif kind == "binary":
            steps.append((draw(st.sampled_from(BINARY)), i, draw(st.integers(0, n - 1))))
        else:
            steps.append(("literal", i, draw(st.sampled_from([2.0, 0.5]))))
        n += 1
    outs = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=3))
    return steps, outs


def _program(lax, steps, outs):
    def f(*args):
        vals = list(args)
        for op, i, extra in steps:
            if op in UNARY:
                vals.append(getattr(lax, op)(vals[i]))
            elif op == "dot":
                vals.append(lax.dot_general(vals[i], vals[extra], (((1,), (0,)), ((), ()))))
            elif op == "literal":
                vals.append(lax.mul(vals[i], extra))
            else:
                vals.append(getattr(lax, op)(vals[i], vals[extra]))
        return [vals[k] for k in outs]

    return f


@settings(max_examples=60, deadline=None)
@given(programs(), st.lists(st.booleans(), min_size=3, max_size=3), st.booleans(),
       st.sampled_from(POLICIES))
def test_random_splits_equal_jaxs(ours, theirs, program, unknowns, instantiate, policy):
    mine = ours.make_jaxpr(_program(ours.lax, *program))(*ARGS)
    real = theirs.make_jaxpr(_program(theirs.lax, *program))(*ARGS)
    assert str(mine) == str(real)

    split = ours.pe.partial_eval_jaxpr_nounits(mine, unknowns, instantiate)
    j_split = theirs.pe.partial_eval_jaxpr_nounits(real, unknowns, instantiate)
    assert [str(x) for x in split] == [str(x) for x in j_split]

    used = [bool(i % 2) for i in range(len(mine.jaxpr.outvars))]
    assert [str(x) for x in ours.pe.dce_jaxpr(mine.jaxpr, used)] == \
        [str(x) for x in theirs.pe.dce_jaxpr(real.jaxpr, used)]

    custom = ours.pe.partial_eval_jaxpr_custom(mine.jaxpr, unknowns, True, False, False,
                                               ours.policies[policy])
    j_custom = theirs.pe.partial_eval_jaxpr_custom(real.jaxpr, unknowns, True, False, False,
                                                   theirs.policies[policy])
    assert [str(x) for x in custom] == [str(x) for x in j_custom]


@settings(max_examples=30, deadline=None)
@given(programs(), st.lists(st.booleans(), min_size=3, max_size=3))
def test_random_known_then_unknown_computes_the_whole(ours, helpers, program, unknowns):
    closed = ours.make_jaxpr(_program(ours.lax, *program))(*ARGS)
    known, unknown, out_unknowns, _ = ours.pe.partial_eval_jaxpr_nounits(closed, unknowns, False)
    whole = eval_jaxpr(closed.jaxpr, closed.consts, *ARGS)
    split = helpers.run_split(known, unknown, out_unknowns, unknowns, list(ARGS))
    helpers.assert_same_values(split, whole)
