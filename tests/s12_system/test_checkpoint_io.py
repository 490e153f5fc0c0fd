"""Checkpoints: a run stopped and resumed from disk gives the same losses, bit for bit, and the
format is the documented one, readable with numpy alone."""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest

import stages.s12_system as ujax
from stages.s12_system import checkpoint_io, nn, optim, random

MODEL = nn.MLP([16, 1])
TX = optim.adam(1e-2)


def _batch(step):
    # the data of a step comes from the step number, so a resumed run sees the same batches
    k = random.fold_in(random.PRNGKey(123), step)
    x = random.normal(k, (8, 4))
    return x, ujax.numpy.sum(x, axis=1, keepdims=True)


@ujax.jit
def _train_step(params, opt_state, x, y):
    def loss(p):
        return ujax.numpy.mean((MODEL.apply(p, x) - y) ** 2)
    value, grads = ujax.value_and_grad(loss)(params)
    updates, opt_state = TX.update(grads, opt_state, params)
    return optim.apply_updates(params, updates), opt_state, value


def _train(state, start, stop):
    losses = []
    for step in range(start, stop):
        params, opt_state, loss = _train_step(state["params"], state["opt_state"],
                                              *_batch(step))
        state = {"params": params, "opt_state": opt_state, "step": np.int32(step + 1)}
        losses.append(float(loss))
    return state, losses


def _fresh():
    params = MODEL.init(random.PRNGKey(0), np.zeros((1, 4), np.float32))
    return {"params": params, "opt_state": TX.init(params), "step": np.int32(0)}


def test_a_resumed_run_gives_the_same_losses(tmp_path):
    _, straight = _train(_fresh(), 0, 8)
    state, first = _train(_fresh(), 0, 4)
    checkpoint_io.save(tmp_path, state, step=4)
    del state  # the run stops here
    restored = checkpoint_io.restore(tmp_path, target=_fresh())
    assert int(restored["step"]) == 4
    _, second = _train(restored, int(restored["step"]), 8)
    assert first + second == straight
    assert straight[-1] < straight[0]


def test_the_format_is_a_manifest_and_npy_files(tmp_path):
    state = _fresh()
    folder = checkpoint_io.save(tmp_path, state, step=7)
    assert folder.name == "step_00000007"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["format"] == "ujax-checkpoint" and manifest["step"] == 7
    first = manifest["leaves"][0]
    assert first["path"] == "['opt_state'][0].count" and first["dtype"] == "int32"
    kernel = next(e for e in manifest["leaves"]
                  if e["path"] == "['params']['Dense_0']['kernel']")
    np.testing.assert_array_equal(np.load(folder / kernel["file"]),
                                  np.asarray(state["params"]["Dense_0"]["kernel"]))
    assert checkpoint_io.all_steps(tmp_path) == [7]
    # no target: nested dicts and lists from the paths
    plain = checkpoint_io.restore(tmp_path)
    assert plain["params"]["Dense_1"]["bias"].shape == (1,)
    assert plain["opt_state"][0]["count"] == 0


def test_a_target_that_does_not_fit_is_reported(tmp_path):
    checkpoint_io.save(tmp_path, {"w": np.zeros((2, 3), np.float32)}, step=1)
    with pytest.raises(ValueError, match=r"\['w'\] is float32\[2, 3\], the target's is "
                       r"float32\[3, 2\]"):
        checkpoint_io.restore(tmp_path, target={"w": np.zeros((3, 2), np.float32)})
    with pytest.raises(FileNotFoundError, match="no checkpoint under"):
        checkpoint_io.restore(tmp_path / "elsewhere")


def test_bfloat16_leaves_round_trip(tmp_path):
    tx = optim.adam(1e-3, mu_dtype=ml_dtypes.bfloat16)
    state = tx.init({"w": np.ones(2, np.float32)})
    checkpoint_io.save(tmp_path, state, step=1)
    back = checkpoint_io.restore(tmp_path, target=state)
    assert back[0].mu["w"].dtype == ml_dtypes.bfloat16
    assert checkpoint_io.restore(tmp_path)[0]["mu"]["w"].dtype == ml_dtypes.bfloat16


def test_restore_without_target_reads_any_key_and_a_single_leaf(tmp_path):
    tree = {"it's": np.ones(1), 'a"b': np.zeros(1), "a]b": [np.ones(2)]}
    checkpoint_io.save(tmp_path, tree, step=1)
    back = checkpoint_io.restore(tmp_path)
    assert set(back) == set(tree) and back["a]b"][0].shape == (2,)
    checkpoint_io.save(tmp_path, np.float32(3), step=2)
    assert checkpoint_io.restore(tmp_path) == np.float32(3)
