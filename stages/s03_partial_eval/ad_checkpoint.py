"""Remat policies: which known equations' outputs to save for the backward pass.

JAX: jax/_src/ad_checkpoint.py (`jax.checkpoint_policies`). A policy is
`saveable(primitive, *avals, **params) -> bool`, asked of each known equation by
`partial_eval_jaxpr_custom`: True saves the outputs as residuals, False recomputes them on the
staged side. Stage 4's `checkpoint` hands these to that splitter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stages.s02_tracing import lax
from stages.s02_tracing.core import Primitive, ShapedArray

from .partial_eval_custom import everything_saveable

__all__ = [
    "DotsSaveable",
    "checkpoint_dots",
    "checkpoint_dots_with_no_batch_dims",
    "dots_saveable",
    "dots_with_no_batch_dims_saveable",
    "everything_saveable",
    "nothing_saveable",
]


def nothing_saveable(*_: Any, **__: Any) -> bool:
    """Save nothing, recompute everything: `jax.checkpoint`'s default."""
    return False


# --8<-- [start:dots_saveable]
@dataclass(frozen=True)
class DotsSaveable:
    """Save the outputs of matrix multiplies (optionally only those without batch dimensions);
    recompute everything else, which is cheap elementwise work."""

    only_if_no_batch_dims: bool

    def __call__(self, prim: Primitive, *avals: ShapedArray, **params: Any) -> bool:
        # JAX also saves conv_general_dilated (and a cuDNN scaled matmul); stage 2 has no conv.
        # EXERCISE 3.2 (dots-saveable): True for dot_general (no batch dims, if asked), else False
        if prim is not lax.dot_general_p:
            return False
        if not self.only_if_no_batch_dims:
            return True
        (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
        return not lhs_batch and not rhs_batch
        # END EXERCISE
# --8<-- [end:dots_saveable]


checkpoint_dots = dots_saveable = DotsSaveable(False)
checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable = DotsSaveable(True)
