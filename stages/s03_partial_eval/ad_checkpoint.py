"""Remat policies: which known equations' outputs to save for the backward pass.

JAX: jax/_src/ad_checkpoint.py (`jax.checkpoint_policies`). A policy is
`saveable(primitive, *avals, **params) -> bool`, asked of each known equation by
`partial_eval_jaxpr_custom`: True saves the outputs as residuals, False recomputes them on the
staged side. Stage 4's `checkpoint` hands these to that splitter.
"""

from __future__ import annotations

from collections.abc import Callable
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
    "save_from_both_policies",
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
        # EXERCISE 3.6 (dots-saveable): True for dot_general (no batch dims, if asked), else False
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


def save_from_both_policies(policy_1: Callable[..., bool], policy_2: Callable[..., bool]
                            ) -> Callable[..., bool]:
    """Save what either policy saves (a logical or of two boolean policies)."""
    def policy(prim: Primitive, *avals: Any, **params: Any) -> bool:
        out1, out2 = policy_1(prim, *avals, **params), policy_2(prim, *avals, **params)
        if not (isinstance(out1, bool) and isinstance(out2, bool)):
            raise ValueError(
                f"The return value of the policies should be a boolean. Got: {out1} and {out2}. "
                "Please write a custom policy function directly, rather than using this helper "
                "function.")
        return out1 or out2
    return policy
