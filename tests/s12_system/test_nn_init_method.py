"""Module.init(key, *inputs, method=...): initialise by running another method, as Flax's
`init(rngs, *args, method=...)` does.

Only the params that method asks for are created, shaped by its own inputs; each is drawn from
the root key folded with its path, so it equals the same param of a full init, and what
jax.random draws from that key. `method` is a name, the class's function or a bound method, as
apply's is; apply(method=) then computes what jax.numpy computes with those params.
"""

from __future__ import annotations

import zlib

import jax
import numpy as np
import pytest

from stages.s07_caches import jit
from stages.s12_system import nn, random
from tests.s12_system.test_nn import AutoEncoder

X = np.random.default_rng(4).standard_normal((2, 5)).astype(np.float32)
Z = np.random.default_rng(5).standard_normal((2, 3)).astype(np.float32)


def _jax_kernel(seed, path, shape):
    """Dense's kernel as jax.random draws it: lecun normal from the key folded with its path."""
    key = jax.random.PRNGKey(seed)
    for name in path:
        key = jax.random.fold_in(key, zlib.crc32(name.encode()))
    return np.asarray(jax.random.normal(key, shape) * np.float32(1 / np.sqrt(shape[0])))


def _method(model, how, name):
    return {"name": name, "function": getattr(AutoEncoder, name),
            "bound": getattr(model, name)}[how]


@pytest.mark.parametrize("how", ["name", "function", "bound"])
def test_init_with_a_method_creates_only_that_methods_params(how):
    model = AutoEncoder()
    params = model.init(random.PRNGKey(0), X, method=_method(model, how, "encode"))
    assert {k: sorted(v) for k, v in params.items()} == {"encoder": ["bias", "kernel"]}
    assert np.shape(params["encoder"]["kernel"]) == (5, 3)
    np.testing.assert_array_equal(np.asarray(params["encoder"]["kernel"]),
                                  _jax_kernel(0, ("encoder", "kernel"), (5, 3)))
    np.testing.assert_array_equal(np.asarray(params["encoder"]["bias"]), np.zeros(3))


@pytest.mark.parametrize("how", ["name", "function", "bound"])
def test_the_methods_own_inputs_shape_its_params(how):
    model = AutoEncoder()
    params = model.init(random.PRNGKey(1), Z, method=_method(model, how, "decode"))
    assert list(params) == ["decoder"]
    assert np.shape(params["decoder"]["kernel"]) == (3, 5)  # from z's 3 features, not x's 5
    np.testing.assert_array_equal(np.asarray(params["decoder"]["kernel"]),
                                  _jax_kernel(1, ("decoder", "kernel"), (3, 5)))


@pytest.mark.parametrize("how", ["name", "function", "bound"])
def test_apply_with_the_same_method_computes_what_jax_numpy_computes(how):
    model = AutoEncoder()
    method = _method(model, how, "encode")
    params = model.init(random.PRNGKey(2), X, method=method)
    enc = jax.tree_util.tree_map(np.asarray, params["encoder"])
    want = jax.numpy.dot(X, enc["kernel"]) + enc["bias"]
    np.testing.assert_allclose(np.asarray(model.apply(params, X, method=method)), want,
                               rtol=1e-5, atol=1e-6)


def test_the_params_are_those_of_a_full_init_on_the_same_key():
    # a param's key depends on its path only, not on which method asked for it
    model = AutoEncoder()
    full = model.init(random.PRNGKey(3), X)
    encoder = model.init(random.PRNGKey(3), X, method="encode")
    decoder = model.init(random.PRNGKey(3), np.zeros((2, 3), np.float32), method="decode")
    for part in (encoder, decoder):
        for name, leaves in part.items():
            for leaf, value in leaves.items():
                np.testing.assert_array_equal(np.asarray(value), np.asarray(full[name][leaf]))
    assert {**encoder, **decoder}.keys() == full.keys()


def test_call_by_name_is_the_default():
    model = AutoEncoder()
    a = model.init(random.PRNGKey(4), X, method="__call__")
    b = model.init(random.PRNGKey(4), X)
    assert jax.tree_util.tree_all(jax.tree_util.tree_map(
        lambda u, v: np.array_equal(np.asarray(u), np.asarray(v)), a, b))


def test_a_method_init_does_not_feed_the_whole_model():
    model = AutoEncoder()
    params = model.init(random.PRNGKey(5), X, method="encode")
    with pytest.raises(nn.ScopeError, match="apply found no param 'decoder/kernel'"):
        model.apply(params, X)


def test_init_with_a_method_under_jit_and_in_tabulate():
    model = AutoEncoder()
    eager = model.init(random.PRNGKey(6), X, method="encode")
    jitted = jit(lambda k, x: model.init(k, x, method="encode"))(random.PRNGKey(6), X)
    np.testing.assert_allclose(np.asarray(jitted["encoder"]["kernel"]),
                               np.asarray(eager["encoder"]["kernel"]), rtol=1e-6)
    table = nn.tabulate(model, random.PRNGKey(6), X, method="encode")
    assert "encoder/kernel" in table and "decoder" not in table
    assert table.splitlines()[-1].split("|")[-1].strip() == "18"  # 5 * 3 + 3


def test_a_method_that_is_not_there_names_it():
    with pytest.raises(AttributeError, match="'AutoEncoder' object has no attribute 'embed'"):
        AutoEncoder().init(random.PRNGKey(0), X, method="embed")


def test_a_function_of_the_module_serves_as_a_method_as_in_flax():
    model = AutoEncoder()
    via_lambda = model.init(random.PRNGKey(7), X, method=lambda m, x: m.encoder(x))
    via_name = model.init(random.PRNGKey(7), X, method="encode")
    assert list(via_lambda) == ["encoder"]
    np.testing.assert_array_equal(np.asarray(via_lambda["encoder"]["kernel"]),
                                  np.asarray(via_name["encoder"]["kernel"]))
