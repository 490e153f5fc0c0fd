"""The rules of split (concatenate's transpose) and empty2 (a split cond's unfilled residual).

JAX: beside split_p and empty2_p in jax/_src/lax/lax.py. split is linear: its jvp splits the
tangent, and its transpose joins the cotangents back with one concatenate. empty2 has no
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


deflinear(lax.split_p)
primitive_transposes[lax.split_p] = _split_transpose
defjvp_zero(lax.empty2_p)
