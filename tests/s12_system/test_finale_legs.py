"""The finale's two further legs against the jit run they repeat: the same initial params and
batches through stage 10's lazy tensors (torch ops, torch.optim.Adam) and through stage 11's
data-parallel jit on 4 CPU devices give the jit run's losses, step by step.

A tiny configuration keeps it fast; the demo runs the full one for 8 steps. Tolerances: the
lazy leg is another program (torch's ops, torch's Adam formula, XLA fusing it its own way), so
its losses move in the last float32 bits and Adam carries that on: rtol 1e-5 (observed at most
1.1e-6 relative, here and at the demo's size). The SPMD leg is our own step, partitioned: each
device sums its quarter of the batch and the partitioner adds the four partial sums, another
order of the same additions: rtol 1e-5 (observed at most 2e-7 relative)."""

from __future__ import annotations

import numpy as np
import pytest

from shared import char_transformer as ct
from shared import finale_legs
from shared.demos import s12_system as finale
from stages.s10_lazy_tensors import graph_executor

pytestmark = pytest.mark.slow

TINY = ct.Config(context=8, d_model=16, layers=1, heads=2, batch=8, steps=4)


@pytest.fixture(scope="module")
def legs():
    run = finale.train(TINY, quiet=True)
    graph_executor.clear_computation_cache()  # the lazy leg's compile counted here
    return finale_legs.run_legs(run, TINY, TINY.steps)


def test_the_jit_run_learns_in_these_steps(legs):
    jit = legs["jit"]
    assert len(jit) == TINY.steps
    assert 4.0 < jit[0] < 5.0  # the untrained model: about log(62) = 4.13 and a bit
    assert jit[-1] < jit[0] - 0.1


def test_the_lazy_leg_gives_the_jit_losses(legs):
    lazy = legs["lazy"]
    np.testing.assert_allclose(lazy["losses"], legs["jit"], rtol=1e-5)
    assert lazy["losses"] != legs["jit"]  # another program: not the same bits everywhere


def test_the_lazy_leg_compiles_one_graph_and_replays_it(legs):
    lazy = legs["lazy"]
    assert lazy["compiles"] == 1
    assert lazy["cached_compiles"] == TINY.steps - 1
    assert lazy["syncs"] == TINY.steps
    assert lazy["fallbacks"] == []  # every op, forward, backward and Adam, has a rule


def test_the_spmd_leg_gives_the_single_device_losses(legs):
    spmd = legs["spmd"]
    np.testing.assert_allclose(spmd["losses"], legs["jit"], rtol=1e-5)
    # the batch of 8 rows as four blocks of 2, one per device
    assert spmd["batch_blocks"] == [(0, 0, 2), (1, 2, 4), (2, 4, 6), (3, 6, 8)]


def test_the_report_sets_the_three_runs_side_by_side(legs):
    text = finale_legs.legs_report(legs, TINY)
    lines = text.splitlines()
    assert lines[0].split() == ["step", "our", "jit,", "1", "device", "lazy", "tensors", "(10)",
                                "SPMD,", "4", "CPUs", "(11)"]
    first = [float(v) for v in lines[1].split()[1:]]
    np.testing.assert_allclose(first, [legs["jit"][0], legs["lazy"]["losses"][0],
                                       legs["spmd"]["losses"][0]], atol=1e-6)
    assert "1 compile, 3 cached compiles, CPU fallbacks: none" in text
    assert "the batch split 2 rows per device over a ('data',) mesh of 4" in text


def test_the_loss_of_a_minus_infinite_wrong_logit_is_optaxs_not_nan():
    # a product with a one-hot gives (-inf) * 0 = NaN where the logit is not the target
    import optax

    from stages.s02_tracing import numpy as ojnp

    logits = np.random.default_rng(0).standard_normal((2, 5)).astype(np.float32)
    logits[0, 2] = -np.inf
    targets = np.array([1, 4])
    want = optax.softmax_cross_entropy_with_integer_labels(logits, targets).mean()
    np.testing.assert_allclose(np.asarray(ct.cross_entropy(ojnp, logits, targets, 5)), want,
                               rtol=1e-6)
