"""The seam's one implementation: our ComputationClient over jaxlib's PJRT client.

torch_xla: torch_xla/csrc/runtime/pjrt_computation_client.cpp. This is the only module of the
course that imports jaxlib (through `jax._src.lib.xla_client`, plus the `ShapedArray` that
jaxlib's `batched_device_put` wants), so a jaxlib upgrade is one file to mend: the calls that
moved between jaxlib 0.10 and 0.12 go through the functions under "what moved between
versions". Every method stamps the timer torch_xla's does (metrics.py).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
from collections.abc import Sequence
from typing import Any

import numpy as np
from jax._src import core as jax_core
from jax._src import xla_bridge
from jax._src.lib import jaxlib_extension_version
from jax._src.lib import xla_client as xc

from stages.s02_tracing.core import ShapedArray

from . import metrics
from .computation_client import (
    DEFAULT_OPTIONS,
    CompileInstance,
    Computation,
    ComputationClient,
    Data,
    ExecuteComputationOptions,
    ExecuteReplicatedOptions,
    MemoryInfo,
)

JAXLIB_VERSION = importlib.metadata.version("jaxlib")

# the timers and counters of torch_xla's computation_client.cpp, by the same names
TransferToDeviceTime = metrics.metric("TransferToDeviceTime", metrics.metric_fn_time)
TransferFromDeviceTime = metrics.metric("TransferFromDeviceTime", metrics.metric_fn_time)
CompileTime = metrics.metric("CompileTime", metrics.metric_fn_time)
EagerOpCompileTime = metrics.metric("EagerOpCompileTime", metrics.metric_fn_time)
ExecuteTime = metrics.metric("ExecuteTime", metrics.metric_fn_time)
EagerOpExecuteTime = metrics.metric("EagerOpExecuteTime", metrics.metric_fn_time)
ExecuteReplicatedTime = metrics.metric("ExecuteReplicatedTime", metrics.metric_fn_time)
InboundData = metrics.metric("InboundData", metrics.metric_fn_bytes)  # device to host
OutboundData = metrics.metric("OutboundData", metrics.metric_fn_bytes)  # host to device
CreateDataHandles = metrics.counter("CreateDataHandles")
ReleaseDataHandles = metrics.counter("ReleaseDataHandles")
CreateCompileHandles = metrics.counter("CreateCompileHandles")


# ------------------------------------------------------------------ making a client

def make_cpu_client(asynchronous: bool = True, num_devices: int = 1) -> Any:
    """jaxlib's CPU client (C++: xla::GetPjRtCpuClient(async, cpu_device_count))."""
    return xc.make_cpu_client(asynchronous=asynchronous, num_devices=num_devices)


def make_c_api_client(plugin_name: str, library_path: str,
                      options: dict[str, Any] | None = None) -> Any:
    """Load a PJRT plugin's .so, initialize it, make its client: the C-API path that TPU's
    libtpu, the CUDA plugin and any vendor plugin all take (C++: pjrt::LoadPjrtPlugin,
    InitializePjrtPlugin, xla::GetCApiClient). A second load of one name fails, so JAX loads
    its `jax_plugins` first (it falls back to CPU if ours came first; a load makes no client)."""
    getattr(xla_bridge, "_discover_and_register_pjrt_plugins", lambda: None)()
    if not xc.pjrt_plugin_loaded(plugin_name):
        xc.load_pjrt_plugin_dynamically(plugin_name, library_path)
    if not xc.pjrt_plugin_initialized(plugin_name):
        xc.initialize_pjrt_plugin(plugin_name)
    return xc.make_c_api_client(plugin_name, options or {}, None)


def gpu_plugin_options() -> dict[str, Any]:
    """The CUDA plugin's options from XLA_PYTHON_CLIENT_* variables, as JAX makes them."""
    make = getattr(xc, "generate_pjrt_gpu_plugin_options", None)
    return dict(make()) if make is not None else {}


# ------------------------------------------------------------------ what moved between versions

def _compile_and_load(client: Any, text: str, devices: Any, options: Any) -> Any:
    compile_fn = getattr(client, "compile_and_load", None) or client.compile  # jaxlib < 0.6
    return compile_fn(text, devices, options)


def _serialize(client: Any, executable: Any) -> bytes:
    serialize = getattr(client, "serialize_executable", None)
    return bytes(serialize(executable) if serialize is not None else executable.serialize())


def _deserialize(client: Any, data: bytes, devices: Any) -> Any:
    try:
        return client.deserialize_executable(data, devices, xc.CompileOptions())
    except TypeError:  # a jaxlib without the executable_devices argument
        return client.deserialize_executable(data, xc.CompileOptions())


def result_handler(buffer: Any) -> Any:
    """jaxlib's wrapper of outputs shaped like `buffer` (JAX: _array_global_result_handler)."""
    skip = {"_skip_checks": True} if jaxlib_extension_version < 489 else {}  # as JAX's array.py
    return xc.array_result_handler(_jax_aval(buffer), buffer.sharding, committed=True, **skip)


# ------------------------------------------------------------------ handles and executables

class PjRtData(Data):
    """One jaxlib buffer on one device (C++: PjRtData, a shared_ptr<PjRtBuffer>)."""

    def __init__(self, device: str, buffer: Any):
        # Data's two fields set here, not through super(): every output of every call makes one
        self.device, self.should_donate_buffer, self.buffer = device, False, buffer

    @property
    def aval(self) -> ShapedArray:
        return ShapedArray(tuple(self.buffer.shape), np.dtype(self.buffer.dtype))

    def to_string(self) -> str:
        state = "deleted" if not self.has_value() else "ready" if self.is_ready() else "pending"
        return f"PjRtData(device={self.device}, shape={self.aval.str_short()}, {state})"

    def has_value(self) -> bool:
        return not self.buffer.is_deleted()

    def is_ready(self) -> bool:
        return self.buffer.is_ready()

    def block_until_ready(self) -> None:
        self.buffer.block_until_ready()

    def delete(self) -> None:
        # torch_xla 2.9 defines ReleaseDataHandles but never increments it
        self.buffer.delete()

    def dlpack(self, **kwargs: Any) -> Any:
        return self.buffer.__dlpack__(**kwargs)

    def dlpack_device(self) -> tuple[Any, int]:
        return self.buffer.__dlpack_device__()


class PjRtComputation(Computation):
    """A Computation that owns its loaded executable (C++: PjRtComputation)."""

    def __init__(self, name: str, program: str, devices: Sequence[str], executable: Any,
                 device_list: Any):
        super().__init__(name, program, devices)
        self.executable, self.device_list = executable, device_list
        self._result_handlers: list[Any] | None = None

    def execute(self, buffers: Sequence[Any]) -> list[Any]:
        """Run on one device: one output buffer per result (C++: ExecuteSharded). The first run
        learns the outputs' shapes; later runs hand the outputs to jaxlib result handlers made
        from them (JAX: ExecuteReplicated), a microsecond cheaper than splitting in Python."""
        results = self.executable.execute_sharded(buffers)
        if self._result_handlers is not None:
            return results.consume_with_handlers(self._result_handlers)
        outs = [bufs[0] for bufs in results.disassemble_into_single_device_arrays()]
        self._result_handlers = [result_handler(b) for b in outs]
        return outs

    def hlo_text(self) -> str:
        """XLA's optimized HLO, after its passes (what `Compiled.as_text()` shows)."""
        get = getattr(self.executable, "get_hlo_text", None)
        return get() if get is not None else self.executable.hlo_modules()[0].to_string()

    def output_shardings(self) -> list[tuple[list[int], list[int], bool] | None]:
        """Per output, the sharding the SPMD partitioner chose: (tile dimensions, logical
        devices in order, replicated on the last tile dimension), or None if replicated."""
        return _read_shardings(self.executable.get_output_shardings())

    def parameter_shardings(self) -> list[tuple[list[int], list[int], bool] | None]:
        """Per parameter, the same: what each argument must be cut into."""
        return _read_shardings(self.executable.get_parameter_shardings())

    def cost_analysis(self) -> dict[str, float]:
        costs = self.executable.cost_analysis()
        return dict(costs[0] if isinstance(costs, list) else costs)


def _read_shardings(protos: Any) -> list[tuple[list[int], list[int], bool] | None]:
    out = []
    for proto in protos or []:
        hlo = xc.HloSharding.from_proto(proto)
        out.append(None if hlo.is_replicated() else
                   (list(hlo.tile_assignment_dimensions()),
                    list(hlo.tile_assignment_devices()), hlo.replicate_on_last_tile_dim()))
    return out


@functools.lru_cache(maxsize=1024)
def _aval_of(shape: tuple[int, ...], dtype: np.dtype) -> Any:
    return jax_core.ShapedArray(shape, dtype)


def _jax_aval(buffer: Any) -> Any:
    """jaxlib's aval of a buffer, made once per shape and dtype (a step makes many)."""
    return _aval_of(tuple(buffer.shape), buffer.dtype)


# ------------------------------------------------------------------ the client

class PjRtComputationClient(ComputationClient):
    """torch_xla's PjRtComputationClient, over a jaxlib `Client`."""

    def __init__(self, client: Any, device_type: str):
        self.client, self.device_type = client, device_type
        # C++ Initialize(): devices sorted by id get dense global ordinals: "CPU:0", "CPU:1"
        ordered = sorted(client.devices(), key=lambda d: d.id)
        self._devices = {f"{device_type}:{k}": d for k, d in enumerate(ordered)}
        local = {d.id for d in client.local_devices()}
        self._local = [name for name, d in self._devices.items() if d.id in local]

    def __repr__(self) -> str:
        return f"PjRtComputationClient({self.device_type}, {len(self._devices)} devices)"

    def pjrt_device(self, device: str) -> Any:
        """The jaxlib device a device string names (C++: StringToPjRtDevice)."""
        try:
            return self._devices[device]
        except KeyError:
            raise ValueError(f"No such device: {device!r}; this client has "
                             f"{list(self._devices)}") from None

    # ------------------------------------------------------------------ transfer
    # --8<-- [start:transfer_to_device]
    def transfer_to_device(self, tensors: Sequence[np.ndarray], devices: Sequence[str]
                           ) -> list[Data]:
        # EXERCISE 9.4 (transfer): one buffer per host array, timed and counted as torch_xla
        with metrics.timed(TransferToDeviceTime):
            out, total_bytes = [], 0
            for x, device in zip(tensors, devices, strict=True):
                x = np.asarray(x)
                dev = self.pjrt_device(device)
                aval = jax_core.ShapedArray(x.shape, x.dtype)
                # the host array must outlive the copy: PJRT may still be reading it when this
                # returns (C++ keeps it alive in an otherwise empty on-done lambda)
                buffer = xc.batched_device_put(aval, xc.SingleDeviceSharding(dev), [x], [dev],
                                               True)
                out.append(PjRtData(device, buffer))
                total_bytes += x.nbytes
        OutboundData.add_sample(total_bytes)
        CreateDataHandles.add_value(len(out))
        return out
        # END EXERCISE
    # --8<-- [end:transfer_to_device]

    def transfer_from_device(self, handles: Sequence[Data]) -> list[np.ndarray]:
        with metrics.timed(TransferFromDeviceTime):
            # blocks until computed; a copy: a CPU view would keep PJRT from donating the buffer
            out = [np.array(h.buffer, copy=True) for h in handles]
        InboundData.add_sample(sum(x.nbytes for x in out))
        return out

    def copy_to_device(self, data: Data, dst: str) -> Data:
        buffer = data.buffer
        if data.device != dst:
            dev = self.pjrt_device(dst)
            buffer = xc.batched_device_put(jax_core.ShapedArray(buffer.shape, buffer.dtype),
                                           xc.SingleDeviceSharding(dev), [buffer], [dev], True)
        return PjRtData(dst, buffer)  # C++ CopyToDevice counts nothing

    # ------------------------------------------------------------------ compile
    # --8<-- [start:compile]
    def compile_options(self, instance: CompileInstance) -> Any:
        """C++ Compile()'s two arms: SPMD partitions or replicas, and the device assignment."""
        # EXERCISE 9.5 (compile-options): the two arms of Compile, and the device assignment
        ids = [self.pjrt_device(d).id for d in instance.devices]
        n = len(ids)
        options = xc.CompileOptions()
        if instance.is_sharded:  # one program partitioned over the devices (SPMD)
            options.executable_build_options.use_spmd_partitioning = True
            options.num_partitions, options.num_replicas = n, 1
            assignment = np.array(ids).reshape(1, n)
        else:  # one program per device, each on its own data
            options.num_partitions, options.num_replicas = 1, n
            assignment = np.array(ids).reshape(n, 1)
        options.device_assignment = xc.DeviceAssignment.create(assignment)
        # END EXERCISE
        if instance.is_sharded:
            options.executable_build_options.use_shardy_partitioner = \
                instance.use_shardy_partitioner
            if instance.allow_spmd_sharding_propagation_to_output:
                options.executable_build_options.allow_spmd_sharding_propagation_to_output = \
                    [True]
        options.env_option_overrides = list(instance.env_option_overrides)
        options.parameter_is_tupled_arguments = instance.parameter_is_tupled_arguments
        return options

    def compile(self, instances: Sequence[CompileInstance]) -> list[Computation]:
        timer = EagerOpCompileTime if instances and instances[0].eager_mode else CompileTime
        out = []
        with metrics.timed(timer):
            for instance in instances:
                devices = [self.pjrt_device(d) for d in instance.devices]
                device_list = xc.DeviceList(tuple(devices))
                executable = _compile_and_load(self.client, instance.computation.program,
                                               device_list, self.compile_options(instance))
                out.append(PjRtComputation(instance.computation.name,
                                           instance.computation.program, instance.devices,
                                           executable, device_list))
        CreateCompileHandles.add_value(len(out))
        return out
    # --8<-- [end:compile]

    def serialize_computation(self, computation: Computation) -> bytes:
        return _serialize(self.client, computation.executable)

    def deserialize_computation(self, serialized: bytes, devices: Sequence[str] = ()
                                ) -> Computation:
        devices = list(devices) or [self.get_default_device()]
        device_list = xc.DeviceList(tuple(self.pjrt_device(d) for d in devices))
        executable = _deserialize(self.client, serialized, device_list)
        return PjRtComputation("deserialized", "", devices, executable, device_list)

    # ------------------------------------------------------------------ execute
    # --8<-- [start:execute_computation]
    def execute_computation(self, computation: Computation, arguments: Sequence[Data],
                            device: str,
                            options: ExecuteComputationOptions = DEFAULT_OPTIONS
                            ) -> list[Data]:
        # EXERCISE 9.6 (execute): check the buffers' device, run, wrap the outputs, stamp
        buffers = []
        for i, arg in enumerate(arguments):
            if arg.device != device:
                raise ValueError(f"argument {i} is on {arg.device}, the computation runs on "
                                 f"{device}")
            buffers.append(arg.buffer)
        start = metrics.now_ns()  # `with metrics.timed(...)` unrolled: every call comes here
        outputs = [PjRtData(device, buffer) for buffer in computation.execute(buffers)]
        (EagerOpExecuteTime if options.eager_mode else ExecuteTime).add_elapsed(start)
        CreateDataHandles.add_value(len(outputs))
        return outputs
        # END EXERCISE
    # --8<-- [end:execute_computation]

    def execute_replicated(self, computation: Computation,
                           arguments: Sequence[Sequence[Data]], devices: Sequence[str],
                           options: ExecuteReplicatedOptions = DEFAULT_OPTIONS
                           ) -> list[list[Data]]:
        for i, shards in enumerate(arguments):
            if [s.device for s in shards] != list(devices):
                raise ValueError(f"Expected one shard per device for argument {i}: "
                                 f"{[s.device for s in shards]} for {list(devices)}")
        device_list = xc.DeviceList(tuple(self.pjrt_device(d) for d in devices))
        sharding = xc.GSPMDSharding(device_list, xc.HloSharding.replicate())
        with metrics.timed(ExecuteReplicatedTime):
            # each argument as one jaxlib array over the devices, holding its shard on each;
            # the shards are in device order (checked above), so jaxlib need not check again
            args = [xc.ArrayImpl(_jax_aval(s[0].buffer), sharding, [d.buffer for d in s], True,
                                 _skip_checks=True) for s in arguments]
            results = computation.executable.execute_sharded(args)
            outputs = [[PjRtData(d, b) for d, b in zip(devices, bufs, strict=True)]
                       for bufs in results.disassemble_into_single_device_arrays()]
        return outputs  # C++ ExecuteReplicated does not count CreateDataHandles

    # ------------------------------------------------------------------ devices
    def get_default_device(self) -> str:
        return self._local[0]

    def get_local_devices(self) -> list[str]:
        return list(self._local)

    def get_all_devices(self) -> list[str]:
        return list(self._devices)

    def get_device_kind(self, device: str) -> str:
        return self.pjrt_device(device).device_kind

    def get_platform_version(self) -> str:
        return f"{self.client.platform_version}; jaxlib {JAXLIB_VERSION}"

    def device_id(self, device: str) -> int:
        return self.pjrt_device(device).id

    # ------------------------------------------------------------------ memory and sync
    def get_memory_info(self, device: str) -> MemoryInfo:
        stats = self.pjrt_device(device).memory_stats()
        if not stats:  # C++ calls GetAllocatorStats().value(), which fails the same way
            raise RuntimeError(f"{device} keeps no allocator statistics "
                               f"({self.client.platform} client)")
        return MemoryInfo(stats.get("bytes_in_use", 0), stats.get("bytes_limit", 0),
                          stats.get("peak_bytes_in_use", 0))

    def wait_device_ops(self, devices: Sequence[str] = ()) -> None:
        wanted = {self.pjrt_device(d).id for d in devices} or None
        for buffer in self.client.live_arrays():
            if wanted is None or {d.id for d in buffer.devices()} & wanted:
                with contextlib.suppress(RuntimeError):  # deleted meanwhile: nothing to wait
                    buffer.block_until_ready()

    # ------------------------------------------------------------------ metrics
    def get_metrics(self) -> dict[str, Any]:
        named = [TransferToDeviceTime, TransferFromDeviceTime, CompileTime, EagerOpCompileTime,
                 ExecuteTime, EagerOpExecuteTime, ExecuteReplicatedTime, InboundData,
                 OutboundData, CreateDataHandles, ReleaseDataHandles, CreateCompileHandles]
        return {m.name: m for m in named}
