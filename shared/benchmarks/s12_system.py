"""Stage 12 row: the finale's full training step (the character-level transformer's forward,
backward and Adam update), ours against jax.jit, the same model on the same device.

Both sides start from the same params and run one batch repeatedly with their state kept on
the device; both compile with XLA, so the ratio is what stages 7 and 9 add per step (the
signature cache, the flattening of ~100 leaves, the Python call into PJRT).
"""

from __future__ import annotations

from shared import char_transformer as ct
from shared.benchmarks.harness import Row, best_times
from stages.s09_pjrt import use_pjrt


def rows(quick: bool = False) -> list[Row]:
    steps = 3 if quick else 10
    with use_pjrt(eager_ops=False):
        run_ours, run_jax = ct.both_steps(ct.Config())
        run_ours().block_until_ready()
        run_jax().block_until_ready()

        def ours() -> None:
            for _ in range(steps):
                loss = run_ours()
            loss.block_until_ready()

        def theirs() -> None:
            for _ in range(steps):
                loss = run_jax()
            loss.block_until_ready()

        ours_t, jax_t = (t / steps for t in best_times(ours, theirs, repeat=2 if quick else 15))
    return [Row(12, "finale: char transformer training step (110k params, batch 32x32)", ours_t,
                jax_t, "jax.jit + optax", note="goal <= 1.1x; same model, same device")]
