"""The finale's model trained with ours and with real JAX: the same init (bit-equal PRNG along the
same module paths), the same data order, the same losses step by step.

A small configuration keeps it fast; the demo runs the full one. Both sides compile their step
with XLA on the same CPU client kind; XLA's fusion choices can move last bits, so losses are
compared with rtol 1e-5 (observed: equal or one float32 ulp apart)."""

from __future__ import annotations

import jax
import numpy as np

import stages.s12_system as ujax
from shared import char_transformer as ct
from shared.demos import s12_system as finale

SMALL = ct.Config(context=16, d_model=32, layers=1, heads=2, batch=8, steps=8)


def test_init_is_bit_equal_to_the_same_model_drawn_with_jax_random():
    _, chars = ct.load_text()
    model = ct.CharTransformer(len(chars), SMALL)
    ours = model.init(ujax.random.PRNGKey(SMALL.seed), np.zeros((1, SMALL.context), np.int32))
    theirs = ct.jax_init(len(chars), SMALL)
    assert jax.tree_util.tree_structure(ujax.device_get(ours)) == \
        jax.tree_util.tree_structure(theirs)
    for a, b in zip(jax.tree_util.tree_leaves(ujax.device_get(ours)),
                    jax.tree_util.tree_leaves(theirs), strict=True):
        np.testing.assert_array_equal(a, np.asarray(b))


def test_training_with_jax_gives_the_same_losses_step_by_step():
    run = finale.train(SMALL, quiet=True)
    data, chars = run["data"], run["chars"]
    step, tx = ct.jax_train_step(len(chars), SMALL)
    params = ct.jax_init(len(chars), SMALL)
    opt_state = tx.init(params)
    data_key = jax.random.fold_in(jax.random.PRNGKey(SMALL.seed), 1)
    losses = []
    for k in range(SMALL.steps):
        starts = ct.batch_starts(jax.random, data_key, k, len(data), SMALL)
        params, opt_state, loss = step(params, opt_state, *ct.get_batch(data, starts,
                                                                       SMALL.context))
        losses.append(float(loss))
    np.testing.assert_allclose(run["losses"], losses, rtol=1e-5)
    assert run["losses"][-1] < run["losses"][0]


def test_the_finale_reports_its_program_and_caches():
    run = finale.train(SMALL, quiet=True)
    stats = run["stats"]
    assert stats["equations"] > 300 and stats["stablehlo_lines"] > 300
    # traced, lowered and compiled ahead of time: training then misses only the signature
    # layer once (its first call) and hits it on every later step
    assert stats["cache"]["signature"] == (SMALL.steps - 1, 1)
    assert stats["cache"]["executable"] == (1, 0)


def test_the_loss_curve_is_written_as_png_and_svg(tmp_path):
    from shared.diagrams.curves import ascii_curve, loss_curve_svg, write_png
    values = [4.0, 3.0, 2.5, 2.2, 2.1]
    png = write_png(values, tmp_path / "curve.png", target=2.3).read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and b"IEND" in png
    assert loss_curve_svg(values, "loss", target=2.3).startswith("<svg")
    assert ascii_curve(values, width=10, height=4).count("*") == 10
