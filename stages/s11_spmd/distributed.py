"""More than one process: a coordination service, a client per process, and one device list.

JAX: jax/_src/distributed.py (`initialize`, `global_state`) and xla_bridge.py
(`make_cpu_client` with a distributed client and gloo collectives). Process 0 runs the
coordination service; every process (0 included) connects a client to it, which the PJRT CPU
client then uses to exchange device lists: each process's client sees the devices of every
process (`get_all_devices`) and drives its own (`get_local_devices`). A program compiled for
the global mesh runs in every process at once, each feeding its own devices; gloo (over TCP)
carries the collectives between processes. On GPUs the collectives are NCCL's and on TPUs the
chips' own links (ICI), set up by the same client exchange.

A process that stops sending heartbeats is declared dead by the service after
`heartbeat_timeout_seconds`; every other process is then told, and ends with an error rather
than waiting forever in a collective.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from jax._src.lib import xla_client as xc

from stages.s02_tracing import core
from stages.s09_pjrt import runtime
from stages.s09_pjrt.pjrt_computation_client import PjRtComputationClient

from .array import ArrayImpl, addressable, device_names
from .sharding_impls import Sharding


class State:
    """This process's part in the run (JAX: distributed.State)."""

    def __init__(self) -> None:
        self.service: Any = None
        self.client: Any = None
        self.process_id = 0
        self.num_processes = 1
        self.coordinator_address: str | None = None


global_state = State()


# --8<-- [start:initialize]
def initialize(coordinator_address: str, num_processes: int, process_id: int, *,
               local_device_count: int = 1, heartbeat_timeout_seconds: int = 100,
               initialization_timeout: int = 300) -> None:
    """Join a run of `num_processes` processes; afterwards the process's client spans every
    process's devices (JAX: jax.distributed.initialize, with gloo for CPU collectives)."""
    if not isinstance(process_id, int):
        raise TypeError("process_id must be a nonnegative int. "
                        f"Got process_id={process_id} of type {type(process_id)}.")
    if not (0 <= process_id < num_processes):
        raise ValueError("process_id and num_processes must be nonnegative, with process_id < "
                         f"num_processes. Got process_id={process_id}, "
                         f"num_processes={num_processes}.")
    if global_state.client is not None:
        raise RuntimeError("distributed.initialize should only be called once.")
    jax_rt = xc._xla  # jaxlib's distributed runtime
    if process_id == 0:  # the coordinator: one gRPC service every process reports to
        bind = "[::]:" + coordinator_address.rsplit(":", 1)[1]
        global_state.service = jax_rt.get_distributed_runtime_service(
            bind, num_processes, heartbeat_timeout=heartbeat_timeout_seconds)
    client = jax_rt.get_distributed_runtime_client(
        coordinator_address, process_id, init_timeout=initialization_timeout,
        heartbeat_timeout=heartbeat_timeout_seconds, use_compression=True)
    # no missed_heartbeat_callback: jaxlib's default ends the process with the service's
    # error, naming the task that stopped (JAX passes none either)
    client.connect()  # blocks until every process has connected (or init_timeout)
    global_state.client, global_state.process_id = client, process_id
    global_state.num_processes = num_processes
    global_state.coordinator_address = coordinator_address
    collectives = jax_rt.make_gloo_tcp_collectives(distributed_client=client)
    cpu = xc.make_cpu_client(asynchronous=True, distributed_client=client, node_id=process_id,
                             num_nodes=num_processes, collectives=collectives,
                             num_devices=local_device_count)
    runtime.set_computation_client(PjRtComputationClient(cpu, "CPU"))
# --8<-- [end:initialize]


def shutdown() -> None:
    """Leave the run: the client disconnects (waiting for the others), then the service."""
    if global_state.client is not None:
        global_state.client.shutdown()
        global_state.client = None
    if global_state.service is not None:
        global_state.service.shutdown()
        global_state.service = None


def process_index() -> int:
    return global_state.process_id


def process_count() -> int:
    return global_state.num_processes


def make_array_from_process_local_data(sharding: Sharding, local_data: Any,
                                       global_shape: tuple[int, ...]) -> ArrayImpl:
    """A global array from this process's rows: the blocks of its own devices, cut from the
    part of dimension 0 they cover (JAX: jax.make_array_from_process_local_data)."""
    client = runtime.get_computation_client()
    local = np.asarray(local_data)
    index_map = sharding.devices_indices_map(tuple(global_shape))
    devices = addressable(client, sharding._device_assignment)
    first = min(index_map[d][0].start or 0 for d in devices)
    names = device_names(client)
    blocks = []
    for d in devices:
        rows = index_map[d][0]
        shift = slice((rows.start or 0) - first, (rows.stop or global_shape[0]) - first)
        blocks.append(np.asarray(local[(shift, *index_map[d][1:])], order="C"))
    shards = client.transfer_to_device(blocks, [names[d] for d in devices])
    return ArrayImpl(core.ShapedArray(tuple(global_shape), local.dtype), sharding, shards,
                     client)
