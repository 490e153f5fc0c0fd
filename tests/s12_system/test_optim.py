"""optim against optax 0.2.8: the same gradients give the same updates and states, step by step.

Both sides run jitted through XLA on the CPU. float32, rtol 1e-6: the formulas are optax's,
written in the same order, so only XLA's fusion choices could move a last bit.
"""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import optax
import pytest

import stages.s01_pytrees as s01
from stages.s07_caches import jit
from stages.s12_system import optim, schedules

RTOL, ATOL = 1e-6, 1e-7


def _params():
    rng = np.random.default_rng(0)
    return {"w": rng.standard_normal((3, 4)).astype(np.float32),
            "layers": [{"b": rng.standard_normal(4).astype(np.float32)},
                       {"b": np.float32(0.5) * np.ones(2, np.float32)}]}


def _grads(k):
    rng = np.random.default_rng(100 + k)
    return s01.tree_map(lambda p: (3.0 * rng.standard_normal(np.shape(p))).astype(np.float32),
                        _params())


def _close(ours, theirs):
    a, b = s01.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=RTOL, atol=ATOL)


def _run_both(ours_tx, theirs_tx, steps=5):
    params, q = _params(), _params()
    state, tstate = ours_tx.init(params), theirs_tx.init(q)
    _close(state, tstate)

    def ours_step(p, s, g):
        u, s = ours_tx.update(g, s, p)
        return optim.apply_updates(p, u), s, u

    def theirs_step(p, s, g):
        u, s = theirs_tx.update(g, s, p)
        return optax.apply_updates(p, u), s, u

    ours_step, theirs_step = jit(ours_step), jax.jit(theirs_step)
    for k in range(steps):
        params, state, u = ours_step(params, state, _grads(k))
        q, tstate, v = theirs_step(q, tstate, _grads(k))
        _close(u, v)
        _close(state, tstate)
        _close(params, q)


CASES = {
    "sgd": (lambda: optim.sgd(0.1), lambda: optax.sgd(0.1)),
    "momentum": (lambda: optim.momentum(0.1, 0.9), lambda: optax.sgd(0.1, momentum=0.9)),
    "nesterov": (lambda: optim.sgd(0.1, 0.8, nesterov=True),
                 lambda: optax.sgd(0.1, 0.8, nesterov=True)),
    "adam": (lambda: optim.adam(1e-2), lambda: optax.adam(1e-2)),
    "adam_eps_root": (lambda: optim.adam(3e-3, b1=0.8, b2=0.99, eps=1e-6, eps_root=1e-8),
                      lambda: optax.adam(3e-3, b1=0.8, b2=0.99, eps=1e-6, eps_root=1e-8)),
    # eps_root large enough to tell sqrt(v + eps_root) from sqrt(v) + eps_root
    "adam_eps_root_1e-3": (lambda: optim.adam(3e-3, eps_root=1e-3),
                           lambda: optax.adam(3e-3, eps_root=1e-3)),
    "adamw": (lambda: optim.adamw(1e-2, weight_decay=0.1),
              lambda: optax.adamw(1e-2, weight_decay=0.1)),
    "clip_then_adam": (lambda: optim.chain(optim.clip_by_global_norm(1.0), optim.adam(1e-2)),
                       lambda: optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-2))),
    "clip_not_triggered": (lambda: optim.chain(optim.clip_by_global_norm(1e3), optim.sgd(0.1)),
                           lambda: optax.chain(optax.clip_by_global_norm(1e3), optax.sgd(0.1))),
    "adam_on_a_schedule": (
        lambda: optim.adam(schedules.warmup_cosine_decay_schedule(0.0, 1e-2, 2, 5, 1e-4)),
        lambda: optax.adam(optax.warmup_cosine_decay_schedule(0.0, 1e-2, 2, 5, 1e-4))),
}


@pytest.mark.parametrize("name", CASES)
def test_updates_and_states_match_optax(name):
    ours, theirs = CASES[name]
    _run_both(ours(), theirs())


@pytest.mark.parametrize("name", ["adam", "clip_then_adam"])
def test_a_complex_gradient_adds_its_squared_modulus_as_in_optax(name):
    # optax's second moment and global norm use abs_sq: (1-2j) adds 5, not (1-2j)**2 = -3-4j
    g = {"z": np.array([1 - 2j, 0.5 + 0.1j], np.complex64), "r": np.array([0.3, -2.0], np.float32)}
    ours, theirs = CASES[name][0](), CASES[name][1]()
    state, tstate = ours.init(g), theirs.init(g)
    for _ in range(2):
        u, state = ours.update(g, state, g)
        v, tstate = theirs.update(g, tstate, g)
        _close(u, v)
        _close(state, tstate)
    np.testing.assert_allclose(np.asarray(optim.global_norm(g)),
                               np.asarray(optax.global_norm(g)), rtol=1e-6)


SCHEDULES = {
    "constant": (schedules.constant_schedule(0.3), optax.constant_schedule(0.3)),
    "linear": (schedules.linear_schedule(1.0, 0.1, 7, 2), optax.linear_schedule(1.0, 0.1, 7, 2)),
    "polynomial": (schedules.polynomial_schedule(1.0, 0.0, 2.0, 9),
                   optax.polynomial_schedule(1.0, 0.0, 2.0, 9)),
    "exponential": (schedules.exponential_decay(1.0, 3, 0.5, 1, end_value=0.2),
                    optax.exponential_decay(1.0, 3, 0.5, 1, end_value=0.2)),
    "staircase": (schedules.exponential_decay(2.0, 4, 0.7, staircase=True),
                  optax.exponential_decay(2.0, 4, 0.7, staircase=True)),
    "cosine": (schedules.cosine_decay_schedule(1.0, 10, alpha=0.1),
               optax.cosine_decay_schedule(1.0, 10, alpha=0.1)),
    "warmup_cosine": (schedules.warmup_cosine_decay_schedule(0.0, 1.0, 3, 12, 0.05),
                      optax.warmup_cosine_decay_schedule(0.0, 1.0, 3, 12, 0.05)),
}


@pytest.mark.parametrize("name", SCHEDULES)
def test_schedules_match_optax_at_every_step(name):
    ours, theirs = SCHEDULES[name]
    counts = np.arange(15, dtype=np.int32)
    got = jit(lambda c: s01.tree_map(ours, c))(counts) if name != "constant" else \
        [ours(c) for c in counts]
    want = [theirs(jjnp.int32(c)) for c in counts]
    np.testing.assert_allclose(np.asarray(got, np.float32).ravel(),
                               np.asarray(want, np.float32).ravel(), rtol=RTOL, atol=ATOL)


def test_the_optimizer_state_is_a_pytree_of_namedtuples_as_optax():
    state = optim.adam(1e-3).init(_params())
    tstate = optax.adam(1e-3).init(_params())
    assert [type(s).__name__ for s in state] == [type(s).__name__ for s in tstate]
    assert len(s01.tree_leaves(state)) == len(jax.tree_util.tree_leaves(tstate))


def test_weight_decay_without_params_is_reported():
    tx, jtx = optim.adamw(1e-3), optax.adamw(1e-3)
    with pytest.raises(ValueError) as ours:
        tx.update(_grads(0), tx.init(_params()))
    with pytest.raises(ValueError) as theirs:
        jtx.update(_grads(0), jtx.init(_params()))
    assert str(ours.value) == str(theirs.value)
    chained, jchained = optim.chain(optim.scale(1.0), optim.scale(2.0)), \
        optax.chain(optax.scale(1.0), optax.scale(2.0))
    with pytest.raises(ValueError) as ours:  # a state from another chain: optax's words
        chained.update(_grads(0), (optim.EmptyState(),))
    with pytest.raises(ValueError) as theirs:
        jchained.update(_grads(0), (optax.EmptyState(),))
    assert str(ours.value) == str(theirs.value)


SGD_CONFIGS = [dict(), dict(momentum=0.9), dict(momentum=0.9, nesterov=True), dict(momentum=0.0)]


@pytest.mark.parametrize("kwargs", SGD_CONFIGS, ids=str)
@pytest.mark.parametrize("scheduled", [False, True], ids=["constant", "schedule"])
def test_sgd_state_has_optax_structure(kwargs, scheduled):
    """optax.sgd chains identity() where there is no momentum: its state is always a pair."""
    lr_ours = schedules.constant_schedule(0.1) if scheduled else 0.1
    lr_theirs = optax.constant_schedule(0.1) if scheduled else 0.1
    ours, theirs = optim.sgd(lr_ours, **kwargs), optax.sgd(lr_theirs, **kwargs)
    state, tstate = ours.init(_params()), theirs.init(_params())
    assert str(jax.tree_util.tree_structure(state)) == str(jax.tree_util.tree_structure(tstate))
    assert [type(s).__name__ for s in state] == [type(s).__name__ for s in tstate]
    for a, b in zip(jax.tree_util.tree_leaves(state), jax.tree_util.tree_leaves(tstate),
                    strict=True):
        assert (np.asarray(a).dtype, np.shape(a)) == (np.asarray(b).dtype, np.shape(b))
    _run_both(ours, theirs, steps=2)


def test_identity_passes_updates_through_with_an_empty_state():
    g = _grads(0)
    u, s = optim.identity().update(g, optim.identity().init(_params()))
    v, t = optax.identity().update(g, optax.identity().init(_params()))
    assert repr(s) == repr(t) == "EmptyState()"
    _close(u, v)


# ------------------------------------------------------------------ masks and NAdam

MASK_TREE = {"w": True, "layers": [{"b": False}, {"b": True}]}
MASK_PREFIX = {"w": False, "layers": True}  # one bool for a whole subtree


def _matrices(tree):  # a mask function: decay the matrices, not the biases
    return s01.tree_map(lambda x: np.ndim(x) > 1, tree)


MASKED = {
    "adamw_mask_tree": (lambda: optim.adamw(1e-2, weight_decay=0.5, mask=MASK_TREE),
                        lambda: optax.adamw(1e-2, weight_decay=0.5, mask=MASK_TREE)),
    "adamw_mask_prefix": (lambda: optim.adamw(1e-2, weight_decay=0.5, mask=MASK_PREFIX),
                          lambda: optax.adamw(1e-2, weight_decay=0.5, mask=MASK_PREFIX)),
    "adamw_mask_fn": (lambda: optim.adamw(1e-2, weight_decay=0.5, mask=_matrices),
                      lambda: optax.adamw(1e-2, weight_decay=0.5, mask=_matrices)),
    "decay_masked_then_sgd": (
        lambda: optim.chain(optim.add_decayed_weights(0.3, MASK_TREE), optim.sgd(0.1)),
        lambda: optax.chain(optax.add_decayed_weights(0.3, MASK_TREE), optax.sgd(0.1))),
    "adam_nesterov": (lambda: optim.adam(1e-2, nesterov=True),
                      lambda: optax.adam(1e-2, nesterov=True)),
    "adam_nesterov_b1": (lambda: optim.adam(3e-3, b1=0.5, b2=0.9, eps_root=1e-3, nesterov=True),
                         lambda: optax.adam(3e-3, b1=0.5, b2=0.9, eps_root=1e-3, nesterov=True)),
    "adamw_nesterov_masked": (
        lambda: optim.adamw(1e-2, weight_decay=0.2, mask=_matrices, nesterov=True),
        lambda: optax.adamw(1e-2, weight_decay=0.2, mask=_matrices, nesterov=True)),
}


@pytest.mark.parametrize("name", MASKED)
def test_masks_and_nesterov_match_optax(name):
    ours, theirs = MASKED[name]
    _run_both(ours(), theirs(), steps=6)


@pytest.mark.parametrize("mask", [MASK_TREE, MASK_PREFIX, _matrices], ids=["tree", "prefix", "fn"])
def test_a_mask_decays_exactly_the_leaves_it_names(mask):
    """One step: the leaves the mask names differ from plain adam's by -lr * decay * p, and
    the others not at all."""
    params, grads = _params(), _grads(0)
    plain, decayed = optim.adam(0.1), optim.adamw(0.1, weight_decay=1.0, mask=mask)
    u, _ = plain.update(grads, plain.init(params), params)
    v, _ = decayed.update(grads, decayed.init(params), params)
    flags = s01.tree_leaves(_matrices(params) if callable(mask) else
                            s01.tree_map(lambda m, x: s01.tree_map(lambda _: m, x), mask, params))
    for flag, p, a, b in zip(flags, s01.tree_leaves(params), s01.tree_leaves(u),
                             s01.tree_leaves(v), strict=True):
        want = np.asarray(a) - 0.1 * p if flag else np.asarray(a)
        np.testing.assert_allclose(np.asarray(b), want, rtol=1e-6, atol=1e-7)


def test_masked_and_nesterov_states_have_optax_structure():
    for ours, theirs in (MASKED["adamw_mask_tree"], MASKED["adamw_nesterov_masked"]):
        state, tstate = ours().init(_params()), theirs().init(_params())
        assert str(jax.tree_util.tree_structure(state)) == \
            str(jax.tree_util.tree_structure(tstate))
        assert [type(s).__name__ for s in state] == [type(s).__name__ for s in tstate]


# ------------------------------------------------------------------ weight decay on a schedule

DECAY_SCHEDULED = {
    "decay_on_a_schedule_then_sgd": (
        lambda: optim.chain(optim.add_decayed_weights(schedules.exponential_decay(0.5, 2, 0.5)),
                            optim.sgd(0.1)),
        lambda: optax.chain(optax.add_decayed_weights(optax.exponential_decay(0.5, 2, 0.5)),
                            optax.sgd(0.1))),
    "adamw_decay_on_a_schedule": (
        lambda: optim.adamw(1e-2, weight_decay=schedules.linear_schedule(0.4, 0.0, 4)),
        lambda: optax.adamw(1e-2, weight_decay=optax.linear_schedule(0.4, 0.0, 4))),
    "adamw_decay_on_a_schedule_masked": (
        lambda: optim.adamw(1e-2, weight_decay=schedules.cosine_decay_schedule(0.3, 5),
                            mask=MASK_TREE),
        lambda: optax.adamw(1e-2, weight_decay=optax.cosine_decay_schedule(0.3, 5),
                            mask=MASK_TREE)),
}


@pytest.mark.parametrize("name", DECAY_SCHEDULED)
def test_weight_decay_on_a_schedule_matches_optax_step_by_step(name):
    ours, theirs = DECAY_SCHEDULED[name]
    _run_both(ours(), theirs(), steps=6)


def test_a_scheduled_decay_counts_its_steps_in_optax_state():
    ours = optim.add_decayed_weights(schedules.constant_schedule(0.1))
    theirs = optax.add_decayed_weights(optax.constant_schedule(0.1))
    state, tstate = ours.init(_params()), theirs.init(_params())
    assert type(state).__name__ == type(tstate).__name__ == "WeightDecaySchedule"
    assert str(jax.tree_util.tree_structure(state)) == str(jax.tree_util.tree_structure(tstate))
    with pytest.raises(ValueError, match="requires the current value of parameters"):
        ours.update(_grads(0), state)


@pytest.mark.parametrize("name", ["adam", "adamw"])
def test_adam_takes_python_float_leaves_as_optax(name):
    """A Python float leaf has no `.conj()`: the squared moment goes through jnp, as optax's
    orderth_norm does. Two steps to the bit (later ones move in the last bits, as XLA fuses
    optax's step its own way), the state's dtypes and weak types as optax's."""
    from stages.s02_tracing import dtypes

    params, grads = {"x": 1.0, "y": np.float32(2.0)}, {"x": 2.0, "y": np.float32(0.5)}
    ours, theirs = getattr(optim, name)(0.1), getattr(optax, name)(0.1)
    state, jstate = ours.init(params), theirs.init(params)
    for _ in range(2):
        updates, state = ours.update(grads, state, params)
        jupdates, jstate = theirs.update(grads, jstate, params)
        for a, b in zip(s01.tree_leaves(updates), jax.tree_util.tree_leaves(jupdates),
                        strict=True):
            assert np.asarray(a).tobytes() == np.asarray(b).tobytes()

    def kinds(leaves, weak):
        return [(str(np.asarray(x).dtype), bool(weak(x))) for x in leaves]

    assert kinds(s01.tree_leaves(state), dtypes.is_weakly_typed) == kinds(
        jax.tree_util.tree_leaves(jstate), lambda x: x.weak_type)
