"""Two of optax's variations on optim.py's building blocks: masking and Nesterov's Adam.

optax: optax/transforms/_masking.py (masked, MaskedState, MaskedNode), transform.py
(scale_by_adam with nesterov=True, "NAdam"). optim.py's add_decayed_weights(mask=...) and
scale_by_adam(nesterov=True) come here; the rest of optim.py does not need to know. Built on
optim_base.py, as optim.py is, so that optim.py can import this module and nothing imports back.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from stages.s01_pytrees import tree_leaves, tree_map

from .optim_base import (
    GradientTransformation,
    bias_correction,
    safe_increment,
)

__all__ = ["MaskedNode", "MaskedState", "masked", "nesterov_mu_hat"]


class MaskedState(NamedTuple):
    """The state of a masked transformation: the inner one's, over the kept leaves only."""

    inner_state: Any


class MaskedNode(NamedTuple):
    """What a masked-out leaf (or subtree) becomes: a node with no children, so tree_map
    passes over it and the inner transformation never sees that part of the tree."""


def _mask_of(mask: Any, tree: Any) -> Any:
    # a mask is a function when every leaf of it is callable (one function is one such leaf)
    flags = tree_leaves(tree_map(callable, mask))
    return mask(tree) if flags and all(flags) else mask


def _hide(tree: Any, mask_tree: Any) -> Any:
    # the mask is a prefix of the tree: one bool may keep or drop a whole subtree
    return tree_map(lambda keep, x: x if keep else MaskedNode(), mask_tree, tree)


def masked(inner: GradientTransformation, mask: Any) -> GradientTransformation:
    """`inner` applied to the leaves where `mask` is True; the others pass through unchanged.
    `mask` is a tree of bools (a prefix of the params' tree) or a function that returns one:
    at init it is given the params, at update the updates, as in optax."""
    def init(params: Any) -> MaskedState:
        return MaskedState(inner_state=inner.init(_hide(params, _mask_of(mask, params))))

    def update(updates: Any, state: MaskedState, params: Any = None) -> tuple:
        mask_tree = _mask_of(mask, updates)
        shown = None if params is None else _hide(params, mask_tree)
        new, inner_state = inner.update(_hide(updates, mask_tree), state.inner_state, shown)
        merged = tree_map(lambda keep, n, old: n if keep else old, mask_tree, new, updates)
        return merged, MaskedState(inner_state=inner_state)

    return GradientTransformation(init, update)


def nesterov_mu_hat(mu: Any, updates: Any, b1: float, count: Any) -> Any:
    """NAdam's first moment (Dozat), optax's scale_by_adam(nesterov=True): taken one step
    ahead, b1 * mu (unbiased as at the next step) plus (1 - b1) * g (unbiased as at this one).
    `count` is this step's, already incremented; the state stays Adam's."""
    next_mu = bias_correction(mu, b1, safe_increment(count))
    return tree_map(lambda m, g: b1 * m + (1 - b1) * g, next_mu,
                    bias_correction(updates, b1, count))
