"""Stage 7 demo: a print that fires once, which cache answers each call, a miss explained."""

from __future__ import annotations

import logging

import numpy as np

import stages.s07_caches as s07
from stages.s02_tracing import config
from stages.s02_tracing import numpy as jnp
from stages.s04_autodiff import grad
from stages.s07_caches import util


def _deltas(before: dict) -> str:
    out = []
    for name in util.LAYERS:
        c = util.registry[name]
        d = (c.hits - before[name][0], c.misses - before[name][1])
        if d != (0, 0):
            out.append(f"{name} {d}")
    return ", ".join(out)


def main() -> None:
    def f(x, y):
        print("    (tracing f)")
        return jnp.sin(x) * y

    g = s07.jit(f)
    x = np.linspace(-1, 1, 3).astype(np.float32)
    print("which layer answers, as (hits, misses):")
    for what, call in [("first call", lambda: g(x, 2.0)), ("new values", lambda: g(x + 1, 3.0)),
                       ("new shape", lambda: g(np.ones(5, np.float32), 2.0)),
                       ("grad of the jit", lambda: grad(lambda x: g(x, 2.0).sum())(x)),
                       ("grad again", lambda: grad(lambda x: g(x, 2.0).sum())(x))]:
        before = {n: (c.hits, c.misses) for n, c in util.registry.items()}
        print(f"  {what}:")
        call()
        print(f"    {_deltas(before)}")

    print("\na miss explained (jax_explain_cache_misses), in JAX's words:")
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("  %(message)s"))
    logger = logging.getLogger("stages.s07_caches.explain")
    logger.addHandler(handler)
    try:
        with config.explain_cache_misses(True):
            g(np.ones(3, np.int32), 2.0)
    finally:
        logger.removeHandler(handler)

    print("\ntrace -> lower -> compile, each a station you can hold:")
    lowered = g.lower(x, 2.0)
    print(lowered.as_text())
    print("  compiled:", lowered.compile()(x, 2.0))


if __name__ == "__main__":
    main()
