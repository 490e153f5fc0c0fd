"""The sharding a jit parameter has when the user gave none.

JAX: jax/_src/sharding_impls.py (`UnspecifiedValue`, `UNSPECIFIED`). jit's equation carries one
sharding per input and output (`in_shardings`, `out_shardings`); without a mesh every one is
`UNSPECIFIED`, the printer hides them, and the compile log prints them as JAX does
(`Argument mapping: (UnspecifiedValue,).`). The SPMD stage puts real shardings there.
"""

from __future__ import annotations


class UnspecifiedValue:
    """No sharding was asked for: the compiler chooses."""

    def __repr__(self) -> str:
        return "UnspecifiedValue"


UNSPECIFIED = UnspecifiedValue()
