"""The jvp rules of the primitives that read bits: clz and bitcast_convert_type.

JAX: beside clz_p and bitcast_convert_type_p in jax/_src/lax/lax.py. Neither output moves
smoothly with its input: clz counts bits of an integer, and a bitcast reinterprets them, so a
small change of a float can make any change of the integer it is read as. Both tangents are zero
(float0 for an integer output), and neither primitive is linear: no transpose rules.
"""

from __future__ import annotations

from stages.s02_tracing import lax

from .jvp_rules import defjvp_zero

# JAX registers no rule for clz: an integer's tangent is always a symbolic zero, so JVPTrace
# never asks for one. Ours has shift_left's rule, so the table walk finds every primitive.
defjvp_zero(lax.clz_p)
defjvp_zero(lax.bitcast_convert_type_p)  # JAX: ad.defjvp_zero(bitcast_convert_type_p)
