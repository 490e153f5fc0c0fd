"""Meshes, specs and shardings without running anything: the tile assignment (the examples
of torch_xla's docs and tests, and JAX's HloSharding text for every spec on several meshes), block
shapes, and the errors JAX raises for a bad spec, word for word."""

from __future__ import annotations

import copy
import functools
import itertools
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from jax._src.named_sharding import named_sharding_to_xla_hlo_sharding
from jax._src.sharding_impls import NamedSharding as JaxNamedSharding
from jax.sharding import AbstractMesh, AxisType
from jax.sharding import PartitionSpec as JaxP

import stages.s11_spmd as s11
from stages.s07_caches.xla_bridge import Device
from stages.s11_spmd import P
from stages.s11_spmd.hlo_sharding import HloSharding, canonical_iota
from stages.s11_spmd.sharding_impls import hlo_to_named_sharding
from tests.s11_spmd.conftest import OURS, ROOT, cpu_devices
from tests.s11_spmd.sharding_checks import run


def mesh(shape, names):
    n = int(np.prod(shape))
    grid = np.empty(n, dtype=object)
    grid[:] = [Device(i, "cpu", "cpu") for i in range(n)]
    return s11.Mesh(grid.reshape(shape), names)


def jax_mesh(shape, names):
    return AbstractMesh(shape, names, axis_types=(AxisType.Auto,) * len(names))


def test_torch_xla_tile_assignments_from_its_docs_and_tests():
    m = mesh((2, 2), ("data", "model"))
    assert s11.NamedSharding(m, P("data", "model"))._to_xla_hlo_sharding(2).to_string_v1() \
        == "{devices=[2,2]0,1,2,3}"
    assert s11.NamedSharding(m, P(None, "model"))._to_xla_hlo_sharding(2).to_string_v1() \
        == "{devices=[1,2,2]0,2,1,3 last_tile_dim_replicate}"
    assert str(s11.NamedSharding(m, P())._to_xla_hlo_sharding(2)) == "{replicated}"


def all_specs(names, ndim):
    """Every way of giving each mesh axis to a dimension (in every order) or to none."""
    for choice in itertools.product(range(ndim + 1), repeat=len(names)):
        groups = [[] for _ in range(ndim)]
        for name, dim in zip(names, choice, strict=True):
            if dim < ndim:
                groups[dim].append(name)
        for orders in itertools.product(*(itertools.permutations(g) for g in groups)):
            yield [None if not o else o[0] if len(o) == 1 else tuple(o) for o in orders]


MESHES = [((2, 2), ("a", "b")), ((2, 4), ("a", "b")), ((2, 2, 2), ("a", "b", "c")),
          ((8,), ("a",)), ((1, 4), ("a", "b")), ((2, 1, 2), ("a", "b", "c"))]


@pytest.mark.parametrize("shape,names", MESHES, ids=str)
def test_every_spec_gives_jaxs_hlo_sharding_text(shape, names):
    m, jm = mesh(shape, names), jax_mesh(shape, names)
    count = 0
    for ndim in (1, 2, 3):
        for entries in all_specs(names, ndim):
            ours = s11.NamedSharding(m, P(*entries))._to_xla_hlo_sharding(ndim)
            theirs = named_sharding_to_xla_hlo_sharding(JaxNamedSharding(jm, JaxP(*entries)),
                                                        ndim)
            assert str(ours) == str(theirs), entries
            if ours.kind == "tiled":
                assert ours.devices().ravel().tolist() == \
                    list(theirs.tile_assignment_devices()), entries
            count += 1
    assert count >= 9


def test_canonical_iota_merges_what_stays_adjacent():
    assert canonical_iota((2, 2), (0, 1)) == ([4], [0])
    assert canonical_iota((2, 2), (1, 0)) == ([2, 2], [1, 0])
    assert canonical_iota((2, 1, 2), (2, 0, 1)) == ([2, 2], [1, 0])
    assert canonical_iota((2, 2, 2), (0, 2, 1)) == ([2, 2, 2], [0, 2, 1])


def test_a_compiled_sharding_is_read_back_as_a_spec():
    m = mesh((2, 2), ("data", "model"))
    for entries in ([None, "model"], ["data"], [("data", "model")], ["model", "data"]):
        named = s11.NamedSharding(m, P(*entries))
        hlo = named._to_xla_hlo_sharding(2)
        back = hlo_to_named_sharding(HloSharding.from_devices(hlo.devices(),
                                                              hlo.replicate_on_last_tile_dim),
                                     m, 2)
        assert back.is_equivalent_to(named, 2)


def test_block_shapes_and_each_devices_slice():
    m = mesh((2, 2), ("data", "model"))
    s = s11.NamedSharding(m, P("data", None))
    assert s.shard_shape((8, 6)) == (4, 6)
    index = s.devices_indices_map((8, 6))
    assert [index[d] for d in m.devices.flat] == [
        (slice(0, 4), slice(None)), (slice(0, 4), slice(None)),
        (slice(4, 8), slice(None)), (slice(4, 8), slice(None))]
    both = s11.NamedSharding(m, P(("model", "data")))
    assert [both.devices_indices_map((8,))[d][0].start for d in m.devices.flat] == [0, 4, 2, 6]
    assert not s.is_fully_replicated and s11.NamedSharding(m, P()).is_fully_replicated


def _message(callable_):
    with pytest.raises(Exception) as info:
        callable_()
    return type(info.value).__name__, str(info.value)


@pytest.mark.parametrize("entries", [["z"], ["a", "a"], [("a", "b"), "a"], [("a",), "a"],
                                     [["a", "z"]], [("b", None)], [1]], ids=str)
def test_a_bad_spec_raises_jaxs_error(entries):
    ours = _message(lambda: s11.NamedSharding(mesh((2, 2), ("a", "b")), P(*entries)))
    theirs = _message(lambda: JaxNamedSharding(jax_mesh((2, 2), ("a", "b")), JaxP(*entries)))
    assert ours == theirs


def _strip_sharding(text, sharding):
    return text.replace(repr(sharding), "<sharding>")


def test_an_uneven_split_and_a_short_rank_raise_jaxs_errors():
    ours_s = s11.NamedSharding(mesh((2, 2), ("a", "b")), P("a", "b"))
    theirs_s = JaxNamedSharding(jax_mesh((2, 2), ("a", "b")), JaxP("a", "b"))
    for name, arg in (("shard_shape", (3, 4)), ("check_compatible_aval", (3,))):
        k1, m1 = _message(functools.partial(getattr(ours_s, name), arg))
        k2, m2 = _message(functools.partial(getattr(theirs_s, name), arg))
        assert (k1, _strip_sharding(m1, ours_s)) == (k2, _strip_sharding(m2, theirs_s))


def test_reprs_are_jaxs():
    m = mesh((2, 2), ("data", "model"))
    # JAX 0.10.2's two forms: repr names the fields, str (in a jaxpr, a sharding) is short
    assert repr(m) == "Mesh(axis_sizes=(2, 2), axis_names=('data', 'model'), " \
        "axis_types=(Auto, Auto))"
    assert str(m) == "Mesh('data': 2, 'model': 2, axis_types=(Auto, Auto))"
    assert repr(P("data", None)) == "P('data', None)"
    assert repr(P(("data", "model"))) == "P(('data', 'model'),)"
    assert repr(P()) == "P()"
    assert repr(s11.NamedSharding(m, P("data"))) == (
        "NamedSharding(mesh=Mesh('data': 2, 'model': 2, axis_types=(Auto, Auto)), "
        "spec=P('data',), memory_kind=device)")


# ------------------------------------------------------------------ PartitionSpec entries

ENTRIES = [[("x",), None], [("x",)], [["x", "y"]], [["x"]], [[]], [()], [(), None],
           [(None,)], [("x", "y"), "z"], ["x", ["y", None]], [("x",), ("y",)], [1], []]


@pytest.mark.parametrize("entries", ENTRIES, ids=str)
def test_a_spec_canonicalizes_its_entries_as_jaxs(entries):
    ours, theirs = P(*entries), JaxP(*entries)
    assert repr(ours) == repr(theirs)
    assert tuple(ours) == theirs.partitions
    assert copy.deepcopy(ours) == ours and pickle.loads(pickle.dumps(ours)) == ours


def test_a_one_name_tuple_is_the_name():
    assert (P(("x",)) == P("x"), hash(P(("x",))) == hash(P("x"))) == (True, True)
    assert (JaxP(("x",)) == JaxP("x"), hash(JaxP(("x",))) == hash(JaxP("x"))) == (True, True)
    m = mesh((2, 2), ("x", "y"))
    assert s11.NamedSharding(m, P(("x",), None)) == s11.NamedSharding(m, P("x", None))
    jm = jax_mesh((2, 2), ("x", "y"))
    assert JaxNamedSharding(jm, JaxP(("x",), None)) == JaxNamedSharding(jm, JaxP("x", None))


@pytest.mark.parametrize("other", [("x",), ["x"], ("x", None), (), "x"], ids=str)
def test_a_spec_equals_specs_only_as_jaxs(other):
    for spec, theirs in [(P("x"), JaxP("x")), (P("x", None), JaxP("x", None)), (P(), JaxP())]:
        got = (spec == other, other == spec, spec != other, spec == P(*spec))
        assert got == (theirs == other, other == theirs, theirs != other, True)
        assert got[:3] == (False, False, True)


@pytest.mark.parametrize("entries", [[[("x",)]], [(("x",),)], [("x", ["y"])], [{"x"}]],
                         ids=str)
def test_a_nested_or_unhashable_entry_raises_jaxs_error(entries):
    assert _message(lambda: P(*entries)) == _message(lambda: JaxP(*entries))


# ------------------------------------------------------------------ against JAX on 4 devices


@functools.cache
def _jax_checks() -> dict:
    """sharding_checks.py run by JAX on 4 CPU devices."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, str(Path(__file__).with_name("sharding_checks.py")),
                          "4"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _our_checks() -> dict:
    with cpu_devices(4):
        return json.loads(json.dumps(run(OURS)))  # tuples as JAX's side has them: lists


def test_a_spec_longer_than_the_rank_raises_jaxs_whole_message():
    # the Mesh inside the NamedSharding repr is JAX's too, so the messages match in full
    ours, theirs = _our_checks()["messages"], _jax_checks()["messages"]
    assert ours.keys() == theirs.keys()
    for what in theirs:
        assert ours[what] == theirs[what], what


def test_each_devices_slice_of_a_size_0_dimension_and_equivalence_are_jaxs():
    assert _our_checks()["index_maps"] == _jax_checks()["index_maps"]


def test_replication_addressability_and_memory_kind_are_jaxs():
    ours, theirs = _our_checks()["properties"], _jax_checks()["properties"]
    assert ours == theirs
    assert (theirs["()"][0], theirs["('x', 'y')"][0]) == (True, False)  # replicated or not


@pytest.mark.parametrize("order, text", [
    ([0, 2, 4, 6, 1, 3, 5, 7], "{devices=[8,1]<=[4,2]T(1,0)}"),  # (y, x) over a (4, 2) mesh
    ([0, 4, 1, 5, 2, 6, 3, 7], "{devices=[8,1]<=[2,4]T(1,0)}"),
])
def test_a_device_order_with_the_minor_axis_major_reads_back_as_xlas_iota(order, text):
    # the iota's shape is the mesh's, not the tile's: both must be searched to read it back
    sharding = HloSharding.from_devices(np.array(order).reshape(8, 1))
    assert str(sharding) == text
    assert sharding.devices().ravel().tolist() == order


def test_jit_lays_an_output_out_minor_axis_first(eight):
    m = s11.make_mesh((4, 2), ("x", "y"))
    x = np.arange(64.0, dtype=np.float32).reshape(8, 8)
    out = s11.jit(lambda a: a * 2, out_shardings=s11.NamedSharding(m, P(("y", "x"))))(x)
    assert out.sharding.spec == P(("y", "x"))
    np.testing.assert_array_equal(np.asarray(out), x * 2)
    for shard in out.addressable_shards:  # device k of the (y, x) order holds block k
        k = [0, 2, 4, 6, 1, 3, 5, 7].index(shard.device.id)
        np.testing.assert_array_equal(np.asarray(shard.data), x[k:k + 1] * 2)


def test_a_mesh_is_made_from_an_array_of_the_devices_as_in_jax(eight):
    # a device is not a tuple: np.array(devices()) is an array of 8 devices, not of 8 rows
    grid = np.array(s11.devices()).reshape(4, 2)
    m = s11.Mesh(grid, ("x", "y"))
    assert m.shape == {"x": 4, "y": 2} and m.devices.ravel().tolist() == list(s11.devices())


@pytest.mark.parametrize("make", [
    lambda P: P("x") + P("y", None), lambda P: P("x") + ("y",), lambda P: ("y",) + P(("x", "z")),
    lambda P: P() + P(), lambda P: P("x") + 1, lambda P: P("x") + ["y"], lambda P: 1 + P("x"),
], ids=["spec+spec", "spec+tuple", "tuple+spec", "empty", "spec+int", "spec+list", "int+spec"])
def test_specs_add_up_as_jaxs(make):
    from jax.sharding import PartitionSpec as JaxP

    def outcome(P):
        try:
            return repr(make(P))
        except Exception as e:  # noqa: BLE001 (the kind of failure is the point)
            return type(e).__name__
    assert outcome(P) == outcome(JaxP)
