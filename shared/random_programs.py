"""Random straight-line lax programs for property tests, written once for every stage.

A program is a short list of steps over three inputs, x: f32[3,4], v: f32[4] and a scalar s; each
step applies one lax operation to earlier values whose shapes fit it. `programs(kinds, max_steps)`
is the hypothesis strategy, and `Program.as_function(lax)` builds the same program on our lax or
on jax.lax, so a test runs both and compares them: stage 2 their jaxprs and values, stage 4 their
jvp, vjp and grad, stage 5 the program under random vmaps. A stage picks the kinds of step its
transformation has rules for (`STAGE2_KINDS`, `ALL_KINDS`).

A step is `(op, operand indices, extra)`; `extra` holds the op's static arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

Shape = tuple[int, ...]
Step = tuple[str, tuple[int, ...], Any]

INPUT_SHAPES: tuple[Shape, ...] = ((3, 4), (4,), ())

# smooth ops only: a discontinuous one (floor, sign) could turn a last-bit difference between
# numpy and XLA into a difference of 1 (abs and max/min kinks have measure zero)
UNARY = ("neg", "sin", "cos", "tanh", "abs", "logistic", "exp_tanh", "square", "cube")
BINARY = ("add", "sub", "mul", "max", "min")

# the kinds of step: stages 2 and 4 use the first ten, stage 5 (vmap) all of them
STAGE2_KINDS = ("unary", "binary", "scalar", "select", "reduce", "cumsum", "broadcast",
                "transpose", "reshape", "dot")
ALL_KINDS = STAGE2_KINDS + ("binary_scalar", "argmax", "slice", "concatenate", "pad",
                            "dynamic_slice")

# the targets of broadcast_in_dim (shape, broadcast_dimensions) and of reshape, by input shape
_BROADCASTS: dict[Shape, list[tuple[Shape, Shape]]] = {
    (): [((4,), ()), ((3, 4), ())], (3,): [((3, 4), (0,))], (4,): [((3, 4), (1,))]}
_RESHAPES: dict[Shape, list[Shape]] = {(3, 4): [(12,), (4, 3), (2, 6)], (4,): [(2, 2)]}


def example_inputs(seed: int) -> tuple[np.ndarray, np.ndarray, float]:
    """x: f32[3,4] and v: f32[4] drawn from `seed`, and s a weakly typed Python scalar."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((3, 4)).astype(np.float32),
            rng.standard_normal(4).astype(np.float32), 0.75)


def apply(lax: Any, op: str, args: list[Any], extra: Any) -> Any:
    """One step of a program on `lax` (ours or jax.lax)."""
    x = args[0]
    if op == "exp_tanh":
        return lax.exp(lax.tanh(x))
    if op in ("square", "cube"):
        return lax.integer_pow(x, 2 if op == "square" else 3)
    if op in UNARY or op in BINARY:
        return getattr(lax, op)(*args)
    if op == "scalar":
        return getattr(lax, extra[0])(x, extra[1])
    if op == "select":
        return lax.select(lax.gt(x, args[1]), x, args[1])
    if op in ("reduce_sum", "reduce_max"):
        return getattr(lax, op)(x, extra)
    if op == "argmax_as_float":
        return lax.convert_element_type(lax.argmax(x, extra, np.int32), np.float32)
    if op == "cumsum":
        return lax.cumsum(x, axis=extra[0], reverse=extra[1])
    if op == "broadcast":
        return lax.broadcast_in_dim(x, extra[0], extra[1])
    if op == "transpose":
        return lax.transpose(x, (1, 0))
    if op == "reshape":
        return lax.reshape(x, extra)
    if op == "dot":
        return lax.dot_general(x, args[1], extra)
    if op == "slice":
        return lax.slice_in_dim(x, 0, 2, axis=extra)
    if op == "pad":
        return lax.pad(x, args[1], ((1, 2, 1),))
    if op == "concatenate":
        return lax.concatenate([x, args[1]], extra)
    if op == "dynamic_slice":
        index = lax.convert_element_type(lax.argmax(args[1], 0, np.int32), np.int32)
        return lax.dynamic_slice(x, (index,), (2,))
    raise ValueError(op)


@dataclass(frozen=True)
class Program:
    steps: tuple[Step, ...]
    shapes: tuple[Shape, ...]  # the shape of every value: the three inputs, then one per step
    outputs: tuple[int, ...]  # the indices of the values the program returns

    def as_function(self, lax: Any) -> Callable[..., tuple[Any, ...]]:
        """The program as f(x, v, s) -> tuple of outputs, built on `lax`."""

        def f(x: Any, v: Any, s: Any) -> tuple[Any, ...]:
            values = [x, v, s]
            for op, operands, extra in self.steps:
                values.append(apply(lax, op, [values[j] for j in operands], extra))
            return tuple(values[j] for j in self.outputs)

        return f


def _applies(kind: str, shape: Shape) -> bool:
    """Whether a step of this kind can take a first operand of this shape."""
    if kind in ("unary", "binary", "binary_scalar", "scalar", "select"):
        return True
    if kind in ("reduce", "argmax", "cumsum", "slice", "concatenate", "dot"):
        return len(shape) > 0
    if kind == "transpose":
        return len(shape) == 2
    if kind in ("pad", "dynamic_slice"):
        return len(shape) == 1
    if kind == "broadcast":
        return shape in _BROADCASTS
    if kind == "reshape":
        return shape in _RESHAPES
    raise ValueError(kind)


def _without(shape: Shape, axis: int) -> Shape:
    return shape[:axis] + shape[axis + 1:]


def _step(draw: Any, kind: str, shapes: list[Shape], i: int) -> tuple[Step, Shape]:
    """A step of `kind` on value i (and earlier values of fitting shapes), and its shape."""
    shape = shapes[i]
    axes = st.integers(0, len(shape) - 1)
    same = [j for j, s in enumerate(shapes) if s == shape]
    if kind == "unary":
        return (draw(st.sampled_from(UNARY)), (i,), None), shape
    if kind == "binary":
        return (draw(st.sampled_from(BINARY)), (i, draw(st.sampled_from(same))), None), shape
    if kind == "binary_scalar":
        # a rank-0 operand broadcasts inside the primitive; batched, it must be aligned
        j = draw(st.sampled_from([k for k, s in enumerate(shapes) if s == ()]))
        order = (i, j) if draw(st.booleans()) else (j, i)
        return (draw(st.sampled_from(BINARY)), order, None), shape
    if kind == "scalar":
        extra = (draw(st.sampled_from(["add", "mul", "sub"])), draw(st.sampled_from([2.0, 0.5])))
        return ("scalar", (i,), extra), shape
    if kind == "select":
        return ("select", (i, draw(st.sampled_from(same))), None), shape
    if kind == "reduce":
        reduced = tuple(sorted(draw(st.sets(axes, min_size=1))))
        out = tuple(d for k, d in enumerate(shape) if k not in reduced)
        return (draw(st.sampled_from(["reduce_sum", "reduce_max"])), (i,), reduced), out
    if kind == "argmax":
        axis = draw(axes)
        return ("argmax_as_float", (i,), axis), _without(shape, axis)
    if kind == "cumsum":
        return ("cumsum", (i,), (draw(axes), draw(st.booleans()))), shape
    if kind == "slice":
        axis = draw(axes)
        return ("slice", (i,), axis), tuple(2 if k == axis else d for k, d in enumerate(shape))
    if kind == "concatenate":
        axis = draw(axes)
        out = tuple(2 * d if k == axis else d for k, d in enumerate(shape))
        return ("concatenate", (i, draw(st.sampled_from(same))), axis), out
    if kind == "broadcast":
        target, dims = draw(st.sampled_from(_BROADCASTS[shape]))
        return ("broadcast", (i,), (target, dims)), target
    if kind == "transpose":
        return ("transpose", (i,), None), shape[::-1]
    if kind == "reshape":
        new = draw(st.sampled_from(_RESHAPES[shape]))
        return ("reshape", (i,), new), new
    if kind == "dot":
        # contract one axis of value i with an axis of the same size of any value (itself too)
        pairs = [(j, a, b) for j, other in enumerate(shapes) for a in range(len(shape))
                 for b in range(len(other)) if shape[a] == other[b]]
        j, a, b = draw(st.sampled_from(pairs))
        dims = (((a,), (b,)), ((), ()))
        return ("dot", (i, j), dims), _without(shape, a) + _without(shapes[j], b)
    if kind == "pad":
        scalar = draw(st.sampled_from([k for k, s in enumerate(shapes) if s == ()]))
        return ("pad", (i, scalar), None), (2 * shape[0] + 2,)
    if kind == "dynamic_slice":
        # the start index is traced: the argmax of another value of the same shape
        return ("dynamic_slice", (i, draw(st.sampled_from(same))), None), (2,)
    raise ValueError(kind)


@st.composite
def programs(draw: Any, kinds: tuple[str, ...] = ALL_KINDS, max_steps: int = 6) -> Program:
    """1 to max_steps steps of the given kinds; the outputs are the last value and one more."""
    shapes = list(INPUT_SHAPES)
    steps = []
    for _ in range(draw(st.integers(1, max_steps))):
        i = draw(st.integers(0, len(shapes) - 1))
        kind = draw(st.sampled_from([k for k in kinds if _applies(k, shapes[i])]))
        step, out = _step(draw, kind, shapes, i)
        steps.append(step)
        shapes.append(out)
    outputs = (len(shapes) - 1, draw(st.integers(0, len(shapes) - 1)))
    return Program(tuple(steps), tuple(shapes), outputs)
