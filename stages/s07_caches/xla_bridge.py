"""The backend interface jit compiles through, and the registry that picks a backend.

JAX: jax/_src/xla_bridge.py (the backend registry, `get_backend`) and the PJRT client interface
jaxlib implements (`compile`, `serialize_executable`, `deserialize_executable`,
`platform_version`). A backend turns a closed jaxpr into a *program* (`lower`), a program into an
*executable* (`compile`), and an executable into bytes and back (`serialize`, `deserialize`) for
the persistent cache. Stage 7 registers the interpreting backend (interpreter.py); later stages
register a StableHLO/PJRT one with a higher priority, and jit uses it without a change here.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from stages.s02_tracing import config
from stages.s02_tracing.core import ClosedJaxpr, ShapedArray

if TYPE_CHECKING:
    from .compiler import CompileOptions


@dataclasses.dataclass(frozen=True, order=True)
class Device:
    """One device. Not a tuple: `np.array(devices())` is an array of devices, as JAX's is."""

    id: int
    platform: str
    device_kind: str  # hashed into the persistent cache key

    def __repr__(self) -> str:  # as jaxlib prints its devices: CpuDevice(id=0), CudaDevice(id=0)
        return f"{self.platform.capitalize()}Device(id={self.id})"

    def __str__(self) -> str:  # print(x.device), f"{device}": jaxlib's `cpu:0`, `cuda:0`
        return f"{self.platform}:{self.id}"

    @property
    def process_index(self) -> int:
        """The process the device belongs to: always this one (JAX: Device.process_index)."""
        return 0


class Program(Protocol):
    """What `lower` returns (JAX: an MLIR module)."""

    module_name: str  # e.g. "jit_f": the prefix of the persistent cache key
    kept_var_idx: Sequence[int]  # the arguments it reads (keep_unused=False drops the rest)

    def as_text(self, dialect: str | None = None, debug_info: bool = False) -> str: ...

    def as_bytes(self, debug_info: bool) -> bytes:
        """Canonical bytes: the "computation" ingredient of the persistent cache key."""
        ...


class Executable(Protocol):
    """What `compile` returns (JAX: a LoadedExecutable)."""

    program: Program
    in_avals: Sequence[ShapedArray]  # every argument, even those the program does not read
    out_avals: Sequence[ShapedArray]

    def call(self, *args: Any) -> list[Any]: ...

    def as_text(self) -> str: ...

    def cost_analysis(self) -> dict[str, float] | None: ...


class Backend(Protocol):
    platform: str
    platform_version: str  # hashed into the persistent cache key
    supports_executable_serialization: bool

    def devices(self) -> list[Device]: ...

    def lower(self, closed_jaxpr: ClosedJaxpr, *, module_name: str,
              donated_invars: Sequence[bool], keep_unused: bool,
              arg_names: Sequence[str]) -> Program: ...

    def compile(self, program: Program, options: CompileOptions) -> Executable: ...

    def serialize(self, executable: Executable) -> bytes: ...

    def deserialize(self, data: bytes, options: CompileOptions) -> Executable: ...


# --8<-- [start:registry]
_factories: dict[str, tuple[int, Callable[[], Backend]]] = {}  # name -> (priority, factory)
_backends: dict[str, Backend] = {}
_lock = threading.Lock()


def register_backend_factory(name: str, factory: Callable[[], Backend], *,
                             priority: int = 0) -> None:
    """Make a backend available; without `jax_platforms`, the highest priority one is used."""
    with _lock:
        _factories[name] = (priority, factory)
        _backends.pop(name, None)


def get_backend(platform: str | None = None) -> Backend:
    """The backend named `platform`, else the first of `jax_platforms`, else the default."""
    if platform is None and config.platforms.value:
        platform = config.platforms.value.split(",")[0].strip()
    with _lock:
        if platform is None:
            platform = max(_factories, key=lambda name: _factories[name][0])
        if platform not in _factories:
            raise RuntimeError(f"Unknown backend {platform}; available: {sorted(_factories)}")
        if platform not in _backends:
            _backends[platform] = _factories[platform][1]()
        return _backends[platform]
# --8<-- [end:registry]
