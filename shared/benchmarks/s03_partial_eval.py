"""Stage 3 rows: splitting a long jaxpr, ours vs JAX's own partial evaluator on the same jaxpr.

The function alternates a known step and an unknown step that reads it (`x = sin(x)`,
`y = y * x`), the shape of a linearization: half the equations run on the known side, half are
staged, and every known step's value crosses as a residual. JAX memoizes its passes on the
jaxpr object (weakref_lru_cache), so each JAX call gets a fresh (Closed)Jaxpr wrapper: we time
the split, not a cache hit.
"""

from __future__ import annotations

import jax
import numpy as np
from jax._src import ad_checkpoint as jax_ad_checkpoint
from jax._src import core as jax_core
from jax._src.interpreters import partial_eval as jpe

import stages.s02_tracing as s02
from shared.benchmarks.harness import Row, best_time
from stages.s03_partial_eval import ad_checkpoint
from stages.s03_partial_eval import partial_eval as pe

X = np.linspace(-1.0, 1.0, 8, dtype=np.float32)


def _long_function(lax, num_eqns: int):
    """`num_eqns` equations: a known sin chain and an unknown mul chain reading it."""

    def f(x, y):
        for _ in range(num_eqns // 2):
            x = lax.sin(x)
            y = lax.mul(y, x)
        return x, y

    return f


def rows(quick: bool = False) -> list[Row]:
    n = 1_000 if quick else 10_000
    repeat = 3 if n >= 10_000 else 5
    ours = s02.make_jaxpr(_long_function(s02.lax, n))(X, X)
    theirs = jax.make_jaxpr(_long_function(jax.lax, n))(X, X)
    mask = [False, True]

    def jax_split():
        fresh = jax_core.ClosedJaxpr(theirs.jaxpr, theirs.consts)  # a cache miss
        return jpe.partial_eval_jaxpr_nounits(fresh, mask, False)

    mine, real = pe.partial_eval_jaxpr_nounits(ours, mask, False), jax_split()
    assert len(mine[3]) == len(real[3]) == n // 2  # one residual per known step
    if n <= 1_000:  # printing is the slow part; the tests compare structure at every size
        assert str(mine[0]) == str(real[0]) and str(mine[1]) == str(real[1])
    out = [Row(stage=3, what=f"partial_eval_jaxpr_nounits, {n:,} eqns, {n // 2:,} residuals",
               ours_s=best_time(lambda: pe.partial_eval_jaxpr_nounits(ours, mask, False),
                                repeat=repeat),
               ref_s=best_time(jax_split, repeat=repeat),
               ref_name="jax pe.partial_eval_jaxpr_nounits")]

    # the policy-driven splitter on the same jaxpr, saving only dots (there are none: every
    # known sin is recomputed on the staged side, which has x, so nothing crosses)
    def jax_custom():
        return jpe.partial_eval_jaxpr_custom(theirs.jaxpr.replace(), mask, True, False, False,
                                             jax_ad_checkpoint.dots_saveable)

    def our_custom():
        return pe.partial_eval_jaxpr_custom(ours.jaxpr, mask, True, False, False,
                                            ad_checkpoint.dots_saveable)

    assert our_custom()[4] == jax_custom()[4]
    out.append(Row(stage=3, what=f"partial_eval_jaxpr_custom (dots_saveable), {n:,} eqns",
                   ours_s=best_time(our_custom, repeat=repeat),
                   ref_s=best_time(jax_custom, repeat=repeat),
                   ref_name="jax pe.partial_eval_jaxpr_custom"))

    def jax_dce():
        return jpe.dce_jaxpr(theirs.jaxpr.replace(), [False, True])

    assert pe.dce_jaxpr(ours.jaxpr, [False, True])[1] == list(jax_dce()[1])
    out.append(Row(stage=3, what=f"dce_jaxpr, {n:,} eqns, one output of two used",
                   ours_s=best_time(lambda: pe.dce_jaxpr(ours.jaxpr, [False, True]),
                                    repeat=repeat),
                   ref_s=best_time(jax_dce, repeat=repeat), ref_name="jax pe.dce_jaxpr"))
    return out


if __name__ == "__main__":
    from shared.benchmarks.__main__ import format_table

    print(format_table(rows()))
