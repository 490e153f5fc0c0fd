"""nn: Flax-style modules whose params are plain nested dicts (module.py), the layers, and
beside them the activations (activation.py) and Conv (conv.py)."""

from .activation import gelu, log_softmax, one_hot, relu, softmax
from .conv import Conv
from .layers import (
    MLP,
    Dense,
    Dropout,
    Embed,
    LayerNorm,
    MultiHeadAttention,
    Sequential,
    lecun_normal,
    make_causal_mask,
    normal,
    ones,
    zeros,
)
from .module import Module, Scope, ScopeError, fold_in_path, param_count, tabulate

__all__ = ["MLP", "Conv", "Dense", "Dropout", "Embed", "LayerNorm", "Module",
           "MultiHeadAttention", "Scope", "ScopeError", "Sequential", "fold_in_path", "gelu",
           "lecun_normal", "log_softmax", "make_causal_mask", "normal", "one_hot", "ones",
           "param_count", "relu", "softmax", "tabulate", "zeros"]
