"""Random programs over the differentiable primitives: jvp and vjp equal JAX's.

Hypothesis draws a short sequence of lax operations over three inputs (f32[3,4], f32[4], a weak
f32 scalar); each step picks operands of compatible shapes from the values made so far. The
same program runs on our lax and on jax.lax, and is differentiated by each library.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stages.s02_tracing import lax as olax
from stages.s04_autodiff import grad, jvp, vjp

pytestmark = pytest.mark.oracle

_rng = np.random.default_rng(5)
INPUTS = (_rng.standard_normal((3, 4)).astype(np.float32),
          _rng.standard_normal(4).astype(np.float32), 0.75)

# smooth almost everywhere on random inputs (abs and max/min kinks have measure zero)
UNARY = ["neg", "sin", "cos", "tanh", "abs", "logistic", "exp_tanh", "square", "cube"]
BINARY = ["add", "sub", "mul", "max", "min"]


def _apply(lax, op, args, extra):
    if op == "exp_tanh":
        return lax.exp(lax.tanh(args[0]))
    if op in ("square", "cube"):
        return lax.integer_pow(args[0], 2 if op == "square" else 3)
    if op in UNARY or op in BINARY:
        return getattr(lax, op)(*args)
    if op == "scalar":
        return getattr(lax, extra[0])(args[0], extra[1])
    if op == "select":
        return lax.select(lax.gt(args[0], args[1]), args[0], args[1])
    if op in ("reduce_sum", "reduce_max"):
        return getattr(lax, op)(args[0], extra)
    if op == "cumsum":
        return lax.cumsum(args[0], axis=extra)
    if op == "broadcast":
        return lax.broadcast_in_dim(args[0], (3, 4), extra)
    if op == "transpose":
        return lax.transpose(args[0], (1, 0))
    if op == "reshape":
        return lax.reshape(args[0], extra)
    if op == "dot":
        return lax.dot_general(args[0], args[1], (((args[0].ndim - 1,), (0,)), ((), ())))
    raise ValueError(op)


@st.composite
def programs(draw):
    """A list of (op, operand indices, extra) steps and the indices of the outputs."""
    shapes = [(3, 4), (4,), ()]
    steps = []
    for _ in range(draw(st.integers(1, 7))):
        i = draw(st.integers(0, len(shapes) - 1))
        shape = shapes[i]
        same = [j for j, s in enumerate(shapes) if s == shape]
        kind = draw(st.sampled_from(["unary", "binary", "scalar", "select", "reduce", "cumsum",
                                     "broadcast", "transpose", "reshape", "dot"]))
        if kind == "unary":
            step, out = (draw(st.sampled_from(UNARY)), [i], None), shape
        elif kind == "binary":
            step, out = (draw(st.sampled_from(BINARY)), [i, draw(st.sampled_from(same))],
                         None), shape
        elif kind == "scalar":
            extra = (draw(st.sampled_from(["add", "mul", "sub"])),
                     draw(st.sampled_from([2.0, 0.5])))
            step, out = ("scalar", [i], extra), shape
        elif kind == "select":
            step, out = ("select", [i, draw(st.sampled_from(same))], None), shape
        elif kind == "reduce" and shape:
            axis = draw(st.integers(0, len(shape) - 1))
            op = draw(st.sampled_from(["reduce_sum", "reduce_max"]))
            step, out = (op, [i], (axis,)), shape[:axis] + shape[axis + 1:]
        elif kind == "cumsum" and shape:
            step, out = ("cumsum", [i], draw(st.integers(0, len(shape) - 1))), shape
        elif kind == "broadcast" and shape in [(4,), (3,), ()]:
            dims = {(4,): (1,), (3,): (0,), (): ()}[shape]
            step, out = ("broadcast", [i], dims), (3, 4)
        elif kind == "transpose" and len(shape) == 2:
            step, out = ("transpose", [i], None), shape[::-1]
        elif kind == "reshape" and shape == (3, 4):
            new = draw(st.sampled_from([(12,), (4, 3), (2, 6)]))
            step, out = ("reshape", [i], new), new
        elif kind == "dot" and shape:
            partners = [j for j, s in enumerate(shapes) if s and s[0] == shape[-1]]
            if not partners:
                continue
            j = draw(st.sampled_from(partners))
            step, out = ("dot", [i, j], None), shape[:-1] + shapes[j][1:]
        else:
            continue
        steps.append(step)
        shapes.append(out)
    n_out = draw(st.integers(1, 2))
    return steps, list(range(len(shapes)))[-n_out:]


def _as_function(lax, program):
    steps, outputs = program

    def f(x, v, s):
        values = [x, v, s]
        for op, idx, extra in steps:
            values.append(_apply(lax, op, [values[j] for j in idx], extra))
        return [values[j] for j in outputs]

    return f


def _close(got, want):
    for g, w in zip(got, want, strict=True):
        w = np.asarray(w)
        assert np.shape(g) == w.shape
        scale = max(1.0, float(np.max(np.abs(w), initial=0.0)))
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-4, atol=1e-4 * scale)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_programs_differentiate_like_jax(program):
    rng = np.random.default_rng(len(program[0]))
    tangents = tuple(rng.standard_normal(np.shape(x)).astype(np.float32) for x in INPUTS)
    got = jvp(_as_function(olax, program), INPUTS, tangents)
    want = jax.jvp(_as_function(jax.lax, program), INPUTS, tangents)
    _close(got[0], want[0])
    _close(got[1], want[1])
    outs, f_vjp = vjp(_as_function(olax, program), *INPUTS)
    their_outs, their_f_vjp = jax.vjp(_as_function(jax.lax, program), *INPUTS)
    cts = [rng.standard_normal(np.shape(o)).astype(np.float32) for o in their_outs]
    _close(f_vjp(cts), their_f_vjp(cts))

    def total(lax, program):
        f = _as_function(lax, program)

        def first_output_summed(*args):
            out = f(*args)[0]
            return lax.reduce_sum(out, tuple(range(np.ndim(out))))

        return first_output_summed

    _close(grad(total(olax, program), (0, 1, 2))(*INPUTS),
           jax.grad(total(jax.lax, program), (0, 1, 2))(*INPUTS))
