"""The seam and its PJRT implementation, called directly: transfers, the two arms of compile,
one program on four CPU devices, the executable as bytes, devices and memory."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import stages.s08_lowering as s08
from stages.s02_tracing import numpy as jnp
from stages.s09_pjrt import CompileInstance, Computation, ComputationClient, initialize_pjrt
from stages.s09_pjrt.computation_client import Data, ExecuteComputationOptions


@pytest.fixture(scope="module")
def four(tmp_path_factory):
    """A client of four CPU devices (the registry's CPU branch, CPU_NUM_DEVICES=4)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CPU_NUM_DEVICES", "4")
        return initialize_pjrt("CPU")


def program(fun, *args) -> Computation:
    return Computation("f", s08.lower(fun, *args).as_text())


def test_every_method_of_the_seam_is_abstract_and_names_its_cpp_counterpart():
    abstract = ComputationClient.__abstractmethods__
    assert {"transfer_to_device", "transfer_from_device", "copy_to_device", "compile",
            "execute_computation", "execute_replicated", "get_default_device",
            "get_local_devices", "get_all_devices", "get_device_kind", "get_memory_info",
            "get_metrics"} <= abstract
    for name in abstract:
        assert "C++" in inspect.getdoc(getattr(ComputationClient, name)), name
    with pytest.raises(TypeError, match="abstract"):
        ComputationClient()
    assert Data.__abstractmethods__ >= {"to_string", "has_value", "is_ready"}


def test_devices_get_dense_ordinals_and_strings(four):
    assert four.get_all_devices() == ["CPU:0", "CPU:1", "CPU:2", "CPU:3"]
    assert four.get_default_device() == "CPU:0"
    assert [four.device_id(d) for d in four.get_local_devices()] == [0, 1, 2, 3]
    assert ComputationClient.get_device_ordinal("CPU:3") == 3
    assert four.get_compilation_devices("CPU:1", []) == ["CPU:1"]
    assert "jaxlib" in four.get_platform_version()
    with pytest.raises(ValueError, match=r"^No such device: 'CPU:9'; this client has"):
        four.pjrt_device("CPU:9")


def test_a_transfer_round_trips_and_is_counted(four, delta):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    d = delta()
    (data,) = four.transfer_to_device([x], ["CPU:2"])
    assert data.device == "CPU:2" and data.aval.str_short() == "float32[3,4]"
    (back,) = four.transfer_from_device([data])
    np.testing.assert_array_equal(back, x)
    assert (d.samples("TransferToDeviceTime"), d.samples("TransferFromDeviceTime")) == (1, 1)
    assert d.count("CreateDataHandles") == 1
    copy = four.copy_to_device(data, "CPU:3")
    assert copy.device == "CPU:3"
    np.testing.assert_array_equal(four.transfer_from_device([copy])[0], x)
    assert d.count("CreateDataHandles") == 1  # C++ CopyToDevice counts no handle
    assert "CPU:2" in data.to_string() and "float32[3,4]" in data.to_string()
    data.delete()
    assert not data.has_value() and "deleted" in data.to_string()
    assert d.count("ReleaseDataHandles") == 0  # torch_xla 2.9 never increments it


@pytest.mark.parametrize("sharded,partitions,replicas", [(False, 1, 4), (True, 4, 1)])
def test_compile_has_two_arms_replicas_or_partitions(four, sharded, partitions, replicas):
    instance = CompileInstance(program(jnp.sin, np.ones(2, np.float32)), "CPU:0",
                               four.get_local_devices(), is_sharded=sharded)
    options = four.compile_options(instance)
    assert (options.num_partitions, options.num_replicas) == (partitions, replicas)
    assert options.executable_build_options.use_spmd_partitioning is sharded
    assignment = options.device_assignment  # replicas x partitions, each holding a device id
    assert (assignment.replica_count(), assignment.computation_count()) == (replicas, partitions)


def test_one_program_runs_on_all_four_devices(four, delta):
    x = np.linspace(-1, 1, 3, dtype=np.float32)
    devices = four.get_local_devices()
    comp = program(lambda v: jnp.sin(v) * 2.0, x)
    (exe,) = four.compile([CompileInstance(comp, devices[0], devices)])
    shards = four.transfer_to_device([x + k for k in range(4)], devices)
    d = delta()
    (outs,) = four.execute_replicated(exe, [shards], devices)
    assert [o.device for o in outs] == devices
    for k, out in enumerate(four.transfer_from_device(outs)):
        np.testing.assert_allclose(out, np.sin(x + k) * 2.0, rtol=1e-6)  # each its own data
    assert d.samples("ExecuteReplicatedTime") == 1
    assert d.count("CreateDataHandles") == 0  # C++ ExecuteReplicated counts no handles
    with pytest.raises(ValueError, match=r"^Expected one shard per device for argument 0"):
        four.execute_replicated(exe, [shards[:2]], devices)


def test_execute_checks_that_every_argument_is_on_its_device(four):
    x = np.ones(3, np.float32)
    comp = program(jnp.cos, x)
    (exe,) = four.compile([CompileInstance(comp, "CPU:0", ["CPU:0"])])
    (on1,) = four.transfer_to_device([x], ["CPU:1"])
    with pytest.raises(ValueError, match=r"^argument 0 is on CPU:1, the computation runs on "
                                         r"CPU:0$"):
        four.execute_computation(exe, [on1], "CPU:0")


def test_an_executable_round_trips_through_bytes(four):
    x = np.linspace(0, 1, 4, dtype=np.float32)
    comp = program(lambda v: jnp.exp(v) - 1.0, x)
    (exe,) = four.compile([CompileInstance(comp, "CPU:0", ["CPU:0"])])
    again = four.deserialize_computation(four.serialize_computation(exe))
    args = four.transfer_to_device([x], ["CPU:0"])
    (a,) = four.transfer_from_device(four.execute_computation(exe, args, "CPU:0"))
    (b,) = four.transfer_from_device(four.execute_computation(again, args, "CPU:0"))
    np.testing.assert_array_equal(a, b)
    assert again.devices == ["CPU:0"] and "HloModule" in again.hlo_text()


def test_memory_and_waiting(four):
    with pytest.raises(RuntimeError, match=r"^CPU:0 keeps no allocator statistics \(cpu "):
        four.get_memory_info("CPU:0")
    (x,) = four.transfer_to_device([np.ones((256, 256), np.float32)], ["CPU:1"])
    four.wait_device_ops()
    four.wait_device_ops(["CPU:1"])
    assert x.is_ready()
    assert set(four.get_metrics()) >= {"CompileTime", "ExecuteTime", "CreateDataHandles"}


def test_each_array_of_a_transfer_is_a_handle_and_each_output_of_a_run(four, delta):
    xs = [np.ones(3, np.float32), np.arange(4, dtype=np.int32), np.zeros((2, 2), np.float64)]
    d = delta()
    data = four.transfer_to_device(xs, ["CPU:0", "CPU:1", "CPU:1"])
    assert [x.device for x in data] == ["CPU:0", "CPU:1", "CPU:1"]
    assert d.count("CreateDataHandles") == 3
    comp = program(lambda v: (jnp.sin(v), v * 2.0, jnp.cos(v)), xs[0])
    (exe,) = four.compile([CompileInstance(comp, "CPU:0", ["CPU:0"])])
    d = delta()
    outs = four.execute_computation(exe, data[:1], "CPU:0")
    assert len(outs) == 3 and d.count("CreateDataHandles") == 3
    assert (d.samples("ExecuteTime"), d.samples("EagerOpExecuteTime")) == (1, 0)
    d = delta()
    four.execute_computation(exe, data[:1], "CPU:0", ExecuteComputationOptions(eager_mode=True))
    assert (d.samples("ExecuteTime"), d.samples("EagerOpExecuteTime")) == (0, 1)


def test_the_device_assignment_keeps_the_order_the_devices_are_given_in(four):
    x = np.linspace(-1, 1, 3, dtype=np.float32)
    devices = ["CPU:3", "CPU:1"]  # replica 0 runs on device 3: the ids are not sorted
    comp = program(lambda v: v * 3.0, x)
    instance = CompileInstance(comp, devices[0], devices)
    assert repr(four.compile_options(instance).device_assignment) == (
        "DeviceAssignment{replica_count=2, computation_count=1, Computation0{3 1}}")
    (exe,) = four.compile([instance])
    shards = four.transfer_to_device([x, x + 1.0], devices)
    (outs,) = four.execute_replicated(exe, [shards], devices)
    assert [o.device for o in outs] == devices
    for k, out in enumerate(four.transfer_from_device(outs)):
        np.testing.assert_allclose(out, (x + k) * 3.0, rtol=1e-6)


def test_the_device_assignment_holds_device_ids_not_positions(four):
    x = np.linspace(-1, 1, 3, dtype=np.float32)
    devices = ["CPU:2", "CPU:3"]
    comp = program(lambda v: v * 3.0, x)
    for instance, assigned in [(CompileInstance(comp, devices[0], devices), "{2 3}"),
                               (CompileInstance(comp, "CPU:1", ["CPU:1"]), "{1}")]:
        assert repr(four.compile_options(instance).device_assignment) == (
            f"DeviceAssignment{{replica_count={len(instance.devices)}, computation_count=1, "
            f"Computation0{assigned}}}")  # a program on other devices would not run here
    (exe,) = four.compile([CompileInstance(comp, devices[0], devices)])
    shards = four.transfer_to_device([x, x + 1.0], devices)
    (outs,) = four.execute_replicated(exe, [shards], devices)
    assert [o.device for o in outs] == devices
    for k, out in enumerate(four.transfer_from_device(outs)):
        np.testing.assert_allclose(out, (x + k) * 3.0, rtol=1e-6)
    (single,) = four.compile([CompileInstance(comp, "CPU:1", ["CPU:1"])])
    (out,) = four.execute_computation(single, four.transfer_to_device([x], ["CPU:1"]), "CPU:1")
    assert out.device == "CPU:1"
    np.testing.assert_allclose(four.transfer_from_device([out])[0], x * 3.0, rtol=1e-6)
