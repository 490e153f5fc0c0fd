"""Random straight-line lax programs for property tests, written once for every stage.

A program is a short list of steps over the float inputs x: f32[3,4], v: f32[4] and a scalar s,
and, when its kinds include integer ones, a fourth input n: i32[3,4]; each step applies one lax
operation to earlier values whose shapes and dtypes fit it. `programs(kinds, max_steps)` is the
hypothesis strategy, and `Program.as_function(lax)` builds the same program on our lax or on
jax.lax, so a test runs both and compares them: stage 2 their jaxprs and values, stage 4 their
jvp, vjp and grad, stage 5 the program under random vmaps. A stage picks the kinds of step its
transformation has rules for: `ALL_KINDS` (every float kind: stages 4, 5 and 6),
`ALL_KINDS + INT_KINDS` (everything: stages 2 and 8).

Beyond lax, programs can mix in what tracing and autodiff must get right together:
`EAGER_KINDS` combine a traced value with an eager Array made outside the trace (an f32, an
i32 or a weak scalar) through Python operators, so promotion is the Array's; `CAST_KINDS` go
through int or bool and back (a zero tangent); `GRADIENT_KINDS` add a stop_gradient;
`CONTROL_KINDS` branch and loop, with unused values, stop_gradient, a while_loop whose result
is unused or stop_gradient'ed, and custom_jvp/custom_vjp rules inside branches. These need an
`ops` namespace from the caller (stop_gradient, cond, fori_loop, while_loop, custom_jvp,
custom_vjp: stage 4 and 6's or JAX's).

A step is `(op, operand indices, extra)`; `extra` holds the op's static arguments.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
from hypothesis import strategies as st

Shape = tuple[int, ...]
Step = tuple[str, tuple[int, ...], Any]

INPUT_SHAPES: tuple[Shape, ...] = ((3, 4), (4,), ())  # x, v, s: every program has them
INT_INPUT_SHAPE: Shape = (3, 4)  # n, only in programs with integer kinds

# smooth ops only: a discontinuous one (floor, sign) could turn a last-bit difference between
# numpy and XLA into a difference of 1 (abs and max/min kinks have measure zero)
UNARY = ("neg", "sin", "cos", "tanh", "abs", "logistic", "exp_tanh", "square", "cube")
BINARY = ("add", "sub", "mul", "max", "min")
# integer ops are exact in both libraries, so every op is fair, wraparound and x / 0 included
INT_UNARY = ("neg", "bitwise_not", "abs", "sign")
INT_BINARY = {  # by kind of step
    "int_arith": ("add", "sub", "mul", "max", "min"),
    # MIN / -1 is defined (XLA's answer); the divisor is made odd, never 0: XLA's compiler folds
    # a divisor it can prove is 0 (say, from lt(n, n)) and dies of SIGFPE, jax.jit's too
    "int_divide": ("div", "rem"),
    "int_bitwise": ("bitwise_and", "bitwise_or", "bitwise_xor"),
    "int_shift": ("shift_left", "shift_right_logical", "shift_right_arithmetic"),
}
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")

# the kinds of step over floats: elementwise, reductions and contractions, then the structural
# ones (slice, concatenate, pad, dynamic_slice, tile), linear, so autodiff transposes them too
ALL_KINDS = ("unary", "binary", "scalar", "select", "reduce", "cumsum", "broadcast", "transpose",
             "reshape", "dot", "binary_scalar", "argmax", "slice", "concatenate", "pad",
             "dynamic_slice", "tile")
# integer kinds: they bring the input n; to_int and to_float cross between the dtypes
INT_KINDS = ("int_unary", "int_arith", "int_divide", "int_bitwise", "int_shift", "int_scalar",
             "int_select", "int_compare", "to_int", "to_float")
# kinds that mix in eager values, casts, stop_gradient and control flow (see the docstring)
EAGER_KINDS = ("eager_operand",)
CAST_KINDS = ("cast_round_trip", "bool_mask")
GRADIENT_KINDS = ("stop_gradient",)
CONTROL_KINDS = ("cond", "loop")
_EAGER_OPS = {"add": operator.add, "mul": operator.mul, "sub": operator.sub}
# kinds that move or sum elements without looking at them work on int32 values too
_ANY_DTYPE_KINDS = ("reduce", "cumsum", "broadcast", "transpose", "reshape", "slice",
                    "concatenate", "tile")

# the targets of broadcast_in_dim (shape, broadcast_dimensions) and of reshape, by input shape
_BROADCASTS: dict[Shape, list[tuple[Shape, Shape]]] = {
    (): [((4,), ()), ((3, 4), ())], (3,): [((3, 4), (0,))], (4,): [((3, 4), (1,))]}
_RESHAPES: dict[Shape, list[Shape]] = {(3, 4): [(12,), (4, 3), (2, 6)], (4,): [(2, 2)]}


def example_inputs(seed: int, with_int: bool = False) -> tuple[Any, ...]:
    """x: f32[3,4] and v: f32[4] drawn from `seed`, s a weakly typed Python scalar, and with
    `with_int` n: i32[3,4], the integer edge cases (0, -1, shifts past 31, MIN, MAX) shuffled."""
    rng = np.random.default_rng(seed)
    inputs: tuple[Any, ...] = (rng.standard_normal((3, 4)).astype(np.float32),
                               rng.standard_normal(4).astype(np.float32), 0.75)
    if with_int:
        edges = [0, -1, 1, 2, 5, -7, 31, 32, 40, -40, 2**31 - 1, -(2**31)]
        inputs += (rng.permutation(np.array(edges, np.int32)).reshape(INT_INPUT_SHAPE),)
    return inputs


def eager_values(lax: Any, shape: Shape) -> dict[str, Any]:
    """Eager Arrays of `shape`, made with the library's own eager ops (outside any trace)."""
    base = np.linspace(-0.7, 0.9, int(np.prod(shape)), dtype=np.float32).reshape(shape)
    return {"f32": lax.sin(base), "weak": lax.add(0.5, 0.25),  # a weakly typed scalar
            "i32": lax.convert_element_type(lax.mul(base, 4.0), np.int32)}


def custom_rules(ops: Any) -> SimpleNamespace:
    """The same two functions with custom rules, for one library: x * logistic(x) with its
    jvp, and tanh(x) * 0.5 with a fwd/bwd pair."""
    lax = ops.lax

    @ops.custom_jvp
    def swish(x):
        return lax.mul(x, lax.logistic(x))

    def swish_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        sig = lax.logistic(x)
        slope = lax.add(sig, lax.mul(lax.mul(x, sig), lax.sub(1.0, sig)))
        return swish(x), lax.mul(t, slope)

    swish.defjvp(swish_jvp)

    @ops.custom_vjp
    def half_tanh(x):
        return lax.mul(lax.tanh(x), 0.5)

    def half_tanh_fwd(x):
        y = lax.tanh(x)
        return lax.mul(y, 0.5), y

    def half_tanh_bwd(y, g):
        return (lax.mul(g, lax.mul(lax.sub(1.0, lax.mul(y, y)), 0.5)),)

    half_tanh.defvjp(half_tanh_fwd, half_tanh_bwd)
    return SimpleNamespace(swish=swish, half_tanh=half_tanh)


def _branch(lax: Any, ops: Any, rules: Any, spec: tuple) -> Any:
    """One cond branch: a unary op, an unused value, maybe a stop_gradient'ed term and a
    custom rule."""
    op, stop, custom = spec

    def branch(x):
        y = apply(lax, op, [x], None)
        lax.sin(y)  # computed, never used: pruned before anything runs it
        if stop:
            y = lax.add(y, ops.stop_gradient(lax.cos(x)))
        return getattr(rules, custom)(y) if custom else y

    return branch


def _loop(lax: Any, ops: Any, uses_while: bool) -> Any:
    """fori_loop(0, 2) of a body holding a while_loop whose result is unused or only
    stop_gradient'ed (reverse mode must prune its tangent)."""

    def body(i, c):
        w = ops.while_loop(lambda t: t[0] < 2, lambda t: (t[0] + 1, lax.mul(t[1], 0.5)), (0, c))
        out = lax.mul(lax.tanh(c), 0.5)
        return lax.add(out, ops.stop_gradient(w[1])) if uses_while else out

    return body


def apply(lax: Any, op: str, args: list[Any], extra: Any, ops: Any = None,
          eager: dict | None = None) -> Any:
    """One step of a program on `lax` (ours or jax.lax); `ops` and `eager` for the kinds that
    need them."""
    x = args[0]
    if op == "eager_operand":
        which, name, swap = extra
        e = eager[(which, np.shape(x))]
        return _EAGER_OPS[name](e, x) if swap else _EAGER_OPS[name](x, e)
    if op == "cast_round_trip":  # through int32 and back: no tangent gets through
        return lax.convert_element_type(
            lax.convert_element_type(lax.mul(x, 16.0), np.int32), np.float32)
    if op == "bool_mask":  # a bool times a float, by Python's operator: promoted as jnp does
        return lax.gt(x, args[1]) * x
    if op == "stop_gradient":
        return lax.add(x, ops.stop_gradient(args[1]))
    if op == "cond":
        true_spec, false_spec = extra
        return ops.cond(lax.gt(args[1], 0.0), _branch(lax, ops, ops.rules, true_spec),
                        _branch(lax, ops, ops.rules, false_spec), x)
    if op == "loop":
        return ops.fori_loop(0, 2, _loop(lax, ops, extra), x)
    if op == "int_unary":
        return getattr(lax, extra)(x)
    if op == "int_binary":
        if extra in INT_BINARY["int_divide"]:
            return getattr(lax, extra)(x, lax.bitwise_or(args[1], np.int32(1)))
        return getattr(lax, extra)(x, args[1])
    if op == "int_select":
        return lax.select(getattr(lax, extra)(x, args[1]), x, args[1])
    if op == "int_compare":
        return lax.convert_element_type(getattr(lax, extra)(x, args[1]), np.int32)
    if op == "to_int":
        # x * 16 is exact, so both libraries convert the same floats (a computed one might not)
        return lax.convert_element_type(lax.mul(x, 16.0), np.int32)
    if op == "to_float":
        return lax.convert_element_type(x, np.float32)  # rounds big ints: both libraries alike
    if op == "exp_tanh":
        return lax.exp(lax.tanh(x))
    if op in ("square", "cube"):
        return lax.integer_pow(x, 2 if op == "square" else 3)
    if op in UNARY or op in BINARY:
        return getattr(lax, op)(*args)
    if op in ("scalar", "int_scalar"):
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
    if op == "tile":
        return lax.tile(x, extra)
    if op == "dynamic_slice":
        index = lax.convert_element_type(lax.argmax(args[1], 0, np.int32), np.int32)
        return lax.dynamic_slice(x, (index,), (2,))
    raise ValueError(op)


@dataclass(frozen=True)
class Program:
    steps: tuple[Step, ...]
    shapes: tuple[Shape, ...]  # the shape of every value: the inputs, then one per step
    dtypes: tuple[str, ...]  # "f32" or "i32" for every value, as `shapes`
    outputs: tuple[int, ...]  # the indices of the values the program returns

    def as_function(self, lax: Any, ops: Any = None) -> Callable[..., tuple[Any, ...]]:
        """The program as f(x, v, s) (or f(x, v, s, n)) -> tuple of outputs, built on `lax`
        (and `ops`, for the kinds that need more than lax). Its eager values are made now,
        outside any trace the function will meet."""
        eager = {(which, self.shapes[operands[0]]): None for op, operands, (which, *_)
                 in (s for s in self.steps if s[0] == "eager_operand")}
        for key in eager:
            eager[key] = eager_values(lax, key[1])[key[0]]
        if any(op == "cond" for op, _, _ in self.steps):  # this function's own custom rules
            ops = SimpleNamespace(**vars(ops), rules=custom_rules(ops))

        def f(*inputs: Any) -> tuple[Any, ...]:
            values = list(inputs)
            for op, operands, extra in self.steps:
                values.append(apply(lax, op, [values[j] for j in operands], extra, ops, eager))
            return tuple(values[j] for j in self.outputs)

        return f


def _applies(kind: str, shape: Shape, dtype: str, is_input: bool) -> bool:
    """Whether a step of this kind can take a first operand of this shape and dtype."""
    if kind in INT_KINDS:
        if kind == "to_int":
            return dtype == "f32" and is_input  # inputs are exact; see apply
        return dtype == "i32"
    if dtype != "f32" and kind not in _ANY_DTYPE_KINDS:
        return False
    if kind == "cast_round_trip":
        return is_input  # inputs are exact; see to_int
    if kind in ("unary", "binary", "binary_scalar", "scalar", "select", "eager_operand",
                "bool_mask", "stop_gradient", "cond", "loop"):
        return True
    if kind in ("reduce", "argmax", "cumsum", "slice", "concatenate", "dot"):
        return len(shape) > 0
    if kind == "tile":
        return math.prod(shape) <= 24  # a scalar too (reps=()); values stay small
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


def _int_step(draw: Any, kind: str, same: list[int], i: int) -> tuple[Step, str]:
    """A step of an integer kind on value i, and the dtype of its result."""
    if kind == "int_unary":
        return ("int_unary", (i,), draw(st.sampled_from(INT_UNARY))), "i32"
    if kind in INT_BINARY:
        op = draw(st.sampled_from(INT_BINARY[kind]))
        return ("int_binary", (i, draw(st.sampled_from(same))), op), "i32"
    if kind == "int_scalar":
        # a weak Python int operand
        op = draw(st.sampled_from(["add", "mul", "rem", "shift_right_arithmetic"]))
        return ("int_scalar", (i,), (op, draw(st.sampled_from([3, 7])))), "i32"
    if kind in ("int_select", "int_compare"):
        return (kind, (i, draw(st.sampled_from(same))), draw(st.sampled_from(COMPARISONS))), "i32"
    if kind == "to_int":
        return ("to_int", (i,), None), "i32"
    if kind == "to_float":
        return ("to_float", (i,), None), "f32"
    raise ValueError(kind)


def _step(draw: Any, kind: str, shapes: list[Shape], dtypes: list[str], i: int
          ) -> tuple[Step, Shape, str]:
    """A step of `kind` on value i (and earlier values of fitting shapes and dtypes), and the
    shape and dtype of its result."""
    shape, dtype = shapes[i], dtypes[i]
    same = [j for j, s in enumerate(shapes) if s == shape and dtypes[j] == dtype]
    if kind in INT_KINDS:
        step, out_dtype = _int_step(draw, kind, same, i)
        return step, shape, out_dtype
    step, out = _float_step(draw, kind, shapes, dtypes, i, same)
    return step, out, dtype


def _float_step(draw: Any, kind: str, shapes: list[Shape], dtypes: list[str], i: int,
                same: list[int]) -> tuple[Step, Shape]:
    """A step of a float kind (or a structural one, on any dtype), and its shape."""
    shape, dtype = shapes[i], dtypes[i]
    axes = st.integers(0, len(shape) - 1)
    scalars = [k for k, s in enumerate(shapes) if s == () and dtypes[k] == dtype]
    if kind == "unary":
        return (draw(st.sampled_from(UNARY)), (i,), None), shape
    if kind == "eager_operand":
        extra = (draw(st.sampled_from(["f32", "i32", "weak"])),
                 draw(st.sampled_from(sorted(_EAGER_OPS))), draw(st.booleans()))
        return ("eager_operand", (i,), extra), shape
    if kind == "cast_round_trip":
        return ("cast_round_trip", (i,), None), shape
    if kind in ("bool_mask", "stop_gradient"):
        return (kind, (i, draw(st.sampled_from(same))), None), shape
    if kind == "cond":
        # the predicate is a scalar: s, or a scalar value made from it
        specs = st.tuples(st.sampled_from(["sin", "tanh", "neg", "square"]), st.booleans(),
                          st.sampled_from([None, "swish", "half_tanh"]))
        return ("cond", (i, draw(st.sampled_from(scalars))), (draw(specs), draw(specs))), shape
    if kind == "loop":
        return ("loop", (i,), draw(st.booleans())), shape
    if kind == "binary":
        return (draw(st.sampled_from(BINARY)), (i, draw(st.sampled_from(same))), None), shape
    if kind == "binary_scalar":
        # a rank-0 operand broadcasts inside the primitive; batched, it must be aligned
        j = draw(st.sampled_from(scalars))
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
    if kind == "tile":
        reps = tuple(draw(st.sampled_from([1, 2])) for _ in shape)
        return ("tile", (i,), reps), tuple(r * d for r, d in zip(reps, shape, strict=True))
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
                 for b in range(len(other)) if shape[a] == other[b] and dtypes[j] == "f32"]
        j, a, b = draw(st.sampled_from(pairs))
        dims = (((a,), (b,)), ((), ()))
        return ("dot", (i, j), dims), _without(shape, a) + _without(shapes[j], b)
    if kind == "pad":
        return ("pad", (i, draw(st.sampled_from(scalars))), None), (2 * shape[0] + 2,)
    if kind == "dynamic_slice":
        # the start index is traced: the argmax of another value of the same shape
        return ("dynamic_slice", (i, draw(st.sampled_from(same))), None), (2,)
    raise ValueError(kind)


@st.composite
def programs(draw: Any, kinds: tuple[str, ...] = ALL_KINDS, max_steps: int = 6) -> Program:
    """1 to max_steps steps of the given kinds; the outputs are the last value and one more.

    With any of INT_KINDS among `kinds`, the program takes the fourth input n: i32[3,4]."""
    with_int = any(k in INT_KINDS for k in kinds)
    shapes = list(INPUT_SHAPES) + ([INT_INPUT_SHAPE] if with_int else [])
    dtypes = ["f32"] * len(INPUT_SHAPES) + (["i32"] if with_int else [])
    steps = []
    for _ in range(draw(st.integers(1, max_steps))):
        i = draw(st.integers(0, len(shapes) - 1))
        if with_int and draw(st.booleans()):  # half the steps start from an integer value
            i = draw(st.sampled_from([j for j, d in enumerate(dtypes) if d == "i32"]))
        fits = [k for k in kinds if _applies(k, shapes[i], dtypes[i], i < len(INPUT_SHAPES))]
        step, out, out_dtype = _step(draw, draw(st.sampled_from(fits)), shapes, dtypes, i)
        steps.append(step)
        shapes.append(out)
        dtypes.append(out_dtype)
    outputs = (len(shapes) - 1, draw(st.integers(0, len(shapes) - 1)))
    return Program(tuple(steps), tuple(shapes), tuple(dtypes), outputs)
