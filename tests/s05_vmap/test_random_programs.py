"""Random programs under random vmaps: values and shapes equal jax.vmap's, nesting up to 3.

Hypothesis draws a per-example program (a short sequence of lax operations over x: f32[3,4],
v: f32[4] and s: f32[], each step picking operands of compatible shapes), then one to three
vmaps around it, each with its own in_axes (any axis, negative ones, or None; all None means
axis_size) and out_axes (any axis, negative ones, or None). The same program and vmaps run on
ours and on JAX; when JAX raises (out_axes=None on a batched output), ours must raise the same.
Without dynamic_slice (which JAX batches into a gather) the printed jaxprs must be equal too.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.testing import RTOL_REDUCTION

SHAPES = [(3, 4), (4,), ()]
SIZES = [2, 3, 5]  # one batch size per nesting level: a misplaced axis changes the shape
UNARY = ["neg", "sin", "cos", "tanh", "abs", "logistic", "square"]
BINARY = ["add", "sub", "mul", "max", "min"]


def _apply(lax, op, args, extra):
    """One step of a program on `lax` (ours or jax.lax)."""
    if op == "square":
        return lax.integer_pow(args[0], 2)
    if op in UNARY:
        return getattr(lax, op)(args[0])
    if op in BINARY:
        return getattr(lax, op)(*args)
    if op == "select":
        return lax.select(lax.gt(args[0], args[1]), args[0], args[1])
    if op == "reduce_sum":
        return lax.reduce_sum(args[0], extra)
    if op == "reduce_max":
        return lax.reduce_max(args[0], extra)
    if op == "argmax_as_float":
        return lax.convert_element_type(lax.argmax(args[0], extra, np.int32), np.float32)
    if op == "cumsum":
        return lax.cumsum(args[0], axis=extra[0], reverse=extra[1])
    if op == "broadcast":
        return lax.broadcast_in_dim(args[0], extra[0], extra[1])
    if op == "transpose":
        return lax.transpose(args[0], (1, 0))
    if op == "reshape":
        return lax.reshape(args[0], extra)
    if op == "dot":
        return lax.dot_general(args[0], args[1], extra)
    if op == "slice":
        return lax.slice_in_dim(args[0], 0, 2, axis=extra)
    if op == "pad":
        return lax.pad(args[0], args[1], ((1, 2, 1),))
    if op == "concatenate":
        return lax.concatenate([args[0], args[1]], extra)
    if op == "dynamic_slice":
        index = lax.convert_element_type(lax.argmax(args[1], 0, np.int32), np.int32)
        return lax.dynamic_slice(args[0], (index,), (2,))
    raise ValueError(op)


@st.composite
def programs(draw):
    """Steps (op, operand indices, extra) and the per-example shape of every value."""
    shapes = list(SHAPES)
    steps = []
    for _ in range(draw(st.integers(1, 6))):
        i = draw(st.integers(0, len(shapes) - 1))
        shape = shapes[i]
        same = [j for j, s in enumerate(shapes) if s == shape]
        scalars = [j for j, s in enumerate(shapes) if s == ()]
        kinds = ["unary", "binary", "binary_scalar", "select"]
        if shape:
            kinds += ["reduce", "argmax", "cumsum", "slice", "concatenate"]
        if shape == (4,):
            kinds += ["broadcast", "reshape", "dot", "pad", "dynamic_slice"]
        if shape == (3, 4):
            kinds += ["transpose", "reshape", "dot"]
        if shape == ():
            kinds += ["broadcast"]
        kind = draw(st.sampled_from(kinds))
        if kind == "unary":
            step, out = (draw(st.sampled_from(UNARY)), [i], None), shape
        elif kind == "binary":
            j = draw(st.sampled_from(same))
            step, out = (draw(st.sampled_from(BINARY)), [i, j], None), shape
        elif kind == "binary_scalar":
            # a rank-0 operand broadcasts inside the primitive; batched, it must be aligned
            j = draw(st.sampled_from(scalars))
            order = [i, j] if draw(st.booleans()) else [j, i]
            step, out = (draw(st.sampled_from(BINARY)), order, None), shape
        elif kind == "select":
            step, out = ("select", [i, draw(st.sampled_from(same))], None), shape
        elif kind == "reduce":
            axes = tuple(sorted(draw(st.sets(st.integers(0, len(shape) - 1), min_size=1))))
            out = tuple(d for k, d in enumerate(shape) if k not in axes)
            step = (draw(st.sampled_from(["reduce_sum", "reduce_max"])), [i], axes)
        elif kind == "argmax":
            axis = draw(st.integers(0, len(shape) - 1))
            out = tuple(d for k, d in enumerate(shape) if k != axis)
            step = ("argmax_as_float", [i], axis)
        elif kind == "cumsum":
            extra = (draw(st.integers(0, len(shape) - 1)), draw(st.booleans()))
            step, out = ("cumsum", [i], extra), shape
        elif kind == "slice":
            axis = draw(st.integers(0, len(shape) - 1))
            out = tuple(2 if k == axis else d for k, d in enumerate(shape))
            step = ("slice", [i], axis)
        elif kind == "concatenate":
            axis = draw(st.integers(0, len(shape) - 1))
            out = tuple(2 * d if k == axis else d for k, d in enumerate(shape))
            step = ("concatenate", [i, draw(st.sampled_from(same))], axis)
        elif kind == "broadcast":
            if shape == ():
                step, out = ("broadcast", [i], ((4,), ())), (4,)
            else:
                step, out = ("broadcast", [i], ((3, 4), (1,))), (3, 4)
        elif kind == "transpose":
            step, out = ("transpose", [i], None), (4, 3)
        elif kind == "reshape":
            new = (2, 2) if shape == (4,) else draw(st.sampled_from([(12,), (2, 6), (4, 3)]))
            step, out = ("reshape", [i], new), new
        elif kind == "dot":
            if shape == (4,):
                j = draw(st.sampled_from([k for k, s in enumerate(shapes) if s in ((4,), (3, 4))]))
                other = shapes[j]
                dims = (((0,), (len(other) - 1,)), ((), ()))
                step, out = ("dot", [i, j], dims), other[:-1]
            else:
                j = draw(st.sampled_from(same))
                step, out = ("dot", [i, j], (((1,), (1,)), ((), ()))), (3, 3)
        elif kind == "pad":
            step, out = ("pad", [i, draw(st.sampled_from(scalars))], None), (10,)
        else:  # dynamic_slice along a traced start index (argmax of another (4,) value)
            j = draw(st.sampled_from(same))
            step, out = ("dynamic_slice", [i, j], None), (2,)
        steps.append(step)
        shapes.append(out)
    second = draw(st.integers(0, len(shapes) - 1))
    return steps, shapes, second


def _program(lax, steps, second):
    def f(x, v, s):
        values = [x, v, s]
        for op, idx, extra in steps:
            values.append(_apply(lax, op, [values[k] for k in idx], extra))
        return values[-1], values[second]

    return f


@st.composite
def vmap_stacks(draw, out_shapes):
    """1-3 levels of (in_axes, out_axes, axis_size), innermost first, and the input shapes."""
    in_shapes = [list(s) for s in SHAPES]
    out_ranks = [len(s) for s in out_shapes]
    levels = []
    for size in SIZES[: draw(st.integers(1, 3))]:
        in_axes = []
        for shape in in_shapes:
            rank = len(shape)
            axis = draw(st.one_of(st.none(), st.integers(-(rank + 1), rank)))
            in_axes.append(axis)
            if axis is not None:
                shape.insert(axis % (rank + 1), size)
        out_axes = []
        for k, rank in enumerate(out_ranks):
            # None (unbatched output) is rarer: on a batched output it is an error
            axis = None if draw(st.integers(0, 9)) == 0 else draw(st.integers(-(rank + 1), rank))
            out_axes.append(axis)
            out_ranks[k] = rank if axis is None else rank + 1
        axis_size = size if all(a is None for a in in_axes) else None
        levels.append((tuple(in_axes), tuple(out_axes), axis_size))
    return levels, [tuple(s) for s in in_shapes]


def _nest(vmap, f, levels):
    for in_axes, out_axes, axis_size in levels:
        f = vmap(f, in_axes=in_axes, out_axes=out_axes, axis_size=axis_size)
    return f


def _outcome(fn, args):
    try:
        return "ok", fn(*args)
    except ValueError as err:
        return "error", str(err)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_programs_under_random_vmaps_match_jax(data, ours, theirs, close):
    steps, shapes, second = data.draw(programs())
    levels, in_shapes = data.draw(vmap_stacks([shapes[-1], shapes[second]]))
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.float32) for s in in_shapes]
    mine = _outcome(_nest(ours.vmap, _program(ours.lax, steps, second), levels), args)
    want = _outcome(_nest(theirs.vmap, _program(theirs.lax, steps, second), levels), args)
    assert mine[0] == want[0], (mine, want)
    if want[0] == "error":
        assert mine[1] == want[1]
        return
    close(mine[1], want[1], rtol=RTOL_REDUCTION, atol=1e-5)
    if not any(op == "dynamic_slice" for op, _, _ in steps):  # JAX's would be a gather
        ours_jaxpr = ours.make_jaxpr(_nest(ours.vmap, _program(ours.lax, steps, second),
                                           levels))(*args)
        jax_jaxpr = theirs.make_jaxpr(_nest(theirs.vmap, _program(theirs.lax, steps, second),
                                            levels))(*args)
        assert str(ours_jaxpr) == str(jax_jaxpr)
