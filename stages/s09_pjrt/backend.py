"""A PJRT backend for stage 7's jit: stage 8's StableHLO, compiled and run through the client.

JAX: jax/_src/xla_bridge.py (a backend per platform, made by a registered factory), pxla.py
(`ExecuteReplicated`: arguments to buffers, execute, outputs to arrays) and compiler.py (the
serialized executable in the persistent cache). Stage 7 asks a backend to `lower`, `compile`,
`serialize` and `deserialize`; this one lowers with stage 8, compiles through the
ComputationClient and returns device arrays before the device is done.
`runtime.use_pjrt()` makes it jit's default.
"""

from __future__ import annotations

import functools
import json
import struct
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from stages.s02_tracing import dtypes
from stages.s02_tracing.core import ClosedJaxpr
from stages.s07_caches.compiler import CompileOptions
from stages.s07_caches.stages import DeviceAssignmentMismatchError
from stages.s07_caches.xla_bridge import Device, register_backend_factory
from stages.s08_lowering.backend import StableHloProgram, lower_to_stablehlo

from . import runtime
from .array import ArrayImpl
from .computation_client import CompileInstance, Computation, ComputationClient

MAGIC = b"UAPIPJRT"  # our executable format: MAGIC | header length | JSON header | XLA's bytes
FORMAT_VERSION = 2  # 2: the header holds the module's text
_LOWERING_PLATFORMS = {"CPU": "cpu", "CUDA": "cuda", "ROCM": "rocm", "TPU": "tpu"}


# --8<-- [start:executable]
class PjRtExecutable:
    """A compiled jit: call it with every argument; it passes the kept ones to the device."""

    def __init__(self, program: StableHloProgram, computation: Computation,
                 client: ComputationClient, compile_on: Callable[[str], PjRtExecutable]):
        self.program, self.computation, self.client = program, computation, client
        self.in_avals, self.out_avals = program.in_avals, program.out_avals
        self.device, self.kept_var_idx = computation.devices[0], program.kept_var_idx
        self.float0_outs = any(a.dtype == dtypes.float0 for a in self.out_avals)
        self._compile_on, self._on_devices = compile_on, {}  # other devices' executables

    def call(self, *args: Any) -> list[ArrayImpl]:
        device, arguments, host, committed = self.device, [], [], False
        for i in self.kept_var_idx:
            x = args[i]
            if type(x) is ArrayImpl:  # already a buffer (raises if deleted or donated)
                if x.committed:
                    if x.device_name != device:  # the program runs where its arguments are
                        return self.on_device(self.committed_device(args)).call(*args)
                    committed = True
                arguments.append(x.data_on(device))
            else:  # a host value: transferred below, all in one TransferToDevice
                host.append(len(arguments))
                arguments.append(_host_value(x, self.in_avals[i]))
        if host:
            put = self.client.transfer_to_device([arguments[k] for k in host],
                                                 [device] * len(host))
            for k, data in zip(host, put, strict=True):
                arguments[k] = data
        client = self.client
        outs = client.execute_computation(self.computation, arguments, device)
        if self.float0_outs:  # a float0 result holds nothing: numpy zeros, as JAX's handler
            return [np.zeros(a.shape, a.dtype) if a.dtype == dtypes.float0 else
                    ArrayImpl(a, d, client, committed)
                    for a, d in zip(self.out_avals, outs, strict=True)]
        return [ArrayImpl(aval, data, client, committed)  # one per output, as the client's
                for aval, data in zip(self.out_avals, outs, strict=True)]
    # --8<-- [end:executable]

    def committed_device(self, args: Sequence[Any]) -> str:
        """The one device the committed arguments are on; for two, the error jit words."""
        committed = [(i, args[i]) for i in self.program.kept_var_idx
                     if type(args[i]) is ArrayImpl and args[i].committed]
        for i, x in committed[1:]:
            if x.device_name != committed[0][1].device_name:
                raise DeviceAssignmentMismatchError(
                    [(j, y.aval, [y.device.id], y.device.platform.upper())
                     for j, y in (committed[0], (i, x))], self.program.module_name)
        return committed[0][1].device_name

    def on_device(self, device: str) -> PjRtExecutable:
        """This program compiled for `device` (JAX compiles one per device assignment)."""
        if device == self.device:
            return self
        if device not in self._on_devices:
            self._on_devices[device] = self._compile_on(device)
        return self._on_devices[device]

    def as_text(self) -> str:
        """XLA's optimized HLO: what the compiler made of the StableHLO (JAX: same)."""
        return self.computation.hlo_text()

    def cost_analysis(self) -> dict[str, float]:
        return self.computation.cost_analysis()


def _host_value(x: Any, aval: Any) -> np.ndarray:
    """A host argument as the program takes it: a float0 tangent travels as bool zeros."""
    if aval.dtype == dtypes.float0:
        return np.zeros(np.shape(x), np.bool_)
    return np.asarray(x, dtype=aval.dtype)


class PjRtBackend:
    """Stage 7's backend interface (xla_bridge.Backend), over the process's client."""

    supports_executable_serialization = True

    def __init__(self, client: ComputationClient | None = None):
        self.client = client or runtime.get_computation_client()
        device_type = self.client.get_default_device().split(":")[0]
        self.platform = _LOWERING_PLATFORMS.get(device_type, device_type.lower())
        self.platform_version = f"PJRT {self.client.get_platform_version()}"

    def devices(self) -> list[Device]:
        return [runtime.device_object(self.client, d) for d in self.client.get_local_devices()]

    def lower(self, closed_jaxpr: ClosedJaxpr, *, module_name: str,
              donated_invars: Sequence[bool], keep_unused: bool,
              arg_names: Sequence[str]) -> StableHloProgram:
        return lower_to_stablehlo(closed_jaxpr, module_name=module_name,
                                  donated_invars=donated_invars, keep_unused=keep_unused,
                                  platform=self.platform)

    def compile(self, program: StableHloProgram, options: CompileOptions,
                device: str | None = None) -> PjRtExecutable:
        device = device or self.client.get_default_device()
        instance = CompileInstance(Computation(program.module_name, program.text, [device]),
                                   device, [device],
                                   env_option_overrides=options.env_option_overrides)
        (computation,) = self.client.compile([instance])
        return PjRtExecutable(program, computation, self.client,
                              functools.partial(self.compile, program, options))

    def serialize(self, executable: PjRtExecutable) -> bytes:
        # the module's text too: a program read back may be compiled again for another device
        header = json.dumps(dict(executable.program.header(), format=FORMAT_VERSION,
                                 text=executable.program.text)).encode()
        body = self.client.serialize_computation(executable.computation)
        return MAGIC + struct.pack(">I", len(header)) + header + body

    def deserialize(self, data: bytes, options: CompileOptions) -> PjRtExecutable:
        if not data.startswith(MAGIC):
            raise ValueError("not a PJRT executable of this course")
        (size,) = struct.unpack(">I", data[len(MAGIC):len(MAGIC) + 4])
        start = len(MAGIC) + 4
        header = json.loads(data[start:start + size])
        if header.get("format") != FORMAT_VERSION:
            raise ValueError(f"format {header.get('format')}, expected {FORMAT_VERSION}")
        program = StableHloProgram.from_header(header, header["text"])
        computation = self.client.deserialize_computation(data[start + size:])
        return PjRtExecutable(program, computation, self.client,
                              functools.partial(self.compile, program, options))


register_backend_factory("pjrt", PjRtBackend, priority=-1)  # only when asked for: use_pjrt()
