"""`jax.sharding` through the front door: stage 11's meshes, specs and shardings."""

from stages.s11_spmd import Mesh, NamedSharding, PartitionSpec, Sharding, SingleDeviceSharding

__all__ = ["Mesh", "NamedSharding", "PartitionSpec", "Sharding", "SingleDeviceSharding"]
