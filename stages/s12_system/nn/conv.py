"""Conv: Flax's convolution as shifted slices times kernel slices, beside layers.py.

Flax: flax/linen/linear.py (`Conv`, which calls `lax.conv_general_dilated`); the padding rules are
`lax.padtype_to_pads`. Stage 2 has no convolution primitive: XLA's conv computes the same sum.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from stages.s02_tracing import dtypes, lax
from stages.s02_tracing import numpy as jnp

from .layers import lecun_normal, zeros
from .module import Module


class Conv(Module):
    """N-d convolution over (*batch, *spatial, features) inputs, with strides; padding 'SAME',
    'SAME_LOWER', 'VALID', 'CAUSAL' (1-d), an int, or per dimension an int or a (low, high).

    No convolution primitive here: the sum over kernel offsets of strided slices times the
    kernel's slice at that offset (XLA's conv computes the same sum)."""

    def __init__(self, features: int, kernel_size: int | Sequence[int],
                 strides: int | Sequence[int] = 1, padding: Any = "SAME", use_bias: bool = True):
        self.features = features  # an int kernel_size is one spatial dimension, as Flax's
        self.kernel_size = (kernel_size,) if isinstance(kernel_size, int) else tuple(kernel_size)
        n = len(self.kernel_size)
        self.strides = (strides,) * n if isinstance(strides, int) else tuple(strides)
        self.padding, self.use_bias = padding, use_bias

    def pads(self, spatial: Sequence[int]) -> list[tuple[int, int]]:
        """(low, high) per spatial dimension, as Flax and lax.padtype_to_pads read `padding`;
        SAME pads so that ceil(size / stride) windows fit, the odd one at the end (SAME_LOWER:
        at the start): k - 1 in all at stride 1."""
        k, p = self.kernel_size, self.padding
        if isinstance(p, str):
            if p.upper() == "CAUSAL":
                if len(k) != 1:  # Flax's error
                    raise ValueError("Causal padding is only implemented for 1D convolutions.")
                return [(k[0] - 1, 0)]
            if p.upper() in ("CIRCULAR", "REFLECT"):  # Flax pads these itself, with jnp.pad
                raise NotImplementedError(f"Conv(padding={p!r}) is not built here")
            rules = {"SAME": lambda t: (t // 2, t - t // 2), "VALID": lambda t: (0, 0),
                     "SAME_LOWER": lambda t: (t - t // 2, t // 2)}
            if p.upper() not in rules:  # an unknown name must not fall through to VALID
                raise RuntimeError("Unrecognized padding type: expected 'VALID', 'SAME', or "
                                   f"'SAME_LOWER', got {p}.")
            return [rules[p.upper()](max((-(-size // s) - 1) * s + d - size, 0))
                    for d, size, s in zip(k, spatial, self.strides, strict=True)]
        p = [p] * len(k) if isinstance(p, int) else list(p)
        return [(q, q) if isinstance(q, int) else tuple(q) for q in p]

    def __call__(self, x: Any) -> Any:
        k, s, n = self.kernel_size, self.strides, len(self.kernel_size)
        batch = np.shape(x)[:np.ndim(x) - n - 1]  # none, one or several axes: one, as Flax's
        x = jnp.reshape(x, (int(np.prod(batch)), *np.shape(x)[len(batch):]))
        in_features = np.shape(x)[-1]
        kernel = self.param("kernel", lecun_normal(tuple(range(n + 1))),
                            (*k, in_features, self.features))
        dtype = dtypes.result_type(x, kernel)  # the input and the params promoted, as Flax's
        config = [(0, 0, 0)] + [(lo, hi, 0) for lo, hi in self.pads(np.shape(x)[1:-1])]
        x = lax.pad(jnp.asarray(x, dtype), np.array(0, dtype), config + [(0, 0, 0)])
        out_spatial = [max((np.shape(x)[1 + i] - k[i]) // s[i] + 1, 0) for i in range(n)]
        y = None
        for offset in np.ndindex(*k) if all(out_spatial) else ():
            start = (0, *offset, 0)
            limit = (np.shape(x)[0], *(o + (m - 1) * st + 1 for o, m, st
                                       in zip(offset, out_spatial, s, strict=True)), in_features)
            term = jnp.matmul(lax.slice(x, start, limit, (1, *s, 1)), kernel[offset])
            y = term if y is None else y + term
        if y is None:  # no window fits: an empty output, as lax's conv gives
            y = jnp.zeros((np.shape(x)[0], *out_spatial, self.features), dtype)
        if self.use_bias:
            y = y + self.param("bias", zeros, (self.features,))
        return jnp.reshape(y, (*batch, *np.shape(y)[1:]))
