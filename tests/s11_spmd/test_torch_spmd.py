"""The torch side on 4 CPU devices: `use_spmd()` puts every lazy tensor on "SPMD:0",
`mark_sharding` gives the tile assignments torch_xla's docs and tests show, the sharding joins
the node hash (a new layout is a new graph, the same layout a cached one), and a sharded matmul
and a data-parallel MLP step give eager torch's numbers."""

from __future__ import annotations

import functools
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from stages.s02_tracing.core import ShapedArray
from stages.s10_lazy_tensors import device_data, dynamo_bridge, graph_executor, metrics
from stages.s10_lazy_tensors import torch_xla as txla
from stages.s10_lazy_tensors.ir import Node
from stages.s10_lazy_tensors.tensor import get_xla_tensor
from stages.s11_spmd import NamedSharding, P, make_mesh
from stages.s11_spmd import xla_sharding as xs
from stages.s11_spmd.runtime import is_spmd, use_spmd
from stages.s11_spmd.xla_sharding_util import (
    OpSharding,
    ShardedData,
    ShardingType,
    set_sharding,
)
from tests.s11_spmd.conftest import ROOT, cpu_devices


@pytest.fixture(scope="module")
def spmd():
    with cpu_devices(4):
        previous = device_data.set_virtual_device(None)
        use_spmd()
        try:
            yield xs.Mesh(np.arange(4), (2, 2), ("data", "model"))
        finally:
            device_data.set_virtual_device(previous)


@pytest.fixture(autouse=True)
def fresh():
    dynamo_bridge.clear_pending_irs()
    graph_executor.clear_computation_cache()
    metrics.clear_all()
    yield


def lazy(x: torch.Tensor) -> torch.Tensor:
    return x.to(txla.device())


def _spec(t) -> str:
    return xs.get_xla_sharding_spec(t)


def _compiles() -> tuple[int, int]:
    """(UncachedCompile, CachedCompile); a counter never bumped reads None."""
    return (metrics.counter_value("UncachedCompile") or 0,
            metrics.counter_value("CachedCompile") or 0)


# ------------------------------------------------------------------ annotations


def test_mark_sharding_gives_torch_xlas_tile_assignments(spmd):
    a, b = lazy(torch.ones(8, 4)), lazy(torch.ones(8, 4))
    xs.mark_sharding(a, spmd, ("data", "model"))
    xs.mark_sharding(b, spmd, (None, "model"))
    assert _spec(a) == "{devices=[2,2]0,1,2,3}"
    assert _spec(b) == "{devices=[1,2,2]0,2,1,3 last_tile_dim_replicate}"


@pytest.mark.parametrize("spec", [("data", None), (None, "data"), ("model", "data"),
                                  (("data", "model"), None), (None, None), ("model", None)])
def test_the_op_sharding_is_the_jax_sides_tile_assignment(spmd, spec):
    jax_side = NamedSharding(make_mesh((2, 2), ("data", "model")), P(*spec))
    hlo = jax_side._to_xla_hlo_sharding(2)
    expected = "{replicated}" if hlo.is_replicated() else hlo.to_string_v1()
    assert str(spmd.get_op_sharding(spec)) == expected


def test_axes_may_be_named_by_index_and_device_ids_are_written_as_ids(spmd):
    assert spmd.get_op_sharding((0, 1)) == spmd.get_op_sharding(("data", "model"))
    backwards = xs.Mesh(np.arange(4)[::-1], (2, 2), ("data", "model"))
    assert str(backwards.get_op_sharding(("data", "model"))) == "{devices=[2,2]3,2,1,0}"


def test_every_tensor_lives_on_the_virtual_device(spmd):
    assert is_spmd() and device_data.device_string() == "SPMD:0"
    t = lazy(torch.arange(8.0).reshape(4, 2))
    xs.mark_sharding(t, spmd, ("data", None))
    info = xs.get_xla_tensor_debug_info(t)
    assert "Device: SPMD:0\n" in info
    assert "  Data Device: SPMD:0\n" in info and "  NumShards: 4\n" in info
    handle = get_xla_tensor(t).handle
    assert isinstance(handle, ShardedData) and [s.aval.shape for s in handle.shards] == \
        [(2, 2)] * 4
    np.testing.assert_array_equal(t.cpu().numpy(), np.arange(8.0).reshape(4, 2))


# ------------------------------------------------------------------ values


def test_a_sharded_matmul_is_one_program_and_gives_eager_torchs_numbers(spmd):
    torch.manual_seed(0)
    a, b = torch.randn(8, 6), torch.randn(6, 4)
    xa, xb = lazy(a), lazy(b)
    xs.mark_sharding(xa, spmd, ("data", None))
    xs.mark_sharding(xb, spmd, (None, "model"))
    out = torch.tanh(xa @ xb)
    txla.sync()
    np.testing.assert_allclose(out.cpu().numpy(), torch.tanh(a @ b).numpy(), rtol=1e-5,
                               atol=1e-6)
    assert metrics.counter_value("ExecuteReplicated") == 1
    assert metrics.counter_value("UncachedCompile") == 1
    (cached,) = graph_executor.computation_cache.values()
    assert cached.is_sharded and "mhlo.num_partitions = 4 : i32" in cached.text
    assert 'mhlo.sharding = "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}"' in cached.text
    assert 'mhlo.sharding = "{devices=[1,2,2]0,2,1,3 last_tile_dim_replicate}"' in cached.text
    # the partitioner chose the result's layout: rows by "data", columns by "model"
    assert _spec(out) == "{devices=[2,2]0,1,2,3}"


def _mlp_steps(device: str, mesh: xs.Mesh | None, steps: int = 3) -> tuple[list, list]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))
    batches = [(torch.randn(8, 6), torch.randint(0, 3, (8,))) for _ in range(steps)]
    model = model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for x, y in batches:
        x, y = x.to(device), y.to(device)
        if mesh is not None:  # data parallel: the batch split along "data", weights replicated
            xs.mark_sharding(x, mesh, ("data", None))
            xs.mark_sharding(y, mesh, ("data",))
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if mesh is not None:
            txla.sync()
        losses.append(loss.detach().cpu().item())
    return losses, [p.detach().cpu() for p in model.parameters()]


def test_a_data_parallel_mlp_step_gives_eager_torchs_numbers(spmd):
    losses, params = _mlp_steps(str(txla.device()), spmd)
    cpu_losses, cpu_params = _mlp_steps("cpu", None)
    np.testing.assert_allclose(losses, cpu_losses, rtol=1e-5)
    for p, q in zip(params, cpu_params, strict=True):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-4, atol=1e-6)
    assert metrics.counter_value("ExecuteReplicated") == 3
    assert _compiles() == (1, 2)  # one step's graph, compiled once, replayed by its hash
    assert metrics.metric_data("InputOutputAliasCount")[1] == 4.0  # the weights donated


# ------------------------------------------------------------------ the hash


def _matmul_graph(mesh: xs.Mesh, spec: tuple) -> torch.Tensor:
    x, w = lazy(torch.ones(8, 4)), lazy(torch.ones(4, 2))
    xs.mark_sharding(x, mesh, spec)
    out = x @ w
    txla.sync()
    return out


def test_a_new_sharding_is_a_new_graph_and_the_same_one_is_cached(spmd):
    _matmul_graph(spmd, ("data", None))
    assert _compiles() == (1, 0)
    _matmul_graph(spmd, ("data", None))  # new tensors, same shapes, same layout
    assert _compiles() == (1, 1)
    _matmul_graph(spmd, (None, "model"))  # the same graph laid out differently
    assert _compiles() == (2, 1)


def test_the_sharding_joins_the_node_hash(spmd):
    plain, marked = lazy(torch.ones(8, 4)), lazy(torch.ones(8, 4))
    xs.mark_sharding(marked, spmd, ("data", None))
    again = lazy(torch.ones(8, 4))
    xs.mark_sharding(again, spmd, ("data", None))
    h = [get_xla_tensor(t).get_ir_value().hash() for t in (plain, marked, again)]
    assert h[0] != h[1] and h[1] == h[2]
    node = get_xla_tensor(marked).get_ir_value().node
    assert node.hash() != node.dag_hash and node.sharding_hash != 0


def test_each_field_of_a_sharding_changes_its_hash():
    base = OpSharding(3, (2, 2), (0, 1, 2, 3), False)
    others = [OpSharding(3, (4, 1), (0, 1, 2, 3), False),  # tile dimensions
              OpSharding(3, (2, 2), (3, 2, 1, 0), False),  # devices
              OpSharding(3, (2, 2), (0, 1, 2, 3), True),  # replicated on the last tile dim
              OpSharding()]
    hashes = {s.fold_hash(12345) for s in [base, *others]}
    assert len(hashes) == 5


_MASK = 2**128 - 1


def _combine(a: int, b: int) -> int:
    """torch/csrc/lazy/core/hash.cpp's HashCombine."""
    kb = (101 << 64) + 0x27D4EB2F165667C5
    return (a ^ ((b * kb + 0x9E3779B97F4A7C15 + ((a << 6) & _MASK) + (a >> 2)) & _MASK)) & _MASK


def _hash_block(data: bytes, seed: int) -> int:
    """torch/csrc/lazy/core/hash.cpp's HashBlock: MurmurHash64A on uint128 words, a short
    last word zero-filled (LoadHash)."""
    m = 0xC6A4A7935BD1E995
    h = (seed ^ (len(data) * m)) & _MASK
    for at in range(0, len(data), 16):
        k = int.from_bytes(data[at:at + 16].ljust(16, b"\0"), "little")
        k = (k * m) & _MASK
        k ^= k >> 47
        k = (k * m) & _MASK
        h = ((h ^ k) * m) & _MASK
    h ^= h >> 47
    h = (h * m) & _MASK
    return h ^ (h >> 47)


def _fold(h: int, s: OpSharding) -> int:
    """One output's sharding in torch_xla's XlaNode::UpdateShardingHash (ir.cpp at HEAD
    41398bff): its tile dimensions, HashBlock over the proto's `repeated int64
    tile_assignment_devices` (8 bytes each), its type, replicate_on_last_tile_dim, then the
    empty tile shape's element type (0)."""
    for d in s.tile_assignment_dimensions:
        h = _combine(h, d)
    devices = s.tile_assignment_devices
    h = _hash_block(struct.pack(f"<{len(devices)}q", *devices), h)
    for field in (int(s.type), int(s.replicate_on_last_tile_dim), 0):
        h = _combine(h, field)
    return h


def _update_sharding_hash(node_hash: int, shardings: list) -> int:
    """From the node hash: each output's index, then its sharding if it has one."""
    h = node_hash
    for i, s in enumerate(shardings):
        h = _combine(h, i)
        if s is not None:
            h = _fold(h, s)
    return h


def test_a_replicated_and_a_manual_sharding_hash_differently():
    # neither has tile dimensions or devices: the proto type alone tells them apart
    replicated, manual = OpSharding(ShardingType.REPLICATED), OpSharding(ShardingType.MANUAL)
    assert replicated.fold_hash(12345) != manual.fold_hash(12345)
    assert replicated.fold_hash(12345) == _fold(12345, replicated)
    assert manual.fold_hash(12345) == _fold(12345, manual)


def test_the_sharding_hash_is_torch_xlas_with_int64_devices():
    tiled = OpSharding(ShardingType.TILED, (2, 2), (0, 2, 1, 3), False)
    # the value is _update_sharding_hash(12345, [tiled]), the C++ re-derived above
    assert tiled.fold_hash(_combine(12345, 0)) == 0x78DB932616E4D3CDF35465DCC67844B5
    assert _update_sharding_hash(12345, [tiled]) == 0x78DB932616E4D3CDF35465DCC67844B5
    partial = OpSharding(ShardingType.TILED, (1, 2, 2), (0, 2, 1, 3), True)
    node = Node("aten::foo", [], [ShapedArray((4, 4), np.dtype(np.float32))] * 2)
    set_sharding(node, partial, 1)  # output 0 has none: only its index is folded
    assert node.sharding_hash == _update_sharding_hash(node.node_hash, [None, partial])


def test_pending_ir_gets_a_sharding_node_that_lowers_to_a_sharding_custom_call(spmd):
    x = lazy(torch.arange(16.0).reshape(8, 2))
    y = x * 3.0
    xs.mark_sharding(y, spmd, ("data", None))
    assert "xla::custom_sharding" in txla.get_tensors_text([y])
    assert _spec(y) == "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}"
    np.testing.assert_allclose(y.cpu().numpy(), np.arange(16.0).reshape(8, 2) * 3)
    (cached,) = graph_executor.computation_cache.values()
    assert "@Sharding" in cached.text


# ------------------------------------------------------------------ errors, as torch_xla's


def test_a_spec_of_the_wrong_rank_is_refused(spmd):
    with pytest.raises(AssertionError, match=r"^Partition spec length \(1\) should be equal to "
                       r"the input rank \(2\)\.$"):
        xs.mark_sharding(lazy(torch.ones(4, 4)), spmd, ("data",))


def test_an_unknown_axis_name_is_refused(spmd):
    with pytest.raises(ValueError, match="^Axis name batch is not defined in the given mesh$"):
        xs.mark_sharding(lazy(torch.ones(4, 4)), spmd, ("batch", None))


def test_a_mesh_axis_used_twice_is_refused(spmd):
    with pytest.raises(AssertionError, match=r"^Each device mesh dimension should appear at "
                       r"most once in partition_spec \(0, 0\)\.$"):
        xs.mark_sharding(lazy(torch.ones(4, 4)), spmd, ("data", "data"))


def test_a_mesh_must_cover_every_device(spmd):
    with pytest.raises(AssertionError, match=r"^Number of device IDs \(2\) must match the "
                       r"global number of devices \(4\)$"):
        xs.Mesh(np.arange(2), (2,), ("data",))


def test_a_second_annotation_must_be_cleared_first(spmd):
    t = lazy(torch.ones(4, 4))
    xs.mark_sharding(t, spmd, ("data", None))
    xs.mark_sharding(t, spmd, ("data", None))  # the same one again: nothing to do
    with pytest.raises(RuntimeError, match=r"^Existing annotation must be cleared first: "
                       r"\{devices=\[2,1,2\]0,1,2,3 last_tile_dim_replicate\}$"):
        xs.mark_sharding(t, spmd, (None, "data"))
    xs.clear_sharding(t)
    xs.mark_sharding(t, spmd, (None, "data"))
    assert _spec(t) == "{devices=[1,2,2]0,1,2,3 last_tile_dim_replicate}"


def test_mark_sharding_needs_spmd_mode(spmd):
    t = lazy(torch.ones(4, 4))
    previous = device_data.set_virtual_device(None)
    try:
        with pytest.raises(RuntimeError, match=r"^Please enable SPMD via "
                           r"`torch_xla.runtime.use_spmd\(\)`$"):
            xs.mark_sharding(t, spmd, ("data", None))
    finally:
        device_data.set_virtual_device(previous)


# ------------------------------------------------------------------ uneven shards

UNEVEN = Path(__file__).with_name("torch_uneven_worker.py")


@functools.cache
def _uneven(mode: str) -> dict:
    """The worker's report; a crash (a mismatched buffer reaching the runtime) fails here."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("CPU_NUM_DEVICES", None)
    out = subprocess.run([sys.executable, str(UNEVEN), mode], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=600)
    assert out.returncode == 0, f"rc {out.returncode}: {out.stderr[-3000:]}"
    return json.loads(out.stdout.strip().splitlines()[-1])


def _eager(shape: tuple[int, int]) -> torch.Tensor:
    return torch.arange(float(np.prod(shape))).reshape(shape)


@pytest.mark.parametrize("shape", [(6, 5), (4, 5), (8, 4)], ids=str)
def test_ops_on_uneven_shards_give_eager_torchs_numbers(shape):
    # (6, 5) over (2, 2) is cut into padded 3x3 blocks; the partitioner replicates the
    # parameter of `t + 0` (the add folds away), so the blocks must be cut again
    from tests.s11_spmd.torch_uneven_worker import OPS, SPECS

    report = _uneven("values")
    for spec in SPECS:
        for name, op in OPS.items():
            np.testing.assert_array_equal(np.array(report[f"{shape} {spec} {name}"]),
                                          op(_eager(shape)).numpy(), err_msg=f"{spec} {name}")
        np.testing.assert_array_equal(np.array(report[f"{shape} {spec} add_ mul_"]),
                                      _eager(shape).add_(1).mul_(2).numpy())


def test_an_in_place_update_donates_its_shards_where_the_results_blocks_match():
    # buffer donors, as torch_xla's: an uneven result comes back replicated, so its
    # shards are not aliased (and were refused at compile time as forced aliases)
    report = _uneven("values")
    assert all(report[f"(8, 4) {spec} donated"] == [True] * 4
               for spec in [("data", "model"), (None, "model"), ("model", "data")])
    assert report["(6, 5) ('data', 'model') donated"] == [False] * 4


def test_shards_the_program_did_not_ask_for_are_refused_before_the_run():
    assert _uneven("guard") == {"error": "Parameter 0 of the program is float32[6,5] on each "
                                         "device, but its shard on CPU:0 is float32[3,3]"}
