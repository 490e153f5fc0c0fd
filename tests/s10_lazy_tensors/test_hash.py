"""Node and graph hashes: torch's HashCombine with its constants, shapes only at the leaves,
device data by shape and never by value, and the graph hash's ingredients in torch_xla's order."""

from __future__ import annotations

import struct

import numpy as np
import pytest
import torch

from stages.s02_tracing.core import ShapedArray
from stages.s10_lazy_tensors import graph_executor, hash, ir, metrics, torch_xla
from stages.s10_lazy_tensors.tensor import DeviceContextArena, get_xla_tensor

MASK = 2**128 - 1


def combine(a: int, b: int) -> int:
    """torch/csrc/lazy/core/hash.cpp's HashCombine, written out with its own constants."""
    kb = (101 << 64) + 0x27D4EB2F165667C5
    return (a ^ ((b * kb + 0x9E3779B97F4A7C15 + ((a << 6) & MASK) + (a >> 2)) & MASK)) & MASK


@pytest.mark.parametrize("a,b", [(0, 0), (1, 2), (2**128 - 1, 2**127 + 5),
                                 (0x165667B19E3779F9, 0x85EBCA77C2B2AE63)])
def test_hash_combine_is_torch_formula(a, b):
    assert hash.hash_combine(a, b) == combine(a, b)


def test_mhash_folds_from_the_right_to_its_seed():
    h1, h2 = hash.hash_value(True), hash.hash_value(3)
    assert hash.mhash(True, 3) == combine(h1, combine(h2, 0x165667B19E3779F9))
    assert hash.hash_value(3) == hash.data_hash(struct.pack("<q", 3))  # an int64's 8 bytes
    assert hash.hash_value([1, 2]) == combine(combine(0x85EBCA77C2B2AE63, hash.hash_value(1)),
                                              hash.hash_value(2))
    assert hash.hash_value(None) == 0x8655D738F3678DDA  # kNullOpt


def test_node_hashes_of_a_fixed_graph_equal_the_formula():
    x = torch.ones(2, 3).to(torch_xla.device())
    y = torch.mul(x, x).sum(dim=1)
    s = hash.string_hash
    leaf = combine(combine(s("xla::device_data"), hash.hash_value("f32[2,3]")), 101)
    value = lambda h, i: combine(h, hash.hash_value(i))  # noqa: E731  C++ Value::hash
    op = lambda name: combine(s(name), s("float32"))  # noqa: E731  and the outputs' dtypes
    mul = combine(op("aten::mul.Tensor"), 0xA2D296E9)  # no parameters: the default seed
    mul_dag = combine(combine(mul, value(leaf, 0)), value(leaf, 0))
    sum_node = combine(op("aten::sum.dim_IntList"), hash.mhash((1,), False, None))
    w = torch.ones(3).to(torch_xla.device())
    leaf_w = combine(combine(s("xla::device_data"), hash.hash_value("f32[3]")), 101)
    sub = combine(op("aten::sub.Tensor"), hash.mhash(1))  # alpha=1: a parameter, not an operand
    assert get_xla_tensor(x - w).get_ir_value().node.hash() == combine(combine(sub, value(leaf, 0)),
                                                         value(leaf_w, 0))
    assert get_xla_tensor(x).get_ir_value().node.hash() == leaf
    assert get_xla_tensor(y).get_ir_value().node.node_hash == sum_node
    assert get_xla_tensor(y).get_ir_value().node.hash() == combine(sum_node, value(mul_dag, 0))


def test_an_output_shape_is_hashed_only_at_the_leaves():
    f32 = np.dtype(np.float32)
    leaf = ir.DeviceData(object(), ShapedArray((2, 3), f32))
    as_six = ir.Node("aten::foo", [ir.Value(leaf)], [ShapedArray((6,), f32)])
    as_three_by_two = ir.Node("aten::foo", [ir.Value(leaf)], [ShapedArray((3, 2), f32)])
    assert as_six.hash() == as_three_by_two.hash()  # implied by the operands
    other_leaf = ir.DeviceData(object(), ShapedArray((3, 2), f32))
    assert leaf.hash() != other_leaf.hash()  # a leaf hashes its shape...
    assert leaf.hash() == ir.DeviceData(object(), ShapedArray((2, 3), f32)).hash()  # ...not data


def test_a_number_and_a_tensor_that_promote_differently_are_different_graphs():
    # both are s32[] leaves on our device (an int64 is 32 bits there), but a number does not
    # promote a uint8 and an int32 tensor does: the output dtype tells the two graphs apart
    u8 = torch.tensor(2, dtype=torch.uint8)
    others = [-3, torch.tensor(-3, dtype=torch.int32), torch.tensor(-3), 300, -3.5]
    for other in others * 2:  # each again, after the others have been compiled
        lazy = other.to(torch_xla.device()) if isinstance(other, torch.Tensor) else other
        for got, expected in [(u8.to(torch_xla.device()) + lazy, u8 + other),
                              (u8.to(torch_xla.device()) * lazy, u8 * other)]:
            assert got.dtype == expected.dtype, other
            assert got.cpu().tolist() == expected.tolist(), other


def _step_graph_hash(shape):
    x = torch.randn(*shape).to(torch_xla.device())
    y = (x * 3).sum()
    h = torch_xla.get_graph_hash([y])
    return h, x, y


def test_same_program_on_new_data_has_the_same_hash():
    h1, *_ = _step_graph_hash((3, 4))
    h2, *_ = _step_graph_hash((3, 4))
    assert h1 == h2


def test_a_new_shape_is_a_new_hash():
    assert _step_graph_hash((3, 4))[0] != _step_graph_hash((3, 5))[0]


def test_an_unrelated_pending_tensor_does_not_change_an_item_cut():
    dev = torch_xla.device()
    x = torch.randn(5).to(dev)
    (x * 2).sum().item()
    assert metrics.counter_value("UncachedCompile") == 1
    unrelated = torch.randn(7).to(dev).exp()  # pending, live, not read
    (x * 2).sum().item()
    assert metrics.counter_value("CachedCompile") == 1  # the same graph, found by hash
    assert get_xla_tensor(unrelated).get_ir_value().node.op == "aten::exp"  # still pending


def test_a_sync_and_a_read_of_the_same_ir_hash_differently():
    dev = torch_xla.device()
    x = torch.randn(5).to(dev)
    y = x * 2
    data = [get_xla_tensor(y)]
    read = graph_executor.collect_sync_tensors(data, graph_executor.SyncTensorsConfig(False))
    barrier = graph_executor.collect_sync_tensors(data, graph_executor.SyncTensorsConfig(True))
    assert read.ingredients[0][1] == hash.mhash(False) != barrier.ingredients[0][1]


def test_graph_hash_ingredients_come_in_torch_xla_order():
    dev = torch_xla.device()
    w = torch.randn(3).to(dev)
    w.mul_(2)  # an in-place update: its old buffer is donated at the barrier
    tensors = DeviceContextArena.get_live_tensors()
    coll, _ = graph_executor.sync_tensors_graph(tensors, graph_executor.SyncTensorsConfig())
    labels = [label for label, _ in coll.ingredients]
    assert labels[:2] == ["force_ltc_data", "compilation environment and revisions"]
    assert labels[-3:] == ["parameter sequence", "buffer donors", "sharding config"]
    assert all(label.startswith("tensor ") for label in labels[2:-3])


def test_post_order_visits_the_last_operand_first_as_torch_does():
    dev = torch_xla.device()
    a, b = torch.ones(2).to(dev), torch.zeros(3).to(dev)
    out = torch.cat([a.exp(), b.neg()])
    order = [n.op for n in ir.compute_post_order([get_xla_tensor(out).get_ir_value().node])]
    assert order.index("aten::neg") < order.index("aten::exp")


def test_post_order_walks_the_roots_in_their_order_as_torch_does():
    # C++ Util::ComputePostOrder(nodes, emap) appends each root's post order in turn, one
    # emission map shared: the first root's graph comes first, a node shared comes once
    dev = torch_xla.device()
    a, b = torch.ones(2).to(dev), torch.zeros(2).to(dev)
    shared = a.neg()
    first, second = shared.exp(), (b.abs() + shared)
    roots = [get_xla_tensor(t).get_ir_value().node for t in (first, second)]
    order = [n.op for n in ir.compute_post_order(roots)]
    assert order.index("aten::exp") < order.index("aten::abs")
    assert order.count("aten::neg") == 1
    assert order.index("aten::neg") < order.index("aten::exp")


def test_post_order_emits_a_node_met_twice_once_after_its_operands_as_torch_does():
    # y is pushed twice before it is visited (by the root, then by exp(y)): C++ pops the second
    # copy without emitting it (an emitted node only leaves the queue)
    dev = torch_xla.device()
    y = torch.ones(3).to(dev).neg()
    out = y + y.exp()
    order = ir.compute_post_order([get_xla_tensor(out).get_ir_value().node])
    assert len({id(n) for n in order}) == len(order)
    assert [n.op for n in order].count("aten::neg") == 1
    place = {id(n): i for i, n in enumerate(order)}
    for n in order:
        assert all(place[id(v.node)] < place[id(n)] for v in n.operands if v is not None)


def test_a_number_is_a_graph_input_so_a_new_value_is_the_same_graph():
    x = torch.randn(4).to(torch_xla.device())
    half, quarter, two, one, minus_one, zero, minus_zero = (
        torch_xla.get_graph_hash([(x * v).sum()]) for v in (0.5, 0.25, 2, 1.0, -1, 0.0, -0.0))
    assert half == quarter  # 0.5 and 0.25 are device data: hashed by shape
    # 0, 1 and -1 are special scalars (C++: IsSpecialScalar): constants, hashed by value
    assert len({half, one, minus_one, zero, minus_zero}) == 5
    assert two == half  # an int times a float32 tensor: float32 device data as well
    node = get_xla_tensor(x * 0.5).get_ir_value().node
    assert [v.node.op for v in node.operands] == ["xla::device_data", "xla::device_data"]
    node = get_xla_tensor(x * -1).get_ir_value().node
    assert [v.node.op for v in node.operands] == ["xla::device_data", "prim::Constant"]
    node = get_xla_tensor(x * True).get_ir_value().node  # a bool is no special scalar in C++
    assert [v.node.op for v in node.operands] == ["xla::device_data", "xla::device_data"]
    assert torch.equal(torch.signbit((x.abs() * -0.0).cpu()), torch.ones(4, dtype=torch.bool))
    assert torch.equal((x * -1).cpu(), -x.cpu())


def test_xla_no_special_scalars_makes_every_number_device_data(monkeypatch):
    x = torch.randn(4).to(torch_xla.device())
    monkeypatch.setenv("XLA_NO_SPECIAL_SCALARS", "1")
    ones = [get_xla_tensor(x * v).get_ir_value().node for v in (1.0, -1, 0)]
    for node in ones:
        assert [v.node.op for v in node.operands] == ["xla::device_data", "xla::device_data"]
    one, half = (torch_xla.get_graph_hash([(x * v).sum()]) for v in (1.0, 0.5))
    assert one == half  # 1.0 no longer gets a graph of its own
    torch.testing.assert_close((x * -1).cpu(), -x.cpu())
    monkeypatch.setenv("XLA_NO_SPECIAL_SCALARS", "0")
    node = get_xla_tensor(x * 1.0).get_ir_value().node
    assert [v.node.op for v in node.operands] == ["xla::device_data", "prim::Constant"]


def test_graphs_that_wire_same_shaped_buffers_differently_hash_differently():
    # device data hashes its shape alone, so (x - y) and (y - x) have one node hash: the
    # parameter each operand reads must enter the graph hash, or the second graph would run
    # the first one's cached program and give its numbers
    dev = torch_xla.device()
    x, y = torch.tensor([1.0, 2, 3]), torch.tensor([10.0, 20, 30])
    xl, yl = x.to(dev), y.to(dev)
    same = (xl - yl).sum() * (xl - yl)
    swapped = (xl - yl).sum() * (yl - xl)
    assert torch_xla.get_graph_hash([same]) != torch_xla.get_graph_hash([swapped])
    torch.testing.assert_close(same.cpu(), (x - y).sum() * (x - y))
    torch.testing.assert_close(swapped.cpu(), (x - y).sum() * (y - x))
    a, b = x.to(dev).requires_grad_(), y.to(dev).requires_grad_()
    torch.nn.functional.mse_loss(a, b).backward()
    ea, eb = x.clone().requires_grad_(), y.clone().requires_grad_()
    torch.nn.functional.mse_loss(ea, eb).backward()
    torch.testing.assert_close((a.grad.cpu(), b.grad.cpu()), (ea.grad, eb.grad))


def test_a_missing_operand_folds_kNullOpt_in_its_slot():
    # GetOperandHashes: a null operand contributes HashCombine(h, kNullOpt), so an op with an
    # absent optional tensor (nll_loss's weight=None) is not the same graph as one without it
    f32 = np.dtype(np.float32)
    leaf = ir.DeviceData(object(), ShapedArray((2, 3), f32))
    value = combine(leaf.hash(), hash.hash_value(0))  # C++ Value::hash of output 0
    foo = combine(combine(hash.string_hash("aten::foo"), hash.string_hash("float32")), 0xA2D296E9)
    with_none = ir.Node("aten::foo", [ir.Value(leaf), None], [ShapedArray((2, 3), f32)])
    without = ir.Node("aten::foo", [ir.Value(leaf)], [ShapedArray((2, 3), f32)])
    assert with_none.node_hash == without.node_hash == foo
    assert with_none.hash() == combine(combine(foo, value), 0x8655D738F3678DDA)
    assert without.hash() == combine(foo, value) != with_none.hash()
    dev = torch_xla.device()
    x, t = torch.randn(3, 4).to(dev), torch.tensor([0, 1, 2]).to(dev)
    out, _ = torch.ops.aten.nll_loss_forward(x, t, None, 1, -100)
    node = get_xla_tensor(out).get_ir_value().node
    assert node.operands[2] is None
    vx, vt = (combine(get_xla_tensor(a).get_ir_value().node.hash(), hash.hash_value(0))
              for a in (x, t))
    assert node.hash() == combine(combine(combine(node.node_hash, vx), vt), 0x8655D738F3678DDA)
