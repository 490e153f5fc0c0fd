"""Stage 8 demo: a jaxpr becomes a StableHLO module, JAX's own text, which jaxlib runs."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np

import stages.s06_control_flow as cf
import stages.s08_lowering as s08
from shared.xla_runner import run_text
from stages.s02_tracing import make_jaxpr
from stages.s02_tracing import numpy as jnp


def main() -> None:
    def f(w, xs):
        return cf.scan(lambda h, x: (jnp.tanh(jnp.dot(w, h) + x), h.sum()), xs[0], xs)

    def f_jax(w, xs):
        return jax.lax.scan(lambda h, x: (jjnp.tanh(jjnp.dot(w, h) + x), h.sum()), xs[0], xs)

    w = np.eye(3, dtype=np.float32) * 0.5
    xs = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
    print("the jaxpr:")
    print(make_jaxpr(f)(w, xs))
    module = s08.lower(f, w, xs)
    print("\nits module (a rule per equation; the scan became a while over a counter):")
    print(module.as_text())
    print("identical to jax.jit(f).lower(w, xs).as_text():",
          module.as_text() == jax.jit(f_jax).lower(w, xs).as_text().replace("f_jax", "f"))
    carry, ys = run_text(module.as_text(), [w, xs])
    print("run by jaxlib:", carry, ys)
    print(f"{len(s08.lowering_rules)} primitives have a lowering rule")
