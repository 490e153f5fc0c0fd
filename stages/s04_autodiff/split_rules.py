"""The rules of split (concatenate's transpose), tile, and empty2 (a split cond's unfilled
residual).

JAX: beside split_p, tile_p and empty2_p in jax/_src/lax/lax.py. split is linear: its jvp splits
the tangent, and its transpose joins the cotangents back with one concatenate. tile is linear
too: its transpose adds the copies back up, one reshape then one reduce_sum. empty2 has no
operands, so JVPTrace never sees it (JAX registers no rule); ours has a zero rule so the table
walk finds every primitive.
"""

from __future__ import annotations

from stages.s02_tracing import lax

from .ad import instantiate_zeros, primitive_transposes
from .jvp_rules import defjvp_zero, deflinear


def _split_transpose(cts, operand, *, sizes, axis):
    # (the backward pass skips a split none of whose pieces received a cotangent)
    return [lax.concatenate([instantiate_zeros(ct) for ct in cts], axis)]


def _tile_transpose(ct, operand, *, reps):
    # ct's axis i of reps[i] * d[i] as two, (reps[i], d[i]); the copies are summed away
    pairs = tuple(n for pair in zip(reps, operand.aval.shape, strict=True) for n in pair)
    copies = tuple(range(0, len(pairs), 2))
    return [lax.reduce_sum(lax.reshape(ct, pairs), copies)]


deflinear(lax.split_p)
primitive_transposes[lax.split_p] = _split_transpose
deflinear(lax.tile_p)
primitive_transposes[lax.tile_p] = _tile_transpose
defjvp_zero(lax.empty2_p)
