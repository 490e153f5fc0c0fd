"""Random programs under random vmaps: values and shapes equal jax.vmap's, nesting up to 3.

Hypothesis draws a per-example program from `shared.random_programs` (a short sequence of lax
operations over x: f32[3,4], v: f32[4] and s: f32[], each step picking operands of compatible
shapes, every float kind of step there, eager Arrays and int/bool round trips included), then
one to three vmaps around it, each with its own in_axes (any axis, negative ones, or None; all
None means axis_size) and out_axes (any axis, negative ones, or None). The same program and
vmaps run on ours and on JAX; when JAX raises (out_axes=None on a batched output), ours must
raise the same. Without dynamic_slice (which JAX batches into a gather) the printed jaxprs must
be equal too.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.random_programs import (
    ALL_KINDS,
    CAST_KINDS,
    EAGER_KINDS,
    INPUT_SHAPES,
    Program,
    programs,
)
from shared.testing import RTOL_REDUCTION

SIZES = [2, 3, 5]  # one batch size per nesting level: a misplaced axis changes the shape


@st.composite
def vmap_stacks(draw, out_shapes):
    """1-3 levels of (in_axes, out_axes, axis_size), innermost first, and the input shapes."""
    in_shapes = [list(s) for s in INPUT_SHAPES]
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
    # every kind of step, eager Arrays met through operators and int/bool round trips too
    program: Program = data.draw(programs(ALL_KINDS + EAGER_KINDS + CAST_KINDS, max_steps=6))
    levels, in_shapes = data.draw(vmap_stacks([program.shapes[j] for j in program.outputs]))
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.float32) for s in in_shapes]
    mine = _outcome(_nest(ours.vmap, program.as_function(ours.lax), levels), args)
    want = _outcome(_nest(theirs.vmap, program.as_function(theirs.lax), levels), args)
    assert mine[0] == want[0], (mine, want)
    if want[0] == "error":
        assert mine[1] == want[1]
        return
    close(mine[1], want[1], rtol=RTOL_REDUCTION, atol=1e-5)
    if not any(op == "dynamic_slice" for op, _, _ in program.steps):  # JAX's would be a gather
        ours_jaxpr = ours.make_jaxpr(_nest(ours.vmap, program.as_function(ours.lax), levels))(*args)
        jax_jaxpr = theirs.make_jaxpr(_nest(theirs.vmap, program.as_function(theirs.lax),
                                            levels))(*args)
        assert str(ours_jaxpr) == str(jax_jaxpr)
