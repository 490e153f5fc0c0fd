"""Donation on many devices: stage 8 pairs a donated input with an output of its shape; here
the shapes are each device's shard's, since one device's buffer is what is handed over.

JAX: jax/_src/interpreters/mlir.py (`lower_jaxpr_to_module` pairs `sharded_aval`s in
`_set_up_aliases`). Two rules of JAX's are about the partitioner: an output whose sharding jit
leaves to it takes a donation as a buffer donor (XLA picks where it goes), never as a fixed
alias; and once any output's sharding is left to it, every donated buffer goes to XLA that way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from stages.s02_tracing import core
from stages.s08_lowering.module import set_up_aliases, warn_unused_donations


def _shard_aval(aval: core.ShapedArray, sharding: Any) -> core.ShapedArray:
    """One device's block of `aval` (JAX: mlir.sharded_aval); unplaced: the whole value."""
    if sharding is None:
        return aval
    return core.ShapedArray(sharding.shard_shape(aval.shape), aval.dtype, aval.weak_type)


def aliases_by_shard(in_shardings: Sequence[Any], out_shardings: Sequence[Any],
                     num_devices: int) -> Callable:
    """Stage 8's `set_up_aliases` for a program over `num_devices`: the pairing on shards."""
    def set_up(avals_in: Sequence[core.ShapedArray], avals_out: Sequence[core.ShapedArray],
               donated: Sequence[bool]) -> tuple[list[int | None], list[bool], list[bool]]:
        ins = [_shard_aval(a, s) for a, s in zip(avals_in, in_shardings, strict=True)]
        outs = [_shard_aval(a, s) for a, s in zip(avals_out, out_shardings, strict=True)]
        aliases, donors, unused = set_up_aliases(ins, outs, donated)
        if num_devices > 1:
            for i, j in enumerate(aliases):
                if j is not None and out_shardings[j] is None:  # the partitioner decides
                    aliases[i], donors[i] = None, True
            if any(s is None for s in out_shardings):
                donors = [d or u for d, u in zip(donors, unused, strict=True)]
                unused = [False] * len(unused)
        warn_unused_donations(ins, unused, "cpu")  # named by their shards, as JAX names them
        return aliases, donors, [False] * len(unused)
    return set_up
