"""Explicit mesh axes: shardings in types. Each rule on its own, against what JAX 0.10.2 gives
for the same call (the values below were printed by `jax.typeof` on 4 CPU devices); the whole
programs are compared with JAX in test_jit_sharded.py."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax.sharding import AbstractMesh
from jax.sharding import AxisType as JAxisType
from jax.sharding import NamedSharding as JNamedSharding
from jax.sharding import PartitionSpec as JP

import stages.s04_autodiff as s04
import stages.s11_spmd as s11
from stages.s02_tracing import core, lax
from stages.s02_tracing import linear_util as lu
from stages.s02_tracing import numpy as snp
from stages.s02_tracing import partial_eval as pe
from stages.s11_spmd import P
from stages.s11_spmd.sharding_rules import ShardingTypeError, split_on_one_axis


@pytest.fixture
def mesh(four):
    return s11.make_mesh((2, 2), ("x", "y"))


def put(mesh, shape, spec):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) / 10
    return s11.device_put(x, s11.NamedSharding(mesh, spec))


def typeof(x):
    return str(core.typeof(x))


def test_make_meshs_axes_are_explicit_and_an_auto_mesh_types_nothing(four):
    assert s11.make_mesh((4,), ("x",)).axis_types == (s11.AxisType.Explicit,)
    auto = s11.make_mesh((4,), ("x",), (s11.AxisType.Auto,))
    x = s11.device_put(np.ones(8, np.float32), s11.NamedSharding(auto, P("x")))
    assert typeof(x) == "float32[8]" and core.typeof(x).sharding is None


def test_a_spec_is_typed_per_dimension_with_only_explicit_axes(four):
    mixed = s11.make_mesh((2, 2), ("x", "y"), (s11.AxisType.Explicit, s11.AxisType.Auto))
    x = s11.device_put(np.ones((4, 4), np.float32), s11.NamedSharding(mixed, P(("x", "y"))))
    assert typeof(x) == "float32[4@x,4]"
    assert core.typeof(x).sharding.spec == P("x", None)


def test_elementwise_broadcasts_size_one_and_scalars(mesh):
    x = put(mesh, (4, 4), P("x", None))
    row = put(mesh, (1, 4), P(None, "y"))
    assert typeof(x * 2.0) == "float32[4@x,4]"
    assert typeof(x + row) == "float32[4@x,4@y]"  # the size-1 dimension takes x's split
    with pytest.raises(ShardingTypeError, match=r"mul got incompatible shardings for "
                       r"broadcasting: \('x', None\), \('y', None\)\."):
        x * put(mesh, (4, 4), P("y", None))


def test_dot_general_batch_and_contracting_dimensions(mesh):
    a, b = put(mesh, (2, 4, 4), P("x", None, None)), put(mesh, (2, 4, 4), P("y", None, None))
    dims = (((2,), (1,)), ((0,), (0,)))
    with pytest.raises(ShardingTypeError, match="dot_general requires lhs batch dimensions "
                       r"and rhs batch dimensions to have the consistent sharding, got \('x',\) "
                       r"and \('y',\)\."):
        lax.dot_general(a, b, dims)
    c = put(mesh, (4, 4), P(None, "x"))
    out = lax.dot_general(c, put(mesh, (4, 4), P("x", None)), (((1,), (0,)), ((), ())),
                          out_sharding=s11.NamedSharding(mesh, P("y", None)))
    assert typeof(out) == "float32[4@y,4]"  # told, not guessed: the partitioner all-reduces
    both = np.arange(16, dtype=np.float32).reshape(4, 4) / 10  # what put() gave each operand
    np.testing.assert_allclose(np.asarray(out), both @ both, rtol=1e-6)


def test_reshape_splits_and_merges_the_way_jax_does(mesh):
    x = put(mesh, (8, 4), P("x", None))
    assert typeof(x.reshape(2, 4, 4)) == "float32[2@x,4,4]"
    assert typeof(x.reshape(32)) == "float32[32@x]"
    assert typeof(x.reshape(8, 4, 1)) == "float32[8@x,4,1]"
    assert typeof(put(mesh, (8, 4), P(("x", "y"), None)).reshape(2, 2, 2, 4)) == \
        "float32[2@x,2@y,2,4]"
    with pytest.raises(ShardingTypeError, match=r"This reshape is not supported\. .* Got "
                       r"operand type: float32\[8@x,4\], new sizes: \(4, 8\)"):
        x.reshape(4, 8)
    with pytest.raises(ShardingTypeError, match="new sizes"):
        put(mesh, (4, 8), P(None, "x")).reshape(32)  # a split dimension after a whole one
    assert split_on_one_axis((8, 4), (2, 4, 4)) == [[2, 4], 4]
    assert split_on_one_axis((32,), (2, 4, 4)) == [[2, 4, 4]]  # read backwards: a merge
    assert split_on_one_axis((8, 4), (4, 8)) is None


def test_reductions_transpose_and_full_like_keep_the_layout(mesh):
    x = put(mesh, (4, 6), P("x", "y"))
    assert [typeof(v) for v in (x.sum(0), x.max(1), x.T, snp.zeros_like(x), x.sum())] == \
        ["float32[6@y]", "float32[4@x]", "float32[6@y,4@x]", "float32[4@x,6@y]", "float32[]"]


def test_a_primitive_without_a_rule_is_refused_by_name(mesh):
    x = put(mesh, (4, 4), P("x", None))
    with pytest.raises(ShardingTypeError, match="sharding rule for gather is not implemented"):
        x[np.array([0, 2])]  # JAX's own rule for it is not built here
    assert typeof(x[:, 1:3]) == "float32[4@x,2]"  # a slice keeps the layout...
    with pytest.raises(ShardingTypeError, match=r"slicing on sharded dims where out dim \(1\) "
                       r"is not divisible by mesh axes \(2\) with spec \(x\)"):
        x[0]  # ...unless a split dimension no longer divides


def test_reshard_moves_the_layout_and_its_transpose_moves_it_back(mesh):
    x = put(mesh, (4, 4), P("x", None))
    with s11.set_mesh(mesh):
        y = s11.reshard(x, P(None, "y"))
        assert typeof(y) == "float32[4,4@y]" and y.sharding.spec == P(None, "y")
        g = s11.jit(s04.grad(lambda a: snp.sum(s11.reshard(a, P(None, "y")) ** 2)))(x)
    assert typeof(g) == "float32[4@x,4]"
    np.testing.assert_allclose(np.asarray(g), 2 * np.asarray(x), rtol=1e-6)
    assert s11.get_mesh() is None  # the block restored the mesh before it


def test_a_shard_maps_outputs_are_typed_by_out_specs(mesh):
    x = put(mesh, (4, 4), P("x", None))
    f = s11.shard_map(lambda a: a * 2, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
    assert typeof(f(x)) == "float32[4@x,4]"
    np.testing.assert_allclose(np.asarray(f(x)), 2 * np.asarray(x))


def test_a_new_layout_is_a_new_type_so_jit_traces_again(mesh):
    traces = []
    f = s11.jit(lambda a: traces.append(str(core.typeof(a))) or a + 1)
    a, b = put(mesh, (4, 4), P("x", None)), put(mesh, (4, 4), P(None, "x"))
    assert typeof(f(a)) == "float32[4@x,4]" and typeof(f(b)) == "float32[4,4@x]"
    f(a)
    assert traces == ["float32[4@x,4]", "float32[4,4@x]"]  # the third call hit the cache


# ------------------------------------------------------------------ random calls, JAX's rules

AXES = ((None, 1), ("x", 2), ("y", 2), (("x", "y"), 4))


@st.composite
def typed_operand(draw, shape=None):
    """A shape of dims from 1..8 and a spec splitting each dimension by axes that divide it,
    no mesh axis used twice."""
    if shape is None:
        shape = tuple(draw(st.lists(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=3)))
    spec, used = [], set()
    for d in shape:
        fits = [e for e, k in AXES if d % k == 0 and not (set(np.atleast_1d(e)) & used)
                or e is None]
        entry = draw(st.sampled_from(fits))
        used |= set(np.atleast_1d(entry)) - {None}
        spec.append(entry)
    return shape, tuple(spec)


def _shapes_of_size(size):
    dims = [1, 2, 4, 8, 16, 32, 64]
    return [s for n in (1, 2, 3) for s in itertools.product(dims, repeat=n)
            if int(np.prod(s)) == size]


@st.composite
def random_call(draw):
    """One operation on typed operands: a reshape, transpose, reduction, elementwise op, dot,
    slice, pad or concatenation."""
    shape, spec = draw(typed_operand())
    kind = draw(st.sampled_from(["reshape", "transpose", "sum", "add", "dot", "unary",
                                 "slice"]))
    if kind == "reshape":
        new = draw(st.sampled_from(_shapes_of_size(int(np.prod(shape)))))
        return [(shape, spec)], lambda np_, lax_, a: np_.reshape(a, new)
    if kind == "transpose":
        perm = tuple(draw(st.permutations(range(len(shape)))))
        return [(shape, spec)], lambda np_, lax_, a: np_.transpose(a, perm)
    if kind == "sum":
        axes = tuple(sorted(draw(st.sets(st.sampled_from(range(len(shape)))))))
        reduce = draw(st.sampled_from(["sum", "max", "mean", "argmax"]))
        axis = (axes[0] if axes else None) if reduce == "argmax" else (axes or None)
        return [(shape, spec)], lambda np_, lax_, a: getattr(np_, reduce)(a, axis=axis)
    if kind == "slice":
        lo = tuple(draw(st.integers(0, d - 1)) for d in shape)
        hi = tuple(draw(st.integers(a + 1, d)) for a, d in zip(lo, shape, strict=True))
        pads = [(draw(st.integers(0, 2)), draw(st.integers(0, 2)), draw(st.integers(0, 1)))
                for _ in shape]
        op = draw(st.sampled_from([
            lambda np_, lax_, a: lax_.slice(a, lo, hi),
            lambda np_, lax_, a: lax_.dynamic_slice(a, [0] * a.ndim, [h - l for l, h in zip(
                lo, hi, strict=True)]),
            lambda np_, lax_, a: lax_.pad(a, 0.0, pads), lambda np_, lax_, a: lax_.rev(a, (0,)),
            lambda np_, lax_, a: np_.concatenate([a, a], axis=-1),
            lambda np_, lax_, a: np_.clip(a, 0.0, 1.0)]))
        return [(shape, spec)], op
    if kind == "unary":
        op = draw(st.sampled_from([
            lambda np_, lax_, a: np_.exp(a).astype(np_.int32),
            lambda np_, lax_, a: np_.expand_dims(a, 0),
            lambda np_, lax_, a: np_.broadcast_to(a, (2, *a.shape)),
            lambda np_, lax_, a: np_.squeeze(a),
            lambda np_, lax_, a: np_.where(a > 0, a, 0.0),
            lambda np_, lax_, a: np_.cumsum(a, axis=-1),
            lambda np_, lax_, a: np_.cumprod(a, axis=0),
            lambda np_, lax_, a: np_.tile(a, (2,) + (1,) * (a.ndim - 1)),
            lambda np_, lax_, a: np_.tile(a, 3),
            lambda np_, lax_, a: np_.zeros_like(a) + a.T.T]))
        return [(shape, spec)], op
    if kind == "add":
        other = tuple(d if draw(st.booleans()) else 1 for d in shape)
        return [(shape, spec), draw(typed_operand(other))], lambda np_, lax_, a, b: a * b
    k = draw(st.sampled_from([2, 4]))
    second = draw(typed_operand((shape[-1], k)))
    return [(shape, spec), second], lambda np_, lax_, a, b: np_.matmul(a, b)


def _outcome(fn):
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 (the message is the point)
        return f"{type(e).__name__}: {e}"


@settings(max_examples=200, deadline=None, derandomize=True)
@given(random_call())
def test_random_calls_get_jaxs_types_or_jaxs_refusals(four, call):
    """Our rules against JAX's own, on an abstract 2x2 Explicit mesh: the same result type
    (`f32[4@x,8]`) or the same error message, for random shapes, splits and operations."""
    operands, f = call
    mesh = s11.make_mesh((2, 2), ("x", "y"))
    avals = [core.ShapedArray(s, np.float32, sharding=s11.NamedSharding(mesh, P(*p)))
             for s, p in operands]

    def ours():
        flat = lu.wrap_init(lambda *xs: [f(snp, lax, *xs)])
        return str(pe.trace_to_jaxpr_dynamic(flat, avals)[1][0])

    jmesh = AbstractMesh((2, 2), ("x", "y"), axis_types=(JAxisType.Explicit,) * 2)
    structs = [jax.ShapeDtypeStruct(s, np.float32, sharding=JNamedSharding(jmesh, JP(*p)))
               for s, p in operands]

    def theirs():
        with jax.sharding.use_abstract_mesh(jmesh):
            return str(jax.typeof(jax.eval_shape(lambda *xs: f(jnp, jax.lax, *xs), *structs)))
    mine, jaxs = _outcome(ours), _outcome(theirs)
    if jaxs == "AssertionError: ":  # JAX's reshape matcher asserts where ours refuses
        assert mine.startswith("ShardingTypeError: This reshape is not supported.")
    else:
        assert mine == jaxs


@pytest.mark.parametrize("dtype, shape, spec, new", [
    (np.float32, (4, 8), ("x", "y"), np.int32),  # same width: the same layout
    (np.float32, (4, 8), ("x", "y"), np.uint8),  # narrower: a new last axis, whole
    (np.float32, (8, 4), (("x", "y"), None), np.int16),
    (np.uint8, (4, 2, 4), ("x", None, "y"), np.uint32),  # wider: the split last axis joins
    (np.int16, (8, 2), ("y", None), np.float32),
    (np.int16, (4, 3), ("x", None), np.float32),  # 3 * 16 bits are no float32: JAX's error
])
def test_bitcast_convert_type_types_as_jaxs(four, dtype, shape, spec, new):
    mesh = s11.make_mesh((2, 2), ("x", "y"))
    aval = core.ShapedArray(shape, np.dtype(dtype), sharding=s11.NamedSharding(mesh, P(*spec)))

    def ours():
        flat = lu.wrap_init(lambda x: [lax.bitcast_convert_type(x, new)])
        return str(pe.trace_to_jaxpr_dynamic(flat, [aval])[1][0])

    jmesh = AbstractMesh((2, 2), ("x", "y"), axis_types=(JAxisType.Explicit,) * 2)
    struct = jax.ShapeDtypeStruct(shape, dtype, sharding=JNamedSharding(jmesh, JP(*spec)))

    def theirs():
        with jax.sharding.use_abstract_mesh(jmesh):
            return str(jax.typeof(jax.eval_shape(
                lambda x: jax.lax.bitcast_convert_type(x, new), struct)))
    assert _outcome(ours) == _outcome(theirs)


@pytest.mark.parametrize("shape, spec, reps", [
    ((4, 8), ("x", "y"), (2, 1)),  # a split axis repeated: JAX's refusal
    ((4, 8), ("x", None), (1, 3)), ((4, 8), (None, "y"), (2, 1)),
    ((4, 8), (("x", "y"), None), (1, 2)),
])
def test_tile_keeps_the_layout_or_refuses_as_jaxs(four, shape, spec, reps):
    mesh = s11.make_mesh((2, 2), ("x", "y"))
    aval = core.ShapedArray(shape, np.float32, sharding=s11.NamedSharding(mesh, P(*spec)))
    flat = lu.wrap_init(lambda a: [snp.tile(a, reps)])
    mine = _outcome(lambda: str(pe.trace_to_jaxpr_dynamic(flat, [aval])[1][0]))
    jmesh = AbstractMesh((2, 2), ("x", "y"), axis_types=(JAxisType.Explicit,) * 2)
    struct = jax.ShapeDtypeStruct(shape, np.float32, sharding=JNamedSharding(jmesh, JP(*spec)))

    def theirs():
        with jax.sharding.use_abstract_mesh(jmesh):
            return str(jax.typeof(jax.eval_shape(lambda a: jnp.tile(a, reps), struct)))
    assert mine == _outcome(theirs)
