"""jit with shardings on 4 and 8 CPU devices: the lowered module's annotations equal JAX's
text (Shardy and GSPMD), and the values equal JAX's with the same shardings and one device's."""

from __future__ import annotations

import re

import numpy as np
import pytest

import stages.s11_spmd as s11
from shared import mlp
from shared.spmd_programs import PROGRAMS, SIZES
from tests.s11_spmd.conftest import OURS, cpu_devices, jax_results

PROGRAM_NAMES = sorted(PROGRAMS)
LOWERED = ["closures_and_axis_orders", "collectives_program", "data_parallel_mlp",
           "explicit_axes", "grouped_collectives", "mlp_2d", "shard_map_program", "shard_map_psum",
           "sharded_matmul"]


class Ours(dict):
    """Our result of each program on n devices, run when a test first asks for it: a stubbed
    exercise fails the tests of the programs that reach it, not every test of the module."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n, self.client = n, s11.cpu_client(n)

    def __missing__(self, name: str) -> dict:
        with cpu_devices(self.n, self.client):
            self[name] = PROGRAMS[name](OURS, self.n)
        return self[name]


@pytest.fixture(scope="module", params=[4, 8])
def run(request):
    """(ours, JAX's) results of every program on n devices."""
    n = request.param
    return n, Ours(n), jax_results(n)


@pytest.mark.parametrize("name", LOWERED)
def test_the_lowered_module_is_jaxs_text_with_shardy_and_with_gspmd(run, name):
    _, ours, theirs = run
    assert ours[name]["shardy"] == theirs[name]["shardy"]
    assert ours[name]["gspmd"] == theirs[name]["gspmd"]


@pytest.mark.parametrize("shardy", [True, False], ids=["shardy", "gspmd"])
def test_a_one_device_mesh_lowers_to_jaxs_text_partition_count_and_all(shardy):
    # JAX writes every sharding (here {replicated}) and mhlo.num_partitions = 1 even then
    import jax
    from jax.sharding import AxisType
    from jax.sharding import NamedSharding as JaxNamedSharding
    from jax.sharding import PartitionSpec as JaxP

    x = np.arange(8, dtype=np.float32)

    def f(a):
        return a * 2.0

    with OURS.use_shardy(shardy), cpu_devices(1):
        s = OURS.NamedSharding(OURS.make_mesh((1,), ("x",)), OURS.P("x"))
        ours = OURS.jit(f, in_shardings=s, out_shardings=s).lower(x).as_text()
    prev = jax.config.jax_use_shardy_partitioner
    jax.config.update("jax_use_shardy_partitioner", shardy)
    try:
        mesh = jax.make_mesh((1,), ("x",), axis_types=(AxisType.Auto,))
        t = JaxNamedSharding(mesh, JaxP("x"))
        theirs = jax.jit(f, in_shardings=t, out_shardings=t).lower(x).as_text()
    finally:
        jax.config.update("jax_use_shardy_partitioner", prev)
    assert "mhlo.num_partitions = 1 : i32" in theirs
    assert ours == theirs


def test_a_four_device_mesh_sets_the_partition_count_to_four(four):
    # what XLA partitions the program for; the 4- and 8-device texts above are JAX's in full
    s = OURS.NamedSharding(OURS.make_mesh((4,), ("x",)), OURS.P("x"))
    x = np.arange(8, dtype=np.float32)
    text = OURS.jit(lambda a: a * 2.0, in_shardings=s, out_shardings=s).lower(x).as_text()
    assert "mhlo.num_partitions = 4 : i32" in text


@pytest.mark.parametrize("name", PROGRAM_NAMES)
def test_the_values_are_jaxs_with_the_same_shardings(run, name):
    _, ours, theirs = run
    for a, b in zip(ours[name]["values"], theirs[name]["values"], strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)


def test_a_jit_with_no_arguments_lays_out_its_outputs_as_jax_does(run):
    # no argument names the mesh: the out_shardings or the constraint inside must
    _, ours, theirs = run
    assert ours["invariant_operands"]["specs"] == theirs["invariant_operands"]["specs"] == \
        ["P('x',)", "P(None, 'x')"]


def test_scalars_and_int_and_bool_outputs_have_jaxs_dtypes_shapes_and_shard_shapes(run):
    _, ours, theirs = run
    assert ours["scalars_and_dtypes"]["meta"] == theirs["scalars_and_dtypes"]["meta"]


def test_a_check_vma_body_prints_as_jaxs_with_its_types_and_casts(run):
    _, ours, theirs = run
    assert ours["typed_varying_axes"]["body"] == theirs["typed_varying_axes"]["body"]
    assert "pvary[axes=('i', 'j')]" in ours["typed_varying_axes"]["body"]


def test_a_carry_or_branch_that_becomes_varying_is_refused_with_jaxs_message(run):
    _, ours, theirs = run
    ours_msgs = ours["typed_varying_axes"]["messages"]
    assert ours_msgs == theirs["typed_varying_axes"]["messages"]
    assert all("pcast(..., " in m for m in ours_msgs)


def test_a_grouped_psum_is_refused_as_jax_refuses_it_with_check_vma(run):
    _, ours, theirs = run
    assert ours["grouped_collectives"]["refused"] == theirs["grouped_collectives"]["refused"] \
        == "NotImplementedError: "


def test_on_explicit_axes_every_type_jaxpr_and_refusal_is_jaxs(run):
    """make_mesh's default axes are Explicit: arrays print their layout in their types, the
    rules give each result's, and what a rule cannot type is refused with JAX's message."""
    _, ours, theirs = run
    for key in ("types", "jaxpr", "specs", "messages", "param_types"):
        assert ours["explicit_axes"][key] == theirs["explicit_axes"][key], key
    assert "c:f32[" in ours["explicit_axes"]["jaxpr"] and "@x" in ours["explicit_axes"]["jaxpr"]
    assert sum(m.startswith("ShardingTypeError") for m in ours["explicit_axes"]["messages"]) == 3
    assert "sdy.sharding_constraint" in ours["explicit_axes"]["shardy"]


def test_on_explicit_axes_control_flow_and_shard_map_check_layouts_as_jax(run):
    """A cond's branches, a loop's carry and a scan's xs are typed with their layouts, and a
    slice in the body keeps its layout; shard_map compares each spec with its argument's type
    (numpy's is replicated), refuses a spec that is not a PartitionSpec, and takes the mesh
    `set_mesh` entered, as a decorator too."""
    _, ours, theirs = run
    got = ours["explicit_control_flow"]
    assert got == theirs["explicit_control_flow"]
    assert [m.split(":")[0] for m in got["messages"]] == [
        "TypeError", "TypeError", "TypeError", "ValueError", "ValueError", "TypeError",
        "TypeError", "ValueError"]
    assert "e:f32[2@y] = mul d 2.0" in got["jaxpr"]


def test_donation_pairs_buffers_by_their_blocks_as_jax_does(run):
    """An 8-row array split by rows donated to an output split by columns: JAX finds no output
    of its block's shape, warns with the block's shape and keeps it; left to the partitioner,
    the buffer goes to XLA as a donor. Ours used to alias it and XLA refused the module."""
    n, ours, theirs = run
    assert ours["sharded_donation"] == theirs["sharded_donation"]
    if n == 8:  # blocks of 4x8 and 8x2: not even the same size (on 4 devices they are)
        assert theirs["sharded_donation"]["rows_to_columns"]["warnings"] == [
            "Some donated buffers were not usable: float32[4,8]."]


def test_an_unused_laid_out_argument_places_nothing_as_in_jax(run):
    n, ours, theirs = run
    assert ours["unused_layouts"]["placed"] == theirs["unused_layouts"]["placed"]
    assert theirs["unused_layouts"]["placed"][:3] == [["SingleDeviceSharding", 1]] * 3


def test_a_typed_data_parallel_step_gives_one_devices_numbers(run):
    """The gradient of replicated parameters through a batch typed as split: the dot's
    transpose asks for the parameters' layout (out_sharding), so no rule has to guess."""
    n, ours, _ = run
    losses, w = _one_device_steps(n)
    np.testing.assert_allclose(ours["explicit_axes"]["values"][3], losses, rtol=1e-4)
    np.testing.assert_allclose(ours["explicit_axes"]["values"][4], w, rtol=1e-3, atol=1e-4)


def test_the_sharded_matmul_keeps_the_asked_output_sharding(run):
    _, ours, theirs = run
    assert ours["sharded_matmul"]["spec"] == theirs["sharded_matmul"]["spec"] == \
        "P(None, 'model')"


@pytest.mark.parametrize("name", ["data_parallel_mlp", "mlp_2d"])
def test_training_gives_one_devices_numbers(run, name):
    """The same steps unsharded, in numpy float64: the losses agree to float32 precision."""
    n, ours, _ = run
    losses, w = _one_device_steps(n)
    np.testing.assert_allclose(ours[name]["values"][0], losses, rtol=1e-4)
    np.testing.assert_allclose(ours[name]["values"][-2], w, rtol=1e-3, atol=1e-4)


def _one_device_steps(n, steps=3):
    """The programs' SGD steps on one device in numpy float64: each loss, the last weights."""
    params = [{k: v.astype(np.float64) for k, v in layer.items()}
              for layer in mlp.init_params(SIZES)]
    x, y = mlp.batch(4 * n, SIZES)
    losses = []
    for _ in range(steps):
        loss, grads = _numpy_loss_and_grads(params, x.astype(np.float64), y)
        losses.append(loss)
        params = [{k: p[k] - 0.1 * g[k] for k in p} for p, g in zip(params, grads, strict=True)]
    return losses, params[-1]["w"]


def _numpy_loss_and_grads(params, x, y):
    acts, h = [x], x
    for layer in params[:-1]:
        h = np.maximum(h @ layer["w"] + layer["b"], 0.0)
        acts.append(h)
    logits = h @ params[-1]["w"] + params[-1]["b"]
    logits = logits - logits.max(1, keepdims=True)
    p = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    loss = -np.mean(np.sum(np.log(p) * y, 1))
    g = (p - y) / x.shape[0]
    grads = []
    for k in range(len(params) - 1, -1, -1):
        grads.append({"w": acts[k].T @ g, "b": g.sum(0)})
        g = (g @ params[k]["w"].T) * (acts[k] > 0)
    return loss, grads[::-1]


def test_each_device_holds_the_block_jax_gives_it(run):
    _, ours, theirs = run
    assert ours["sharded_matmul"]["shards"] == theirs["sharded_matmul"]["shards"]


def test_the_sharding_tables_are_jaxs_drawings(run):
    _, ours, theirs = run
    for a, b in zip(ours["pictures"]["tables"], theirs["pictures"]["tables"], strict=True):
        assert a == b, "\n" + a + "\n" + b


def test_a_shard_map_in_a_jit_is_jaxs_manual_region_with_shardy_and_gspmd(run):
    _, ours, theirs = run
    for form in ("shardy", "gspmd"):
        assert ours["shard_map_program"][form] == theirs["shard_map_program"][form], form


def test_every_shard_map_check_raises_jaxs_message(run):
    _, ours, theirs = run
    for a, b in zip(ours["shard_map_errors"]["messages"],
                    theirs["shard_map_errors"]["messages"], strict=True):
        # JAX names the function of a failed replication check '_rem_singleton' (a wrapper
        # of its own); ours names the function the user gave. A spec tree that is no prefix
        # of the outputs names the outputs' type: JAX's tracer class, our aval class
        b = b.replace("'_rem_singleton'", "'double'")
        b = b.replace("<class 'jax._src.shard_map.ShardMapTracer'>",
                      "<class 'stages.s02_tracing.core.ShapedArray'>")
        assert _sorted_sets(a) == _sorted_sets(b)


def _sorted_sets(text):
    """A frozenset prints in hash order, which changes from process to process."""
    return re.sub(r"frozenset\(\{([^}]*)\}\)",
                  lambda m: "{" + ", ".join(sorted(m.group(1).split(", "))) + "}", text)


def test_a_psum_in_shard_map_gives_one_devices_gradient_step(run):
    """The psum of the per-device gradients is the gradient over the whole batch."""
    n, ours, _ = run
    rng = np.random.default_rng(0)
    w = rng.standard_normal((6, 3))
    x, y = rng.standard_normal((4 * n, 6)), rng.standard_normal((4 * n, 3))
    w, x, y = (a.astype(np.float32).astype(np.float64) for a in (w, x, y))
    t = np.tanh(x @ w)
    grad = x.T @ (2 * (t - y) * (1 - t * t))
    np.testing.assert_allclose(ours["shard_map_psum"]["values"][0], w - 0.1 * grad,
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours["shard_map_psum"]["values"][1], np.sum((t - y) ** 2),
                               rtol=1e-4)


@pytest.mark.parametrize("name", ["in_shardings", "out_shardings"])
def test_a_bare_partition_spec_needs_set_mesh_as_in_jax(four, name):
    import jax

    import stages.s11_spmd as s11
    from stages.s11_spmd import P

    x = np.arange(8.0, dtype=np.float32)
    with pytest.raises(RuntimeError) as ours:
        s11.jit(lambda a: a * 2, **{name: P("x")})(x)
    with pytest.raises(RuntimeError) as theirs:
        jax.jit(lambda a: a * 2, **{name: jax.sharding.PartitionSpec("x")})(x)
    assert str(ours.value) == str(theirs.value)
    with s11.set_mesh(s11.make_mesh((4,), ("x",))):
        out = s11.jit(lambda a: a * 2, **{name: P("x")})(x)
    assert out.sharding.spec == P("x")
    np.testing.assert_array_equal(np.asarray(out), x * 2)


def test_an_argument_laid_out_otherwise_than_in_shardings_is_refused_not_relaid(four):
    # JAX: an argument's own layout is never silently replaced by jit's; an equivalent
    # sharding written another way (P("x") and P("x", None)) is the same layout
    import stages.s11_spmd as s11
    from stages.s11_spmd import NamedSharding, P

    mesh = s11.make_mesh((2, 2), ("x", "y"), axis_types=(s11.AxisType.Auto,) * 2)
    x = np.arange(16.0, dtype=np.float32).reshape(4, 4)
    a = s11.device_put(x, NamedSharding(mesh, P("x", "y")))
    given = NamedSharding(mesh, P("y"))
    with pytest.raises(ValueError) as err:
        s11.jit(lambda p: p * 2, in_shardings=given)(a)
    assert str(err.value) == (
        "Sharding passed to jit does not match the sharding on the respective arg. Got jit "
        f"sharding: {given},\narg sharding: {a.sharding} for arg type: float32[4,4]")
    b = s11.device_put(x, NamedSharding(mesh, P("x")))
    out = s11.jit(lambda p: p * 2, in_shardings=NamedSharding(mesh, P("x", None)))(b)
    np.testing.assert_array_equal(np.asarray(out), x * 2)
