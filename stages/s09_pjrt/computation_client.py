"""The seam: every call a framework makes to a device goes through one abstract class.

torch_xla: torch_xla/csrc/runtime/computation_client.h. Above the seam sit lazy tensors (stage
10) and our jit's backend (backend.py); below it, one implementation over jaxlib's PJRT client
(pjrt_computation_client.py). The methods are grouped as the header groups them: handles to
device data, transfers, compiling, executing, device queries, memory and metrics. Devices are
named by strings, `"CPU:0"`, `"CUDA:0"`, `"TPU:3"`: the platform in capitals and an ordinal.
The C++ class has 43 pure-virtual methods; ours keeps the ones a training step needs, each
docstring naming its C++ counterpart.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from stages.s02_tracing.core import ShapedArray


class MemoryInfo(NamedTuple):
    """C++: ComputationClient::MemoryInfo."""

    bytes_used: int
    bytes_limit: int
    peak_bytes_used: int


@dataclasses.dataclass(frozen=True)
class ExecuteComputationOptions:
    """C++: ClientExecuteOptions, two booleans wide: donation never rides here (it is in the
    program, as `tf.aliasing_output`)."""

    explode_tuple: bool = True
    eager_mode: bool = False  # stamps EagerOpExecuteTime instead of ExecuteTime


ExecuteReplicatedOptions = ExecuteComputationOptions
DEFAULT_OPTIONS = ExecuteComputationOptions()


class Data(abc.ABC):
    """A handle to one array on one device (C++: ComputationClient::Data).

    The C++ class holds the device string, the shape and `should_donate_buffer_`; its pure
    virtuals are ToString, HasSharding and GetSharding. Ours adds what a device array asks of
    its buffer: is it there, is it ready, wait for it, free it, lend it out through DLPack.
    """

    def __init__(self, device: str):
        self.device = device
        self.should_donate_buffer = False

    @property
    @abc.abstractmethod
    def aval(self) -> ShapedArray:
        """The shape and dtype of the buffer (C++: Data::shape())."""

    @abc.abstractmethod
    def to_string(self) -> str:
        """C++: Data::ToString."""

    @abc.abstractmethod
    def has_value(self) -> bool:
        """False once the buffer was deleted or donated (C++: PjRtData::HasValue)."""

    @abc.abstractmethod
    def is_ready(self) -> bool:
        """Whether the computation producing the buffer has finished."""

    @abc.abstractmethod
    def block_until_ready(self) -> None:
        """Wait for the buffer (C++: the future that OnReadyCallback waits on)."""

    @abc.abstractmethod
    def delete(self) -> None:
        """Free the device memory now (C++: PjRtData's buffer reset)."""

    @abc.abstractmethod
    def dlpack(self, **kwargs: Any) -> Any:
        """A DLPack capsule aliasing the buffer (torch_xla: `_to_dlpack` in
        init_python_bindings.cpp, which calls dl_convertor.cpp's `toDLPack`)."""

    @abc.abstractmethod
    def dlpack_device(self) -> tuple[Any, int]:
        """(DLPack device type, device id)."""


class Computation:
    """A program and the devices it is for (C++: ComputationClient::Computation).

    The header warns that four classes are called Computation: torch::lazy::Computation (the
    lazy tensor core's), this one, xla::XlaComputation (the HLO itself, here the StableHLO text),
    and PjRtComputation, this class plus the loaded executable (pjrt_computation_client.py).
    """

    def __init__(self, name: str, program: str, devices: Sequence[str] = ()):
        self.name, self.program, self.devices = name, program, list(devices)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, devices={self.devices})"


@dataclasses.dataclass
class CompileInstance:
    """What to compile, and for where (C++: ComputationClient::CompileInstance)."""

    computation: Computation
    compilation_device: str
    devices: list[str]
    is_sharded: bool = False  # SPMD: one program partitioned over `devices` (stage 11)
    eager_mode: bool = False  # stamps EagerOpCompileTime instead of CompileTime
    use_shardy_partitioner: bool = False  # SPMD: the annotations are Shardy's, not GSPMD's
    # SPMD: the partitioner picks the results' shardings (torch_xla's default; unset, they are
    # replicated unless the module says otherwise)
    allow_spmd_sharding_propagation_to_output: bool = False
    # the parameters arrive as one tuple (XLA wraps them; torch_xla does so above 3200 of them)
    parameter_is_tupled_arguments: bool = False
    # jit(..., compiler_options=...): (flag, value) pairs the compiler overrides
    env_option_overrides: tuple[tuple[str, Any], ...] = ()


class ComputationClient(abc.ABC):
    """What a framework may ask of a device runtime; one implementation per runtime."""

    # ------------------------------------------------------------------ transfer
    @abc.abstractmethod
    def transfer_to_device(self, tensors: Sequence[np.ndarray], devices: Sequence[str]
                           ) -> list[Data]:
        """Host arrays to device buffers, one per tensor (C++: TransferToDevice)."""

    @abc.abstractmethod
    def transfer_from_device(self, handles: Sequence[Data]) -> list[np.ndarray]:
        """Device buffers to host arrays. The one call of a step that truly blocks (as does
        wait_device_ops, when asked): it waits for the computations producing the buffers
        (C++: TransferFromDevice, whose comment warns of a deadlock if it is called with the
        Python GIL held)."""

    @abc.abstractmethod
    def copy_to_device(self, data: Data, dst: str) -> Data:
        """A copy of `data` on device `dst` (C++: CopyToDevice)."""

    # ------------------------------------------------------------------ compile
    @abc.abstractmethod
    def compile(self, instances: Sequence[CompileInstance]) -> list[Computation]:
        """Programs to loaded executables (C++: Compile)."""

    @abc.abstractmethod
    def serialize_computation(self, computation: Computation) -> bytes:
        """A compiled executable as bytes (C++: SerializeComputation)."""

    @abc.abstractmethod
    def deserialize_computation(self, serialized: bytes, devices: Sequence[str] = ()
                                ) -> Computation:
        """Bytes from `serialize_computation` back to an executable (C++:
        DeserializeComputation), for the default device unless `devices` are given."""

    # ------------------------------------------------------------------ execute
    @abc.abstractmethod
    def execute_computation(self, computation: Computation, arguments: Sequence[Data],
                            device: str,
                            options: ExecuteComputationOptions = DEFAULT_OPTIONS
                            ) -> list[Data]:
        """Run on one device; returns before the device is done (C++: ExecuteComputation)."""

    @abc.abstractmethod
    def execute_replicated(self, computation: Computation,
                           arguments: Sequence[Sequence[Data]], devices: Sequence[str],
                           options: ExecuteReplicatedOptions = DEFAULT_OPTIONS
                           ) -> list[list[Data]]:
        """Run one program on every device of `devices`. `arguments[i][d]` is argument i's
        shard on device d; the result is `[output][device]` (C++: ExecuteReplicated)."""

    # ------------------------------------------------------------------ devices
    @abc.abstractmethod
    def get_default_device(self) -> str:
        """C++: GetDefaultDevice, the first local device."""

    @abc.abstractmethod
    def get_local_devices(self) -> list[str]:
        """The devices this process drives (C++: GetLocalDevices)."""

    @abc.abstractmethod
    def get_all_devices(self) -> list[str]:
        """The devices of every process (C++: GetAllDevices)."""

    @abc.abstractmethod
    def get_device_kind(self, device: str) -> str:
        """e.g. "cpu", "NVIDIA H200", "TPU v5 lite" (C++: GetDeviceKind)."""

    @abc.abstractmethod
    def get_platform_version(self) -> str:
        """C++: GetPlatformVersion."""

    @abc.abstractmethod
    def device_id(self, device: str) -> int:
        """The runtime's id of a device (C++: PjRtDevice::id, of StringToPjRtDevice(device))."""

    # ------------------------------------------------------------------ memory and sync
    @abc.abstractmethod
    def get_memory_info(self, device: str) -> MemoryInfo:
        """C++: GetMemoryInfo."""

    @abc.abstractmethod
    def wait_device_ops(self, devices: Sequence[str] = ()) -> None:
        """Wait until every operation on `devices` (all, if empty) is done (C++:
        WaitDeviceOps)."""

    # ------------------------------------------------------------------ metrics
    @abc.abstractmethod
    def get_metrics(self) -> dict[str, Any]:
        """The client's timers and counters by name (C++: GetMetrics)."""

    # ------------------------------------------------------------------ helpers (not virtual)
    def get_compilation_devices(self, device: str, devices: Sequence[str]) -> list[str]:
        """`devices`, or the one `device` when none are given (C++: GetCompilationDevices)."""
        return list(devices) if devices else [device]

    @staticmethod
    def get_device_ordinal(device: str) -> int:
        """The number after the last ':' of a device string (C++: GetDeviceOrdinal)."""
        return int(device.rsplit(":", 1)[1])
