"""The graph executor: what a sync sweeps up, the reads that cut a graph of one tensor, the LRU
compile cache, donation at step barriers only, parameter tupling, the PT_XLA_DEBUG report, and
the CPU fallback counted `aten::<op>` (also splitting a compiled FX graph)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from stages.s10_lazy_tensors import (
    dynamo_backend,
    graph_executor,
    metrics,
    register_xla,
    torch_xla,
)
from stages.s10_lazy_tensors.graph_executor import ComputationCache, SyncTensorsConfig
from stages.s10_lazy_tensors.tensor import get_xla_tensor


@pytest.fixture
def dev():
    return torch_xla.device()


def test_ops_build_ir_and_run_nothing_until_a_sync(dev):
    x = torch.arange(6.0).reshape(2, 3).to(dev)
    y = (x * 2 + 1).sum(dim=1)
    text = torch_xla.get_tensors_text([y])
    assert "aten::mul.Tensor" in text and "ROOT=0" in text
    assert metrics.counter_value("ExecuteComputation") is None
    torch_xla.sync()
    assert metrics.counter_value("ExecuteComputation") == 1
    data = get_xla_tensor(y)
    assert data.handle is not None and data.ir_value is None  # now device data
    np.testing.assert_allclose(y.cpu().numpy(), [9.0, 27.0])



def test_the_metrics_report_uses_torch_xla_names(dev):
    w = torch.randn(3).to(dev)
    w.mul_(2)
    torch_xla.sync()
    (w + 1).sum().item()
    report = metrics.metrics_report()
    for name in ("CompileTime", "ExecuteTime", "TransferToDeviceTime", "TransferFromDeviceTime",
                 "InputOutputAliasCount", "UncachedCompile", "MarkStep", "ExecuteComputation",
                 "aten::_local_scalar_dense"):
        assert f"Metric: {name}" in report or f"Counter: {name}" in report, name
    assert metrics.metric_data("CompileTime")[0] == 2
    assert metrics.counter_value("MarkStep") == 1

@pytest.mark.parametrize("read", ["item", "cpu", "print"])
def test_a_read_cuts_a_graph_of_that_tensor_and_leaves_the_rest_pending(dev, read):
    x = torch.randn(4).to(dev)
    other = x.exp()  # pending, and not read
    y = (x * 3).sum()
    if read == "item":
        value = y.item()
    elif read == "cpu":
        value = float(y.cpu())
    else:
        value = float(str(y).split("(")[1].split(",")[0])
    assert value == pytest.approx(float((x.cpu() * 3).sum()), abs=1e-3)
    assert metrics.counter_value("UncachedCompile") == 1
    assert metrics.counter_value("aten::_local_scalar_dense") == (1 if read == "item" else None)
    pending = [get_xla_tensor(t).ir_value for t in (y, other)]
    assert None not in pending  # still pending
    torch_xla.sync()  # the barrier computes both: a different graph, a different hash
    assert metrics.counter_value("UncachedCompile") == 2


def test_the_compile_cache_is_an_lru_of_its_size(dev, monkeypatch):
    cache = ComputationCache(2)
    for h in (1, 2, 1, 3):  # 1 is used again, so 2 is the one evicted
        if cache.get(h) is None:
            cache.add(h, object())
    assert cache.get(2) is None and cache.get(1) is not None and len(cache) == 2
    monkeypatch.setattr(graph_executor, "computation_cache", ComputationCache(1))
    x = torch.randn(3).to(dev)
    for fn in (torch.exp, torch.neg, torch.exp):  # exp is evicted by neg: compiled again
        fn(x).sum().item()
    assert metrics.counter_value("UncachedCompile") == 3


def test_buffers_are_donated_at_a_step_barrier_only(dev):
    w = torch.randn(8).to(dev)
    w.mul_(0.5)
    data = [get_xla_tensor(w)]
    read, _ = graph_executor.sync_tensors_graph(data, SyncTensorsConfig(force_ltc_data=False))
    assert "tf.aliasing_output" not in graph_executor.computation_cache.get(read.hash).text
    coll, _ = graph_executor.sync_tensors_graph([get_xla_tensor(w)], SyncTensorsConfig())
    assert "tf.aliasing_output = 0 : i32" in graph_executor.computation_cache.get(coll.hash).text
    assert [s[1] for s in metrics.metric_data("InputOutputAliasCount")[2]] == [0.0, 1.0]


def test_a_sync_that_does_not_sync_the_tensors_data_donates_nothing(dev):
    """torch_xla donates only when both sync_ltc_data and force_ltc_data are set: a sync with
    sync_ltc_data off (eager mode's, dynamo's input sync) leaves every buffer alone."""
    w = torch.arange(4.0).to(dev)
    w.mul_(2)
    coll, _ = graph_executor.sync_tensors_graph([get_xla_tensor(w)],
                                                SyncTensorsConfig(sync_ltc_data=False))
    assert "tf.aliasing_output" not in graph_executor.computation_cache.get(coll.hash).text
    assert [s[1] for s in metrics.metric_data("InputOutputAliasCount")[2]] == [0.0]



def test_a_buffer_another_live_tensor_holds_is_not_donated(dev):
    w = torch.arange(4.0).to(dev)
    kept = w.clone()  # a second tensor on the same buffer (values never change under one)
    w.mul_(2)
    coll, _ = graph_executor.sync_tensors_graph([get_xla_tensor(w)], SyncTensorsConfig())
    assert "tf.aliasing_output" not in graph_executor.computation_cache.get(coll.hash).text
    np.testing.assert_array_equal(kept.cpu().numpy(), [0.0, 1.0, 2.0, 3.0])  # still readable
    del kept
    w.mul_(2)  # now w alone holds its buffer: donated
    coll, _ = graph_executor.sync_tensors_graph([get_xla_tensor(w)], SyncTensorsConfig())
    assert "tf.aliasing_output = 0 : i32" in graph_executor.computation_cache.get(coll.hash).text
    np.testing.assert_array_equal(w.cpu().numpy(), [0.0, 4.0, 8.0, 12.0])


def test_an_alias_shares_the_tensor_as_in_pytorch(dev):
    """detach, .data and nn.Parameter share the storage, so the XLATensorData: an in-place op
    through one is seen through the others, as on any PyTorch device."""
    w = torch.arange(4.0).to(dev)
    alias, param = w.detach(), torch.nn.Parameter(w)
    w.mul_(2)
    assert get_xla_tensor(alias) is get_xla_tensor(w) is get_xla_tensor(param)
    np.testing.assert_array_equal(alias.cpu().numpy(), [0.0, 2.0, 4.0, 6.0])
    np.testing.assert_array_equal(param.detach().cpu().numpy(), [0.0, 2.0, 4.0, 6.0])
    with pytest.raises(RuntimeError, match="^not a tensor on the ltc device: one on cpu$"):
        get_xla_tensor(torch.zeros(2))


def test_an_in_place_update_of_a_view_is_refused_not_lost(dev):
    """Without functionalization a view has its own IR value, so writing into it could not
    reach the base: that is refused with a message, never silently dropped."""
    x = torch.arange(6.0).reshape(2, 3).to(dev)
    with pytest.raises(NotImplementedError, match=r"^in place on a view \(\) of a lazy tensor "
                       r"\(2, 3\): it would not reach the base$"):
        x[0, 0] = 5.0
    with pytest.raises(NotImplementedError, match=r"view \(3, 2\) of a lazy tensor \(2, 3\)"):
        x.t().mul_(2)
    np.testing.assert_array_equal(x.cpu().numpy(), np.arange(6.0).reshape(2, 3))  # untouched


@pytest.mark.parametrize("write", [
    lambda v: v.pow_(torch.full((4,), 2.0, device=v.device)),  # pow_.Tensor: no same-named twin
    lambda v: v.bernoulli_(1.0), lambda v: v.normal_(),  # run by the CPU fallback
    lambda v: v.floor_divide_(torch.full((4,), 2.0, device=v.device)),
], ids=["pow_", "bernoulli_", "normal_", "floor_divide_"])
def test_every_in_place_path_refuses_a_write_into_a_view(dev, write):
    # each of these once reached the CPU fallback, whose result landed in the view alone
    x = torch.arange(12.0).reshape(3, 4).to(dev)
    with pytest.raises(NotImplementedError, match=r"^in place on a view \(4,\) of a lazy "
                       r"tensor \(3, 4\): it would not reach the base$"):
        write(x[0])
    np.testing.assert_array_equal(x.cpu().numpy(), np.arange(12.0).reshape(3, 4))


def test_a_view_taken_before_an_in_place_write_to_its_base_is_refused_not_stale(dev):
    """A view's IR value was built from the base's value at the time: after `x.add_(1)` it
    would still show the old numbers, where PyTorch's view shows the new ones. Reading it is
    refused; a view taken after the write, and the base, read as eager torch's."""
    eager = torch.arange(6.0).reshape(2, 3)
    x = eager.to(dev)
    row, col, flat = x[0], x.t(), x.view(6)
    row2 = row[1:]  # a view of a view: its base is x too
    x.add_(1)
    eager.add_(1)
    for old in (row, col, flat, row2):
        with pytest.raises(NotImplementedError, match=r"of a lazy tensor written in place after "
                           r"the view was taken: it would not see the write"):
            old.cpu()
    with pytest.raises(NotImplementedError, match="written in place after the view"):
        row * 2  # used as an operand, not only read
    np.testing.assert_array_equal(x[0].cpu().numpy(), eager[0].numpy())
    np.testing.assert_array_equal((x.t() * 2).cpu().numpy(), (eager.t() * 2).numpy())


def test_a_copy_from_a_view_of_itself_reads_the_view_before_the_write(dev):
    for take in (lambda t: t[0], lambda t: t.t()):
        eager = torch.arange(9.0).reshape(3, 3)
        x = eager.to(dev)
        x.copy_(take(x))
        eager.copy_(take(eager).clone())
        np.testing.assert_array_equal(x.cpu().numpy(), eager.numpy())


@pytest.mark.parametrize("op, args", [("t_", ()), ("unsqueeze_", (0,)), ("transpose_", (0, 1)),
                                      ("swapdims_", (1, 0)), ("swapaxes_", (0, 1))])
def test_an_in_place_view_op_changes_the_shape_as_in_eager_torch(dev, op, args):
    eager = torch.arange(12.0).reshape(3, 4)
    x = eager.to(dev)
    for t in (eager, x):
        assert getattr(t, op)(*args) is t
    assert (x.shape, x.dtype) == (eager.shape, eager.dtype)  # strides: ours are contiguous
    np.testing.assert_array_equal((x * 2).cpu().numpy(), (eager * 2).numpy())
    with pytest.raises(NotImplementedError, match="another tensor shares"):
        x.detach().unsqueeze_(0)  # x shares the storage of its detached alias


def test_parameters_are_tupled_above_the_threshold(dev, monkeypatch):
    monkeypatch.setenv("XLA_PARAMETER_WRAPPING_THREADSHOLD", "3")
    xs = [torch.full((2,), float(i)).to(dev) for i in range(4)]
    total = xs[0] + xs[1] + xs[2] + xs[3]
    coll, _ = graph_executor.sync_tensors_graph([get_xla_tensor(total)], SyncTensorsConfig())
    hlo = graph_executor.computation_cache.get(coll.hash).computation.hlo_text()
    assert "entry_computation_layout={((f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}))" in hlo
    np.testing.assert_allclose(total.cpu().numpy(), [6.0, 6.0])


def test_debug_says_which_hash_ingredient_is_new(dev, monkeypatch, capsys):
    monkeypatch.setenv("PT_XLA_DEBUG", "1")
    torch.randn(3).to(dev).exp().sum().item()
    torch.randn(5).to(dev).exp().sum().item()  # the same program on a new shape
    err = capsys.readouterr().err
    assert "it is the first graph compiled" in err
    assert "tensor 0 IR differs from the closest previous graph" in err


def test_an_op_without_a_rule_runs_on_the_cpu_and_is_counted(dev):
    x = torch.tensor([3.0, 1.0, 2.0]).to(dev)
    values, indices = torch.sort(x * 2)
    assert metrics.executed_fallback_ops() == ["aten::sort"]
    assert values.device == dev
    np.testing.assert_allclose(values.cpu().numpy(), [2.0, 4.0, 6.0])
    assert indices.cpu().tolist() == [1, 2, 0]


def test_a_fallback_node_splits_a_compiled_graph(dev):
    def f(x):
        return torch.sort(x * 2).values.exp()
    graph = torch.fx.symbolic_trace(f)
    x = torch.tensor([0.3, -0.1, 0.2])
    compiled = dynamo_backend.openxla_eval(graph, None)
    lazy_x = x.to(dev)
    metrics.clear_all()
    out = compiled(lazy_x)
    np.testing.assert_allclose(out.cpu().numpy(), f(x).numpy(), rtol=1e-6)
    assert metrics.counter_value("DynamoExtractCompiledGraph") == 1
    assert metrics.counter_value("aten::sort") >= 1
    # two XLA parts around the sort: `x * 2` and `exp`, each compiled once
    assert metrics.counter_value("UncachedCompile") == 2
    np.testing.assert_allclose(compiled(lazy_x).cpu().numpy(), f(x).numpy(), rtol=1e-6)
    assert metrics.counter_value("UncachedCompile") == 2


def test_a_graph_may_return_numbers_inputs_and_one_value_twice(dev):
    """What a compiled graph hands back besides computed values: a number (a size a backward
    graph needs), an untouched input, and the same computed value under two outputs."""
    def f(x, w):
        y = x * 2
        return y, x.size(0), w, y
    compiled = dynamo_backend.openxla_eval(torch.fx.symbolic_trace(f), None)
    x, w = torch.arange(3.0).to(dev), torch.ones(2).to(dev)
    for _ in range(2):
        y, n, w_out, y_again = compiled(x, w)
        assert n == 3 and w_out is w
        np.testing.assert_array_equal(y.cpu().numpy(), [0.0, 2.0, 4.0])
        np.testing.assert_array_equal(y_again.cpu().numpy(), [0.0, 2.0, 4.0])


def test_torch_compile_splits_around_a_fallback_too(dev):
    """The same through Dynamo and AOTAutograd: one forward graph, split around the sort."""
    def f(x, w):
        values, indices = torch.sort(torch.relu(x @ w), dim=1)  # no rule: the CPU
        return (values * 2).sum(1) + indices.float().mean()
    x, w = torch.randn(4, 5), torch.randn(5, 3)
    compiled = torch.compile(f, backend=dynamo_backend.openxla)
    metrics.clear_all()
    for _ in range(3):
        out = compiled(x.to(dev), w.to(dev))
        np.testing.assert_allclose(out.cpu().numpy(), f(x, w).numpy(), rtol=1e-5)
    assert metrics.executed_fallback_ops() == ["aten::sort"]
    assert metrics.counter_value("DynamoExtractCompiledGraph") == 1
    assert metrics.counter_value("UncachedCompile") == 2  # the parts before and after the sort


def test_our_kernels_cover_rules_and_composites_but_not_aliases_nor_what_autograd_decomposes():
    """What register_xla.py puts under the device's key: every op with a rule, every op whose
    CompositeExplicitAutograd kernel would run first (a transpose would be an as_strided of our
    empty storage), never detach or alias (PyTorch's share the storage, so the tensor), and
    never an op autograd decomposes (a kernel there would take its gradient away); an implicit
    op with an autograd kernel of its own, as silu_backward, is ours, as it is the CPU's."""
    ops = register_xla.ops_to_register()
    assert {"aten::mm", "aten::addmm", "aten::nll_loss_forward"} <= set(ops)  # rules
    assert {"aten::transpose.int", "aten::expand", "aten::zeros"} <= set(ops)  # composites
    assert not {"aten::detach", "aten::alias", "aten::lift_fresh"} & set(ops)
    assert not {"aten::linear", "aten::reshape", "aten::cross_entropy_loss"} & set(ops)
    assert not [n for n in ops if torch._C._dispatch_has_kernel_for_dispatch_key(
        n, "CompositeImplicitAutograd") and not torch._C._dispatch_has_kernel_for_dispatch_key(
        n, "Autograd")]
    assert {"aten::silu_backward", "aten::mish_backward"} <= set(ops)
    assert register_xla.register() == len(ops)  # once per process, whatever calls it again


def test_a_tensor_listed_twice_is_one_output_of_one_graph(dev):
    # CollectSyncTensors skips a tensor whose unique id it has seen: [y, y] is the graph of [y]
    y = torch.arange(3.0).to(dev) * 2
    data = get_xla_tensor(y)
    assert torch_xla.get_graph_hash([y, y]) == torch_xla.get_graph_hash([y])
    read = SyncTensorsConfig(force_ltc_data=False)
    twice, outputs = graph_executor.sync_tensors_graph([data, data], read)
    assert twice.indices == [0] and len(outputs) == 1
    assert [label for label, _ in twice.ingredients].count("tensor 0 IR") == 1
    assert not any(label == "tensor 1 IR" for label, _ in twice.ingredients)
    once, _ = graph_executor.sync_tensors_graph([data], read)
    assert once.hash == twice.hash
    assert metrics.counter_value("UncachedCompile") == 1
    assert metrics.counter_value("CachedCompile") == 1


def test_param_aliasing_off_donates_nothing_at_a_step_barrier(dev, monkeypatch):
    # GetBufferDonors returns {} when XLA_ENABLE_PARAM_ALIASING=0, even at mark_step
    monkeypatch.setenv("XLA_ENABLE_PARAM_ALIASING", "0")
    w = torch.arange(4.0).to(dev)
    old = get_xla_tensor(w).handle
    w.mul_(2)
    coll, _ = graph_executor.sync_tensors_graph([get_xla_tensor(w)], SyncTensorsConfig())
    assert "buffer donors" not in [label for label, _ in coll.ingredients]
    assert "tf.aliasing_output" not in graph_executor.computation_cache.get(coll.hash).text
    assert [s[1] for s in metrics.metric_data("InputOutputAliasCount")[2]] == [0.0]
    assert old.has_value()  # not donated: the old buffer is still there
    np.testing.assert_array_equal(w.cpu().numpy(), [0.0, 2.0, 4.0, 6.0])
    monkeypatch.setenv("XLA_ENABLE_PARAM_ALIASING", "1")  # the default: donated
    old = get_xla_tensor(w).handle
    w.mul_(2)
    coll, _ = graph_executor.sync_tensors_graph([get_xla_tensor(w)], SyncTensorsConfig())
    assert "buffer donors" in [label for label, _ in coll.ingredients]
    assert not old.has_value()


def test_a_fallback_is_counted_under_its_overload_name(dev):
    """torch_xla names the counter c10::toString(op.operator_name()): `aten::sort.stable`."""
    x = torch.tensor([3.0, 1.0, 2.0]).to(dev)
    torch.sort(x, stable=True)
    assert metrics.executed_fallback_ops() == ["aten::sort.stable"]


def test_a_zero_dim_tensor_moved_to_the_device_is_a_number(dev):
    """C++ GetIrValueForTensor: a 0-d tensor of 0, 1 or -1 is a constant, any other number one
    cached, read-only device buffer (DeviceDataCacheMiss once for equal values)."""
    def counts():
        transfers = metrics.metric_data("TransferToDeviceTime")
        return (metrics.counter_value("DeviceDataCacheMiss") or 0,
                transfers[0] if transfers else 0)

    one = torch.tensor(1.0).to(dev)
    assert get_xla_tensor(one).get_ir_value().node.op == "prim::Constant"
    before = counts()
    a, b = torch.tensor(2.71875).to(dev), torch.tensor(2.71875).to(dev)  # a value seen once
    assert get_xla_tensor(a).get_ir_value().node.op == "xla::device_data"
    assert tuple(n - m for n, m in zip(counts(), before, strict=True)) == (1, 1)
    assert (a + b).cpu().item() == 5.4375 and one.cpu().item() == 1.0


def test_the_graph_hash_folds_the_revision_the_course_stands_in_for(dev, monkeypatch):
    """C++ folds torch's and XLA's git revisions: a graph compiled by another build is no hit."""
    def collected_hash():
        x = torch.arange(3.0).to(dev) * 2
        return graph_executor.collect_sync_tensors([get_xla_tensor(x)], SyncTensorsConfig()).hash

    before = collected_hash()
    assert collected_hash() == before
    monkeypatch.setattr(graph_executor, "COURSE_GITREV", "another build")
    assert collected_hash() != before


def test_alpha_of_one_as_a_float_adds_no_operand(dev):
    """alpha=1.0 equals the default 1: no operand, as for alpha=1 or none (C++ compares values)."""
    x, y = torch.arange(3.0).to(dev), torch.ones(3).to(dev)
    once, as_int, as_float = [torch_xla.get_tensors_text([torch.add(x, y, **kw)])
                              for kw in ({}, {"alpha": 1}, {"alpha": 1.0})]
    assert "alpha=1.0" in as_float  # a parameter, printed as given
    assert as_float.replace("alpha=1.0", "alpha=1") == as_int
    assert as_int.count("%") == once.count("%")  # as many nodes: no operand for alpha


def test_a_cached_number_buffer_is_never_donated(dev):
    """A 0-d tensor of a number is the cached, read-only buffer of that number: an in-place
    update at a step barrier must not donate it, or the next tensor of that number reads junk."""
    a = torch.tensor(3.40625).to(dev)  # a number no other test uses: this tensor alone holds it
    assert get_xla_tensor(a).get_ir_value().node.op == "xla::device_data"
    graph_executor.sync_tensors_graph([get_xla_tensor(a)], SyncTensorsConfig())  # a takes it
    assert get_xla_tensor(a).handle is not None and get_xla_tensor(a).handle.read_only
    a.add_(1)
    coll, _ = graph_executor.sync_tensors_graph([get_xla_tensor(a)], SyncTensorsConfig())
    assert "tf.aliasing_output" not in graph_executor.computation_cache.get(coll.hash).text
    assert a.cpu().item() == 4.40625
    assert torch.tensor(3.40625).to(dev).cpu().item() == 3.40625


def test_two_outputs_of_one_node_synced_apart_are_two_graphs(dev):
    """A tensor's IR hash is its node's and its output index: syncing only the loss, then only
    the total weight of the same nll_loss_forward must compile twice, not reuse the first."""
    logp = torch.log_softmax(torch.arange(12.0).reshape(4, 3) / 7, dim=1)
    target = torch.tensor([0, 2, 1, 2])
    want = torch.ops.aten.nll_loss_forward(logp, target, None, 1, -100)
    got = []
    for k in (0, 1):
        outs = torch.ops.aten.nll_loss_forward(logp.to(dev), target.to(dev), None, 1, -100)
        graph_executor.sync_tensors_graph([get_xla_tensor(outs[k])], SyncTensorsConfig())
        got.append(outs[k].cpu())
    torch.testing.assert_close(got[0], want[0])
    torch.testing.assert_close(got[1], want[1])


def test_a_buffer_is_donated_only_to_an_output_of_its_shape(dev):
    """unsqueeze_ makes the tensor's output (1, 4) while its buffer is (4,): no alias then; an
    in-place update that keeps the shape is donated (C++ compares the shapes)."""
    w = torch.arange(4.0).to(dev)
    w.unsqueeze_(0)
    w.mul_(2)
    coll, _ = graph_executor.sync_tensors_graph([get_xla_tensor(w)], SyncTensorsConfig())
    assert "tf.aliasing_output" not in graph_executor.computation_cache.get(coll.hash).text
    np.testing.assert_array_equal(w.cpu().numpy(), [[0.0, 2.0, 4.0, 6.0]])
    w.mul_(2)
    coll, _ = graph_executor.sync_tensors_graph([get_xla_tensor(w)], SyncTensorsConfig())
    assert "tf.aliasing_output = 0 : i32" in graph_executor.computation_cache.get(coll.hash).text
    np.testing.assert_array_equal(w.cpu().numpy(), [[0.0, 4.0, 8.0, 12.0]])


def test_a_tensor_that_holds_a_buffer_is_not_collected_and_keeps_its_node(dev):
    """torch_xla's CollectSyncTensors takes only tensors without a data handle. x, on the
    device since the sync, keeps the device_data node its first use made, through the read of
    x: z's graph reads x's buffer through that one node, not through a second one."""
    x = torch.ones(3).to(dev)
    torch_xla.sync()
    y = x + 1
    node = get_xla_tensor(x).ir_value.node
    x.cpu()
    assert get_xla_tensor(x).ir_value.node is node
    z = x * 2 + y
    text = torch_xla.get_tensors_text([z])
    assert text.count("f32[3] xla::device_data()") == 1
    assert "aten::add.Tensor(%1, %0)" in text and "aten::mul.Tensor(%1, %3)" in text
    np.testing.assert_array_equal(z.cpu().numpy(), [4.0, 4.0, 4.0])
