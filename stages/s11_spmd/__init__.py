"""Stage 11: SPMD. One program for many devices, told how each array is laid out.

JAX: jax/_src/mesh.py, partition_spec.py, named_sharding.py, sharding_impls.py, pjit.py,
interpreters/pxla.py, shard_map.py, distributed.py. torch_xla:
torch_xla/distributed/spmd/xla_sharding.py, torch_xla/runtime.py.

Reading path (the lesson, in order):
  1. mesh.py              devices in an array with named axes
  2. partition_spec.py    per array dimension, the mesh axes that split it
  3. sharding_impls.py    NamedSharding: block shapes, each device's slice, the tile assignment
  4. hlo_sharding.py      the compiler's form: tile dims, an iota permutation, replicas
  5. mlir.py              the annotations: Shardy (sdy.mesh, #sdy.sharding) or GSPMD strings
  6. pjit.py              jit with shardings: lower, annotate, compile for N partitions, run
  7. array.py             a global array as one buffer per device; device_put with a sharding

Beside it:
  shard_map.py        shard_map: specs checked, the body traced on blocks, the vma check
  shard_map_rules.py  its rules: jvp, transpose, batching, one manual region when lowered
  shard_map_checks.py its checks, with JAX's messages
  pjit_checks.py      jit's checks of its shardings and arguments (statics, keywords, trees)
  single_device.py    jit on one device: its SingleDeviceShardings, arrays committed to one
  jit_equation.py     a jit equation run eagerly (grad or vmap of our jit) on its jaxpr's mesh
  donation.py         donated buffers paired with outputs by each device's block
  collectives.py      stage 5's psum, all_gather, ppermute, axis_index... lowered over a mesh
  sharding_in_types.py    Explicit mesh axes: shardings in types, set_mesh, the lowering's pins
  sharding_rules.py       each primitive's sharding rule, JAX's messages where none applies
  sharding_constraint.py  with_sharding_constraint and reshard, primitives with their rules
  visualize.py            which device holds which block, drawn in the terminal
  iota_search.py          a compiled tile assignment read back as the iota XLA prints
  distributed.py          more than one process: coordination service, clients, gloo

The torch side (stage 10's lazy tensors on one virtual device):
  xla_sharding.py         torch_xla's Mesh of device ids, mark_sharding, the sharding spec
  xla_sharding_util.py    OpSharding and its hash, sharded data, "SPMD:0" compiling and running
  runtime.py              use_spmd(): every lazy tensor on the virtual device from then on
"""

from . import (
    array,
    collectives,
    distributed,
    donation,
    hlo_sharding,
    iota_search,
    jit_equation,
    mesh,
    mlir,
    partition_spec,
    pjit,
    pjit_checks,
    runtime,
    shard_map_checks,
    shard_map_rules,
    sharding_constraint,
    sharding_impls,
    sharding_in_types,
    sharding_rules,
    visualize,
    xla_sharding,
    xla_sharding_util,
)
from .array import ArrayImpl, Shard, device_put
from .distributed import make_array_from_process_local_data
from .hlo_sharding import HloSharding
from .mesh import AxisType, Mesh, cpu_client, devices, make_mesh
from .partition_spec import P, PartitionSpec
from .pjit import jit
from .shard_map import shard_map, shard_map_p  # the function; the module is shard_map.py
from .sharding_constraint import (
    reshard,
    reshard_p,
    sharding_constraint_p,
    with_sharding_constraint,
)
from .sharding_impls import NamedSharding, Sharding, SingleDeviceSharding
from .sharding_in_types import get_mesh, set_mesh
from .sharding_rules import ShardingTypeError
from .visualize import visualize_array_sharding, visualize_sharding

__all__ = [
    "ArrayImpl",
    "AxisType",
    "HloSharding",
    "Mesh",
    "NamedSharding",
    "P",
    "PartitionSpec",
    "Shard",
    "Sharding",
    "ShardingTypeError",
    "SingleDeviceSharding",
    "array",
    "device_put",
    "collectives",
    "donation",
    "cpu_client",
    "devices",
    "distributed",
    "get_mesh",
    "hlo_sharding",
    "iota_search",
    "jit",
    "jit_equation",
    "make_array_from_process_local_data",
    "make_mesh",
    "mesh",
    "mlir",
    "partition_spec",
    "pjit",
    "pjit_checks",
    "reshard",
    "reshard_p",
    "runtime",
    "shard_map",
    "shard_map_checks",
    "shard_map_p",
    "shard_map_rules",
    "sharding_constraint",
    "sharding_constraint_p",
    "sharding_impls",
    "sharding_in_types",
    "sharding_rules",
    "set_mesh",
    "visualize",
    "visualize_array_sharding",
    "visualize_sharding",
    "with_sharding_constraint",
    "xla_sharding",
    "xla_sharding_util",
]
