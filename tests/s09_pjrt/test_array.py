"""Device arrays: JAX's printing, asynchronous results, deletion and donation with JAX's error,
devices and device_put, DLPack both ways with torch and numpy, and operators that go through
the primitives (on the device, through stage 7's per-primitive cache)."""

from __future__ import annotations

import pickle

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
import torch

import stages.s04_autodiff as s04
import stages.s07_caches as s07
import stages.s09_pjrt as s09
from stages.s02_tracing import array as s02_array
from stages.s02_tracing import core
from stages.s02_tracing import numpy as jnp
from stages.s07_caches import util
from stages.s09_pjrt import ArrayImpl, device_put
from tests.s09_pjrt.conftest import four_cpu_devices


@pytest.mark.parametrize("value", [
    np.arange(3, dtype=np.float32), np.arange(12, dtype=np.int32).reshape(3, 4),
    np.float32(2.5), 2.0, 3, True, np.zeros((0, 2), np.float32),
    np.linspace(-1, 1, 40, dtype=np.float32).reshape(4, 10),
], ids=["vector", "matrix", "f32_scalar", "weak_float", "weak_int", "bool", "empty", "wide"])
def test_an_array_prints_as_jax_prints_it(value):
    ours, theirs = device_put(value), jax.device_put(value)
    assert repr(ours) == repr(theirs)
    assert str(ours) == str(theirs)
    assert (ours.shape, ours.dtype, ours.weak_type) == (theirs.shape, theirs.dtype,
                                                       theirs.weak_type)


def test_a_jit_output_keeps_its_weak_type_as_jax_does():
    ours = s07.jit(lambda x: x * 2.0)(3.0)
    theirs = jax.jit(lambda x: x * 2.0)(3.0)
    assert repr(ours) == repr(theirs) == "Array(6., dtype=float32, weak_type=True)"
    assert f"{ours:.2f}" == f"{theirs:.2f}" == "6.00"


def test_a_jitted_call_returns_before_the_result_is_ready():
    f = s07.jit(lambda x: ((x @ x) @ x) @ x @ x)
    x = device_put(np.full((768, 768), 1e-3, np.float32))
    f(x).block_until_ready()  # compiled now: the next call only dispatches
    out = f(x)
    assert not out.is_ready()  # four 768x768 matmuls are still running
    assert out.block_until_ready() is out and out.is_ready()
    np.testing.assert_allclose(np.asarray(out)[0, :2], 768 ** 4 * 1e-15, rtol=1e-4)


def test_a_donated_array_is_gone_with_jaxs_error():
    theirs = jax.device_put(np.ones(3, np.float32))
    jax.jit(lambda x: x + 1.0, donate_argnums=0)(theirs)
    with pytest.raises(RuntimeError) as jax_err:
        np.asarray(theirs)
    ours = device_put(np.ones(3, np.float32))
    out = s07.jit(lambda x: x + 1.0, donate_argnums=0)(ours)
    assert ours.is_deleted() and not out.is_deleted()
    for use in (np.asarray, repr, lambda a: a + 1.0, s07.jit(lambda x: x * 2.0)):
        with pytest.raises(RuntimeError) as err:
            use(ours)
        assert str(err.value) == str(jax_err.value) == \
            "Array has been deleted with shape=float32[3]."
    np.testing.assert_array_equal(out, [2.0, 2.0, 2.0])


def test_a_donated_array_passed_to_the_same_jit_again_is_refused_before_pjrt_sees_it():
    # JAX's C++ fast path skips the check and lets PJRT refuse the buffer, in other words; the
    # page says so, and this test tells if either answer changes
    theirs = jax.device_put(np.ones(3, np.float32))
    g = jax.jit(lambda x: x + 1.0, donate_argnums=0)
    g(theirs)
    with pytest.raises(ValueError, match=r"INVALID_ARGUMENT: Invalid buffer passed to Execute\(\) "
                       r"as argument 0 to replica 0: INVALID_ARGUMENT: Buffer has been deleted "
                       r"or donated\."):
        g(theirs)
    ours = device_put(np.ones(3, np.float32))
    f = s07.jit(lambda x: x + 1.0, donate_argnums=0)
    f(ours)
    with pytest.raises(RuntimeError, match=r"^Array has been deleted with shape=float32\[3\]\.$"):
        f(ours)


def test_delete_frees_the_buffer():
    x = device_put(np.arange(4.0, dtype=np.float32))
    x.delete()
    assert x.is_deleted()
    with pytest.raises(RuntimeError, match=r"^Array has been deleted with shape=float32\[4\]\.$"):
        x.devices()


def test_the_values_are_fetched_once_and_a_deleted_array_is_refused_before_any_transfer(delta):
    x = device_put(np.arange(4.0, dtype=np.float32))
    d = delta()
    assert np.asarray(x).tolist() == x.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert str(x) == "[0. 1. 2. 3.]"
    assert d.samples("TransferFromDeviceTime") == 1  # one read from the device, then kept
    x.delete()
    d = delta()
    for use in (np.asarray, str, ArrayImpl.tolist):
        with pytest.raises(RuntimeError, match=r"^Array has been deleted with shape=float32\[4\]"):
            use(x)
    assert d.samples("TransferFromDeviceTime") == 0  # refused before asking the device


def test_the_values_numpy_sees_are_read_only_as_in_jax():
    """np.asarray hands out the kept host copy: a write to it would change what the array prints
    but not what a computation reads. JAX's copy is read-only; ours too."""
    for a in (device_put(np.ones(3, np.float32)), s07.jit(lambda v: v * 2.0)(np.ones(3)),
              jax.device_put(np.ones(3, np.float32))):
        with pytest.raises(ValueError, match="^assignment destination is read-only$"):
            np.asarray(a)[0] = 5.0
        assert str(a) in ("[1. 1. 1.]", "[2. 2. 2.]")


def test_waiting_on_a_deleted_array_gives_pjrts_error_as_jax_does():
    errors = []
    for put in (device_put, jax.device_put):
        a = put(np.ones(3, np.float32))
        a.delete()
        with pytest.raises(Exception) as info:
            a.block_until_ready()
        errors.append((type(info.value), str(info.value)))
    assert errors[0] == errors[1]
    assert errors[0][1] == ("INVALID_ARGUMENT: BlockHostUntilReady() called on deleted or "
                            "donated buffer")


def test_devices_and_device_put():
    x = device_put(np.arange(3, dtype=np.int32))
    (device,) = x.devices()
    assert (device.id, device.platform, device.device_kind) == (0, "cpu", "cpu")
    assert x.device == device
    assert device_put(x) is x and not x.committed
    for named in (device_put(x, device), device_put(x, "CPU:0")):  # a new array, as in JAX
        assert named is not x and named.committed and named.device == device
    assert core.get_aval(x) == core.ShapedArray((3,), np.int32)


@pytest.mark.parametrize("tree", [[1, 2], (1.5,), {"a": np.ones(2), "b": None}, []],
                         ids=["list", "tuple", "dict_with_none", "empty"])
def test_device_put_of_a_pytree_puts_each_leaf_as_in_jax(tree):
    ours, theirs = device_put(tree), jax.device_put(tree)
    assert repr(ours) == repr(theirs)
    assert all(type(x) is ArrayImpl for x in jax.tree.leaves(ours))


def test_a_device_array_knows_its_bytes_as_in_jax():
    for value in (np.ones((2, 3), np.float32), np.arange(5, dtype=np.int8), 2.0):
        ours, theirs = device_put(value), jax.device_put(value)
        assert (ours.nbytes, ours.itemsize) == (theirs.nbytes, theirs.itemsize)


def test_dlpack_to_and_from_torch_and_numpy():
    x = device_put(np.arange(6, dtype=np.float32).reshape(2, 3))
    t = torch.from_dlpack(x)
    assert t.shape == (2, 3) and t.dtype == torch.float32
    np.testing.assert_array_equal(t.numpy(), np.asarray(x))
    np.testing.assert_array_equal(np.from_dlpack(x), np.asarray(x))
    back = s09.from_dlpack(torch.arange(4, dtype=torch.int32))
    assert repr(back) == "Array([0, 1, 2, 3], dtype=int32)"
    again = s09.from_dlpack(np.linspace(0, 1, 3, dtype=np.float32))
    assert isinstance(again, ArrayImpl) and again.shape == (3,)


@pytest.mark.parametrize("make", [
    lambda v: torch.tensor(v, dtype=torch.bfloat16),
    lambda v: jax.device_put(np.array(v, jjnp.bfloat16)),
    lambda v: device_put(np.array(v, jjnp.bfloat16)),
], ids=["torch", "jax", "ours"])
def test_from_dlpack_takes_bfloat16_as_jax_does(make):
    # numpy's DLPack reader has no bfloat16: the bits come over as int16 and are viewed back
    src = make([1.5, -2.25])
    assert repr(s09.from_dlpack(src)) == repr(jax.dlpack.from_dlpack(src)) == \
        "Array([1.5, -2.25], dtype=bfloat16)"


def test_from_dlpack_refuses_what_has_no_dlpack_and_takes_copy_as_jax_does():
    for lib in (s09, jax.dlpack):
        with pytest.raises(TypeError, match=r"^The array passed to from_dlpack must have "
                           r"__dlpack__ and __dlpack_device__ methods\.$"):
            lib.from_dlpack(1.5)
    t = torch.arange(3, dtype=torch.float32)
    assert repr(s09.from_dlpack(t, copy=True)) == repr(jax.dlpack.from_dlpack(t, copy=True))
    with pytest.raises(ValueError, match="ours always copies"):  # JAX can wrap without one
        s09.from_dlpack(t, copy=False)


def test_device_put_refuses_a_masked_array_and_keeps_a_float0_on_the_host_as_jax_does():
    masked = np.ma.array([1.0, 2.0], mask=[0, 1])
    messages = []
    for put in (device_put, jax.device_put):
        with pytest.raises(ValueError) as e:
            put(masked)
        messages.append(str(e.value))
    assert messages[0] == messages[1] and messages[0].startswith("numpy masked arrays are not")
    zeros = np.zeros((2, 3), jax.dtypes.float0)
    ours, theirs = device_put(zeros), jax.device_put(zeros)
    assert not isinstance(ours, ArrayImpl)
    assert (ours.shape, ours.dtype) == (theirs.shape, theirs.dtype)


def test_item_assignment_and_round_on_a_device_array_are_jaxs():
    x, xj = device_put(np.float32([1.26, 2.5])), jax.device_put(np.float32([1.26, 2.5]))
    assert repr(round(x)) == repr(round(xj)) == "Array([1, 2], dtype=int32)"
    messages = []
    for a in (x, xj):
        with pytest.raises(TypeError) as e:
            a[0] = 1.0
        messages.append(str(e.value))
    assert messages[0] == messages[1] and messages[0].startswith("JAX arrays are immutable")


def test_a_device_prints_and_formats_as_jaxs():
    ours, theirs = device_put(np.ones(2)).device, jax.device_put(np.ones(2)).device
    assert str(ours) == f"{ours}" == str(theirs) == "cpu:0"
    assert repr(ours) == repr(theirs) == "CpuDevice(id=0)"
    assert ours.process_index == theirs.process_index == 0


def test_operators_go_through_the_primitives_to_the_device():
    x = device_put(np.array([1.0, -2.0, 3.0], np.float32))
    jx = jjnp.asarray(np.asarray(x))
    prim = util.registry["primitive"]
    before = prim.hits + prim.misses
    for ours, theirs in [(x + 1.0, jx + 1.0), (2.0 * x, 2.0 * jx), (x * x, jx * jx),
                         (-x, -jx), (x > 0.0, jx > 0.0), (x.sum(), jx.sum()),
                         (x[1:], jx[1:]), (x.reshape(3, 1).T, jx.reshape(3, 1).T),
                         (abs(x), abs(jx)), (x @ x, jx @ jx), (jnp.sin(x), jjnp.sin(jx))]:
        assert type(ours) is ArrayImpl  # computed on the device, not on the host
        assert repr(ours) == repr(theirs)
    assert prim.hits + prim.misses > before  # each an eager primitive, a tiny jit
    assert float(x[2]) == 3.0 and int(x[0]) == 1 and bool(x[0] > 0)
    assert [float(v) for v in x] == [1.0, -2.0, 3.0] and len(x) == 3
    assert x.tolist() == [1.0, -2.0, 3.0] and x[1].item() == -2.0
    assert (np.ones(3, np.float32) + x).tolist() == [2.0, -1.0, 4.0]  # numpy defers to us
    with pytest.raises(TypeError, match="unhashable"):
        hash(x)
    messages = []
    for a in (x, jx):
        with pytest.raises(TypeError) as err:
            a + [1, 2, 3]
        messages.append(str(err.value))
    assert messages[0] == messages[1] == "unsupported operand type(s) for +: 'ArrayImpl' and 'list'"


def test_without_op_by_op_an_eager_op_runs_on_the_host_values():
    x = device_put(np.array([1.0, 2.0], np.float32))
    with core.set_current_trace(core.eval_trace):  # a bottom trace that does not dispatch
        y = x + 1.0
    assert type(y) is s02_array.Array and y.tolist() == [2.0, 3.0]  # stage 2's, on the host


def test_a_device_array_is_stage_2s_array_with_another_storage():
    # one interface, as JAX's one ArrayImpl: isinstance holds, and everything Array defines
    # (conversions with numpy's checks, .at, prod, pickling) works on the device array too
    x = device_put(np.arange(4, dtype=np.float32).reshape(2, 2))
    jx = jjnp.arange(4, dtype=jjnp.float32).reshape(2, 2)
    assert isinstance(x, s02_array.Array) and issubclass(ArrayImpl, s02_array.Array)
    assert repr(x.at[0, 1].set(7.0)) == repr(jx.at[0, 1].set(7.0))
    assert repr(x.prod()) == repr(jx.prod())
    with pytest.raises(TypeError, match="Only scalar arrays can be converted") as ours:
        float(x)
    with pytest.raises(TypeError) as theirs:
        float(jx)
    assert str(ours.value) == str(theirs.value)
    copied = x.copy()
    assert type(copied) is ArrayImpl and copied._data is not x._data
    back = pickle.loads(pickle.dumps(device_put(2.0)))
    assert type(back) is ArrayImpl and repr(back) == repr(jjnp.asarray(2.0))


def test_a_donation_still_frees_an_array_whose_values_were_read():
    # the host copy must be a copy: a numpy view of the CPU buffer would make PJRT keep it
    for read in (str, float, np.asarray, lambda a: a.copy(), pickle.dumps):
        ours, theirs = device_put(np.ones((), np.float32)), jax.device_put(np.ones((), np.float32))
        read(ours), read(theirs)
        s07.jit(lambda a: a * 2.0, donate_argnums=0)(ours)
        jax.jit(lambda a: a * 2.0, donate_argnums=0)(theirs)
        assert ours.is_deleted() and theirs.is_deleted(), read


def test_values_read_before_a_donation_are_refused_after_it_as_in_jax():
    # the values kept on the host do not outlive the buffer: JAX checks for deletion first
    theirs = jax.device_put(np.arange(3, dtype=np.float32))
    np.asarray(theirs)
    jax.jit(lambda a: a * 2.0, donate_argnums=0)(theirs)
    with pytest.raises(RuntimeError) as jax_err:
        np.asarray(theirs)
    ours = device_put(np.arange(3, dtype=np.float32))
    assert np.asarray(ours).tolist() == [0.0, 1.0, 2.0]  # fetched and kept
    s07.jit(lambda a: a * 2.0, donate_argnums=0)(ours)
    for use in (np.asarray, str, ArrayImpl.tolist):
        with pytest.raises(RuntimeError) as err:
            use(ours)
        assert str(err.value) == str(jax_err.value) == \
            "Array has been deleted with shape=float32[3]."


def test_device_put_without_a_device_leaves_an_array_where_it_is_as_jax_does():
    with four_cpu_devices():
        x = device_put(np.arange(3.0, dtype=np.float32), "CPU:3")
        assert device_put(x) is x and x.device.id == 3
        assert device_put(x, "CPU:1").device.id == 1


def test_the_device_of_a_deleted_array_is_refused_as_jax_refuses_it():
    ours, theirs = device_put(np.ones(2, np.float32)), jax.device_put(np.ones(2, np.float32))
    ours.delete(), theirs.delete()
    errors = []
    for x in (ours, theirs):
        with pytest.raises(RuntimeError) as err:
            x.device  # noqa: B018
        errors.append(str(err.value))
    assert errors[0] == errors[1] == "Array has been deleted with shape=float32[2]."


def test_a_jit_under_grad_donates_its_input_and_answers_on_the_device_as_jax_does():
    # the jit equation's impl gets the device arrays themselves, not host copies of them
    ours, theirs = device_put(np.ones(3, np.float32)), jax.device_put(np.ones(3, np.float32))
    g = s04.grad(lambda x: jnp.sum(s07.jit(lambda a: jnp.sin(a) * 2.0, donate_argnums=0)(x)))
    jax_g = jax.grad(lambda x: jjnp.sum(jax.jit(lambda a: jjnp.sin(a) * 2.0,
                                                donate_argnums=0)(x)))
    np.testing.assert_array_equal(g(ours), jax_g(theirs))
    assert ours.is_deleted() and theirs.is_deleted()
    out, _ = s04.jvp(s07.jit(jnp.sin), (device_put(1.0),), (1.0,))
    assert type(out) is ArrayImpl


def test_an_array_on_one_device_has_jaxs_sharding_and_its_device_prints_as_jaxs():
    ours, theirs = device_put(np.ones(3, np.float32)), jax.device_put(np.ones(3, np.float32))
    assert repr(ours.device) == repr(theirs.device) == "CpuDevice(id=0)"
    assert repr(ours.sharding) == repr(theirs.sharding)
    out, jax_out = s07.jit(lambda a: a * 2.0)(ours), jax.jit(lambda a: a * 2.0)(theirs)
    for s, t in ((out.sharding, jax_out.sharding), (ours.sharding, theirs.sharding)):
        assert (s == ours.sharding, hash(s) == hash(ours.sharding)) == (
            t == theirs.sharding, hash(t) == hash(theirs.sharding)) == (True, True)
        assert (s.device_set, s.num_devices, s.shard_shape((3,)), s.is_fully_replicated,
                s.is_fully_addressable, s.memory_kind) == (
            {ours.device}, t.num_devices, t.shard_shape((3,)), t.is_fully_replicated,
            t.is_fully_addressable, t.memory_kind)
        assert s.addressable_devices == s.device_set and len(t.addressable_devices) == 1
    assert (out.is_fully_replicated, out.is_fully_addressable) == (
        jax_out.is_fully_replicated, jax_out.is_fully_addressable) == (True, True)
    moved = device_put(np.zeros(2, np.float32), ours.sharding)  # JAX's idiom: put it likewise
    assert moved.sharding == ours.sharding
