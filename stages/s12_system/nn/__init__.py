"""nn: Flax-style modules whose params are plain nested dicts (module.py), and the layers."""

from .layers import (
    MLP,
    Conv,
    Dense,
    Dropout,
    Embed,
    LayerNorm,
    MultiHeadAttention,
    Sequential,
    gelu,
    lecun_normal,
    log_softmax,
    make_causal_mask,
    normal,
    one_hot,
    ones,
    relu,
    softmax,
    zeros,
)
from .module import Module, Scope, ScopeError, fold_in_path, param_count, tabulate

__all__ = ["MLP", "Conv", "Dense", "Dropout", "Embed", "LayerNorm", "Module",
           "MultiHeadAttention", "Scope", "ScopeError", "Sequential", "fold_in_path", "gelu",
           "lecun_normal", "log_softmax", "make_causal_mask", "normal", "one_hot", "ones",
           "param_count", "relu", "softmax", "tabulate", "zeros"]
