"""Stage 3's example programs, written once against a `lax` module parameter.

`mlp` is a small MLP layer; `mlp_jvp` is its jvp in x written by hand, equation for equation
as JAX's jvp emits it (tests/s03_partial_eval proves the printed jaxprs equal), so the program
remat splits can be built before stage 4 derives it. Tests, the demo, the docs page and stage
4's tests (jvp of `mlp` must give this jaxpr) share these.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_rng = np.random.default_rng(3)
W1 = _rng.standard_normal((4, 3)).astype(np.float32)
W2 = _rng.standard_normal((2, 4)).astype(np.float32)
X = _rng.standard_normal(3).astype(np.float32)
DX = np.float32([0.5, -1.0, 2.0])
MATVEC = (((1,), (0,)), ((), ()))  # dot_general dimension numbers of W @ x


def mlp(lax: Any, w1: Any, w2: Any, x: Any) -> Any:
    """f(W1, W2, x) = sum(tanh(W2 @ tanh(W1 @ x)))."""
    h = lax.tanh(lax.dot_general(w1, x, MATVEC))
    return lax.reduce_sum(lax.tanh(lax.dot_general(w2, h, MATVEC)), (0,))


def mlp_jvp(lax: Any, w1: Any, w2: Any, x: Any, dx: Any) -> tuple[Any, Any]:
    """(mlp(W1, W2, x), its derivative in x along dx), in the equation order of jax.jvp.

    tanh's tangent is written as JAX writes it: (dh + dh * a) * (1 - a) with a = tanh(h).
    Primal and tangent steps interleave, as a jvp trace records them.
    """
    h1, dh1 = lax.dot_general(w1, x, MATVEC), lax.dot_general(w1, dx, MATVEC)
    a1 = lax.tanh(h1)
    da1 = lax.mul(lax.add(dh1, lax.mul(dh1, a1)), lax.sub(1.0, a1))
    h2, dh2 = lax.dot_general(w2, a1, MATVEC), lax.dot_general(w2, da1, MATVEC)
    a2 = lax.tanh(h2)
    da2 = lax.mul(lax.add(dh2, lax.mul(dh2, a2)), lax.sub(1.0, a2))
    return lax.reduce_sum(a2, (0,)), lax.reduce_sum(da2, (0,))
