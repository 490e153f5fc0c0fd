"""nn: init draws each param from the root key folded with its path (checked bit for bit against
jax.random), apply computes what the same arithmetic in jax.numpy computes, gradients flow
through apply, and the conditional-submodule bug is reported with its cause."""

from __future__ import annotations

import zlib

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

from stages.s04_autodiff import grad
from stages.s07_caches import jit
from stages.s12_system import nn, random

RTOL, ATOL = 1e-5, 1e-6
X = np.random.default_rng(0).standard_normal((2, 5)).astype(np.float32)


def _jax_key(seed, *path):
    key = jax.random.PRNGKey(seed)
    for name in path:
        key = jax.random.fold_in(key, zlib.crc32(name.encode()))
    return key


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=RTOL, atol=ATOL)


def test_init_draws_each_param_from_the_key_folded_with_its_path():
    params = nn.MLP([8, 3]).init(random.PRNGKey(0), X)
    assert {k: sorted(v) for k, v in params.items()} == {
        "Dense_0": ["bias", "kernel"], "Dense_1": ["bias", "kernel"]}
    want = jax.random.normal(_jax_key(0, "Dense_1", "kernel"), (8, 3)) * np.float32(
        1 / np.sqrt(8))
    np.testing.assert_array_equal(np.asarray(params["Dense_1"]["kernel"]), np.asarray(want))
    np.testing.assert_array_equal(np.asarray(params["Dense_0"]["bias"]), np.zeros(8))


def test_init_under_jit_gives_the_same_params():
    # the same bits; XLA may fold normal's sqrt(2) into the init's scale once both are in one
    # program, which moves a last bit (jax.jit of Flax's init does the same)
    model = nn.MLP([4, 2])
    eager, jitted = model.init(random.PRNGKey(3), X), jit(model.init)(random.PRNGKey(3), X)
    for path in (("Dense_0", "kernel"), ("Dense_1", "kernel")):
        np.testing.assert_allclose(np.asarray(eager[path[0]][path[1]]),
                                   np.asarray(jitted[path[0]][path[1]]), rtol=1e-6)


def test_mlp_apply_matches_jax_numpy():
    model = nn.MLP([8, 3], activation=nn.gelu)
    p = model.init(random.PRNGKey(1), X)
    q = jax.tree_util.tree_map(np.asarray, p)
    h = jax.nn.gelu(X @ q["Dense_0"]["kernel"] + q["Dense_0"]["bias"])
    _close(model.apply(p, X), h @ q["Dense_1"]["kernel"] + q["Dense_1"]["bias"])


def test_gradients_flow_through_apply():
    model = nn.Sequential([nn.Dense(4), nn.LayerNorm(), nn.Dense(1)])
    p = model.init(random.PRNGKey(2), X)
    assert sorted(p) == ["layers_0", "layers_1", "layers_2"]  # Flax's Sequential names

    def loss(p):
        return (model.apply(p, X) ** 2).sum()

    def jax_loss(q):
        h = X @ q["layers_0"]["kernel"] + q["layers_0"]["bias"]
        mean = h.mean(-1, keepdims=True)
        var = jjnp.maximum(0.0, (h * h).mean(-1, keepdims=True) - mean * mean)
        h = (h - mean) * jax.lax.rsqrt(var + 1e-6) * q["layers_1"]["scale"] + q["layers_1"]["bias"]
        return ((h @ q["layers_2"]["kernel"] + q["layers_2"]["bias"]) ** 2).sum()

    q = jax.tree_util.tree_map(np.asarray, p)
    ours, theirs = jit(grad(loss))(p), jax.grad(jax_loss)(q)
    for a, b in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs),
                    strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("padding,lax_padding", [
    ("SAME", "SAME"), ("VALID", "VALID"), ("same", "SAME"), ("SAME_LOWER", "SAME_LOWER"),
    (1, [(1, 1), (1, 1)]), ([(0, 2), 1], [(0, 2), (1, 1)]), ((2, (1, 0)), [(2, 2), (1, 0)])])
def test_conv_matches_lax_conv_with_each_padding_flax_reads(padding, lax_padding):
    img = np.random.default_rng(1).standard_normal((2, 6, 5, 3)).astype(np.float32)
    conv = nn.Conv(4, (3, 2), padding=padding)
    p = conv.init(random.PRNGKey(0), img)
    want = jax.lax.conv_general_dilated(img, np.asarray(p["kernel"]), (1, 1), lax_padding,
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))
    _close(conv.apply(p, img), want + np.asarray(p["bias"]))


@pytest.mark.parametrize("strides", [2, (2, 3), (3, 1)])
@pytest.mark.parametrize("padding", ["SAME", "VALID", "SAME_LOWER", [(0, 2), 1]])
def test_a_strided_conv_matches_lax_conv_padded_as_flax_pads_it(strides, padding):
    """SAME at a stride pads so that ceil(size / stride) windows fit (lax.padtype_to_pads)."""
    img = np.random.default_rng(3).standard_normal((2, 7, 8, 3)).astype(np.float32)
    conv = nn.Conv(4, (3, 2), strides, padding)  # Flax's order: strides before padding
    p = conv.init(random.PRNGKey(0), img)
    pairs = (strides,) * 2 if isinstance(strides, int) else strides
    lax_padding = padding if isinstance(padding, str) else [(0, 2), (1, 1)]
    want = jax.lax.conv_general_dilated(img, np.asarray(p["kernel"]), pairs, lax_padding,
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))
    got = conv.apply(p, img)
    assert np.shape(got) == want.shape
    _close(got, want + np.asarray(p["bias"]))


def test_a_conv_promotes_its_input_with_its_params_and_gives_lax_an_empty_output():
    """A float16 or int input meets float32 params in float32, as Flax's promote_dtype; a kernel
    wider than a VALID input fits no window: lax's conv gives an empty output, and so do we."""
    conv = nn.Conv(4, 3)
    x = np.random.default_rng(4).standard_normal((2, 5, 2)).astype(np.float16)
    p = conv.init(random.PRNGKey(0), x)
    for given in (x, (x * 4).astype(np.int32)):
        want = jax.lax.conv_general_dilated(given.astype(np.float32), np.asarray(p["kernel"]),
                                            (1,), "SAME", dimension_numbers=("NWC", "WIO", "NWC"))
        got = conv.apply(p, given)
        assert np.asarray(got).dtype == np.float32
        _close(got, want + np.asarray(p["bias"]))
    wide = nn.Conv(4, 5, padding="VALID")
    seq = np.ones((2, 3, 3), np.float32)
    q = wide.init(random.PRNGKey(0), seq)
    want = jax.lax.conv_general_dilated(seq, np.asarray(q["kernel"]), (1,), "VALID",
                                        dimension_numbers=("NWC", "WIO", "NWC"))
    assert np.shape(wide.apply(q, seq)) == want.shape == (2, 0, 4)


def test_causal_conv_pads_only_the_past_and_an_unknown_padding_is_refused():
    seq = np.random.default_rng(2).standard_normal((2, 7, 3)).astype(np.float32)
    conv = nn.Conv(4, 3, padding="CAUSAL")
    p = conv.init(random.PRNGKey(0), seq)
    want = jax.lax.conv_general_dilated(seq, np.asarray(p["kernel"]), (1,), [(2, 0)],
                                        dimension_numbers=("NWC", "WIO", "NWC"))
    _close(conv.apply(p, seq), want + np.asarray(p["bias"]))
    with pytest.raises(RuntimeError) as theirs:
        jax.lax.conv_general_dilated(seq, np.asarray(p["kernel"]), (1,), "FULL",
                                     dimension_numbers=("NWC", "WIO", "NWC"))
    with pytest.raises(RuntimeError) as ours:  # not silently VALID
        nn.Conv(4, 3, padding="FULL").init(random.PRNGKey(0), seq)
    assert str(ours.value) == str(theirs.value)
    for mode in ("CIRCULAR", "REFLECT"):  # Flax pads these with jnp.pad; ours says it does not
        with pytest.raises(NotImplementedError, match=f"Conv\\(padding='{mode}'\\) is not built"):
            nn.Conv(4, 3, padding=mode).init(random.PRNGKey(0), seq)


def test_embed_picks_rows_and_attends():
    embed = nn.Embed(11, 4)
    ids = np.array([[1, 0, 10], [3, 3, 2]], np.int32)
    p = embed.init(random.PRNGKey(0), ids)
    table = np.asarray(p["embedding"])
    _close(embed.apply(p, ids), table[ids])


def test_embed_gathers_as_flax_does():
    """One gather in the jaxpr (Flax: jnp.take); its gradient adds each id's rows back; an id
    out of range reads NaN; a float id is refused with Flax's message."""
    from stages.s02_tracing import make_jaxpr

    embed = nn.Embed(6, 3)
    ids = np.array([[1, 5, 1, 0]], np.int32)
    p = embed.init(random.PRNGKey(0), ids)
    prims = [e.primitive.name for e in make_jaxpr(embed.apply)(p, ids).jaxpr.eqns]
    assert "gather" in prims and "dot_general" not in prims
    table = np.asarray(p["embedding"])
    cotangent = np.arange(12, dtype=np.float32).reshape(1, 4, 3)
    ours = grad(lambda q: (embed.apply(q, ids) * cotangent).sum())(p)["embedding"]
    theirs = jax.grad(lambda t: (jjnp.take(t, ids, axis=0) * cotangent).sum())(table)
    _close(ours, theirs)  # row 1 gets two cotangents, rows 2-4 none
    bad = np.array([[2, 6, -7]], np.int32)
    np.testing.assert_array_equal(np.asarray(embed.apply(p, bad)),
                                  np.asarray(jjnp.take(table, bad, axis=0)))
    with pytest.raises(ValueError, match="Input type must be an integer or unsigned integer"):
        embed.apply(p, ids.astype(np.float32))


@pytest.mark.parametrize("scale", [1.0, 1e5])
def test_attention_matches_jax_numpy(scale):
    """Masked logits become the dtype's lowest, Flax's big_neg: with logits past -1e9 (scale
    1e5), a constant -1e9 would let masked keys win."""
    x = np.random.default_rng(2).standard_normal((2, 4, 6)).astype(np.float32) * np.float32(scale)
    mha = nn.MultiHeadAttention(num_heads=2)
    mask = nn.make_causal_mask(4)
    p = mha.init(random.PRNGKey(0), x, mask=mask)
    assert sorted(p) == ["key", "out", "query", "value"]
    q = jax.tree_util.tree_map(np.asarray, p)

    def proj(name, y):
        return y @ q[name]["kernel"] + q[name]["bias"]

    def heads(y):
        return y.reshape(2, 4, 2, 3).transpose(0, 2, 1, 3)

    logits = heads(proj("query", x)) @ heads(proj("key", x)).transpose(0, 1, 3, 2) / np.sqrt(3)
    logits = jjnp.where(np.tril(np.ones((4, 4), bool)), logits, jjnp.finfo(np.float32).min)
    out = (jax.nn.softmax(logits) @ heads(proj("value", x))).transpose(0, 2, 1, 3)
    _close(jit(mha.apply)(p, x, mask=mask), proj("out", out.reshape(2, 4, 6)))


def test_dropout_draws_from_its_rng_stream_by_path():
    class Net(nn.Module):
        def __call__(self, x):
            return nn.Dropout(0.5, deterministic=False)(x)

    x = np.ones((3, 4), np.float32)
    out = np.asarray(Net().apply({}, x, rngs={"dropout": random.PRNGKey(7)}))
    key = jax.random.fold_in(_jax_key(7, "Dropout_0"), 0)
    keep = np.asarray(jax.random.bernoulli(key, 0.5, (3, 4)))
    np.testing.assert_array_equal(out, np.where(keep, 2.0, 0.0))
    np.testing.assert_array_equal(np.asarray(nn.Dropout(0.5, deterministic=True).apply({}, x)), x)
    with pytest.raises(nn.ScopeError, match="needs an rng for 'dropout': pass rngs="):
        Net().apply({}, x)


def test_a_dropout_called_twice_in_one_apply_draws_a_second_key_as_flax():
    """One module is one path: its second call goes on counting the keys its first drew (Flax's
    scope keeps its rng counters), so the two masks differ; the first is a lone call's."""

    class Twice(nn.Module):
        def __init__(self):
            self.drop = nn.Dropout(0.5)

        def __call__(self, x):
            return self.drop(x, deterministic=False), self.drop(x, deterministic=False)

    x = np.ones((4, 8), np.float32)
    first, second = Twice().apply({}, x, rngs={"dropout": random.PRNGKey(7)})
    for k, out in enumerate((first, second)):
        key = jax.random.fold_in(_jax_key(7, "drop"), k)
        keep = np.asarray(jax.random.bernoulli(key, 0.5, (4, 8)))
        np.testing.assert_array_equal(np.asarray(out), np.where(keep, 2.0, 0.0))
    assert not np.array_equal(np.asarray(first), np.asarray(second))


class Branchy(nn.Module):
    """Flax's documented pitfall: a submodule created only when a flag is set."""

    def __call__(self, x, project=False):
        if project:
            x = nn.Dense(5)(x)
        return nn.Dense(3)(x)


def test_a_submodule_created_in_a_branch_init_did_not_take_is_reported():
    p = Branchy().init(random.PRNGKey(0), X, project=False)
    with pytest.raises(nn.ScopeError, match=r"param 'Dense_0/kernel' has shape \(5, 3\) but the "
                       r"module asks for \(5, 5\)\. Was this submodule created inside a Python "
                       r"`if`"):
        Branchy().apply(p, X, project=True)


def test_a_branch_taken_at_init_but_not_at_apply_is_reported():
    p = Branchy().init(random.PRNGKey(0), np.ones((2, 3), np.float32), project=True)
    # apply's first Dense is named Dense_0, init's Dense_0 was the branch's: shapes agree by
    # chance here (3 -> 5 vs 3 -> 3 differ), and Dense_1 is left unused
    with pytest.raises(nn.ScopeError, match="created inside a Python `if`"):
        Branchy().apply(p, np.ones((2, 3), np.float32), project=False)


def test_unused_params_are_reported():
    class Two(nn.Module):
        def __call__(self, x, both=True):
            x = nn.Dense(5, name="a")(x)
            return nn.Dense(5, name="b")(x) if both else x

    p = Two().init(random.PRNGKey(0), X)
    with pytest.raises(nn.ScopeError, match=r"apply never used the params of \['b'\]"):
        Two().apply(p, X, both=False)


def test_param_count_and_tabulate():
    model = nn.MLP([8, 3])
    p = model.init(random.PRNGKey(0), X)
    assert nn.param_count(p) == 5 * 8 + 8 + 8 * 3 + 3
    table = nn.tabulate(model, random.PRNGKey(0), X)
    assert "Dense_1/kernel" in table and "(8, 3)" in table
    assert table.splitlines()[-1].split("|")[-1].strip() == "75"


def test_calling_a_module_outside_init_or_apply_is_reported():
    with pytest.raises(nn.ScopeError, match=r"Dense was called directly; use "
                       r"Dense\(\.\.\.\)\.init\(key, x\) and \.apply\(params, x\)"):
        nn.Dense(3)(X)


def _bits_equal(ours, theirs):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert (ours.dtype, ours.shape) == (theirs.dtype, theirs.shape)
    assert ours.tobytes() == theirs.tobytes()


def test_relu_keeps_the_dtype_and_has_jax_derivative_at_zero():
    for x in (np.int32([-2, 0, 3]), np.float32([-2.0, -0.0, 0.0, 3.0]), np.int8([-1, 5])):
        _bits_equal(nn.relu(x), jax.nn.relu(x))
    _bits_equal(grad(nn.relu)(0.0), jax.grad(jax.nn.relu)(0.0))  # 0, not the subgradient 0.5
    from stages.s05_vmap import vmap
    x = np.float32([-1.0, 0.0, 2.0])
    _bits_equal(jit(vmap(grad(nn.relu)))(x), jax.vmap(jax.grad(jax.nn.relu))(x))


@pytest.mark.parametrize("approximate", [True, False])
def test_gelu_matches_jax_bit_for_bit(approximate):
    """Integers become floats before x ** 3; approximate=False is JAX's erfc form."""
    for x in (np.int32([2000, -3, 0, 1]), np.linspace(-9, 9, 73).astype(np.float32)):
        _bits_equal(nn.gelu(x, approximate=approximate), jax.nn.gelu(x, approximate=approximate))
        _bits_equal(jit(lambda v: nn.gelu(v, approximate=approximate))(x),
                    jax.jit(lambda v: jax.nn.gelu(v, approximate=approximate))(x))


@pytest.mark.parametrize("shape", [(0,), (2, 0), (0, 3)])
def test_softmax_of_an_empty_axis_is_empty_as_in_jax(shape):
    x = np.zeros(shape, np.float32)
    for axis in (-1, 0):
        _bits_equal(nn.softmax(x, axis=axis), jax.nn.softmax(x, axis=axis))
        _bits_equal(nn.log_softmax(x, axis=axis), jax.nn.log_softmax(x, axis=axis))


@pytest.mark.parametrize("axis", [(0, 1), (0, -1), (2, 0), (-1,)])
def test_softmax_over_a_tuple_of_axes_matches_jax(axis):
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    for ours, theirs in [(nn.softmax, jax.nn.softmax), (nn.log_softmax, jax.nn.log_softmax)]:
        _close(ours(x, axis=axis), theirs(x, axis=axis))
        _close(jit(lambda v, f=ours: f(v, axis=axis))(x), theirs(x, axis=axis))


@pytest.mark.parametrize("axis", [-1, 0, 1, 2, -2, -3])
def test_one_hot_puts_the_classes_on_axis_as_jax(axis):
    idx = np.int32([[0, 2], [1, 5]])  # 5 is past the 3 classes: a row of zeros
    _bits_equal(nn.one_hot(idx, 3, axis=axis), jax.nn.one_hot(idx, 3, axis=axis))
    _bits_equal(jit(lambda i: nn.one_hot(i, 3, axis=axis))(idx), jax.nn.one_hot(idx, 3, axis=axis))


def test_erfc_has_a_rule_in_every_table():
    from stages.s04_autodiff import ad
    from stages.s05_vmap import batching, vmap
    from stages.s08_lowering import mlir
    from stages.s12_system.special import erfc, erfc_p

    assert erfc_p in ad.primitive_jvps and erfc_p in batching.primitive_batchers
    assert erfc_p in mlir.lowering_rules
    x = np.float32([-3.0, -0.5, 0.0, 0.7, 4.0])
    _bits_equal(erfc(x), jax.lax.erfc(x))
    np.testing.assert_allclose(np.asarray(jit(vmap(grad(erfc)))(x)),
                               np.asarray(jax.vmap(jax.grad(jax.lax.erfc))(x)), rtol=1e-6)


def test_embeds_default_init_is_flaxs_default_embed_init():
    """variance_scaling(1.0, "fan_in", "normal", out_axis=0): a normal of std 1/sqrt(features),
    the same draws as JAX's initializer from the same key."""
    shape = (50, 16)
    ours = nn.Embed(*shape).embedding_init(random.PRNGKey(3), shape)
    theirs = jax.nn.initializers.variance_scaling(1.0, "fan_in", "normal", out_axis=0)(
        jax.random.PRNGKey(3), shape)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)


def test_layer_norm_of_float16_computes_its_statistics_in_float32_as_flax():
    # E[x^2] - E[x]^2 in float16 cancels to noise: Flax promotes the statistics to float32
    x = (np.random.default_rng(3).standard_normal((2, 64)) * 3 + 10).astype(np.float16)
    layer = nn.LayerNorm()
    y = layer.apply(layer.init(random.PRNGKey(0), x), x)
    x64 = x.astype(np.float64)
    want = (x64 - x64.mean(-1, keepdims=True)) / np.sqrt(x64.var(-1, keepdims=True) + 1e-6)
    assert y.dtype == np.float32
    np.testing.assert_allclose(np.asarray(y, np.float64), want, atol=5e-3)


def test_dropout_of_rate_one_is_zeros_with_zero_gradients_as_flax():
    key = random.PRNGKey(0)
    drop = nn.Dropout(1.0)
    g = grad(lambda y: drop.apply({}, y, deterministic=False, rngs={"dropout": key}).sum())(X)
    np.testing.assert_array_equal(np.asarray(g), np.zeros_like(X))  # not x / 0's NaN


def test_dropout_asks_for_deterministic_as_flax():
    with pytest.raises(ValueError, match='^Parameter "deterministic" must be passed to the '
                       "constructor or at call time.$"):
        nn.Dropout(0.5).apply({}, X, rngs={"dropout": random.PRNGKey(0)})


def test_conv_takes_an_int_kernel_size_as_one_spatial_dimension():
    x = np.ones((1, 9, 3), np.float32)
    params = nn.Conv(2, 3).init(random.PRNGKey(0), x)
    assert np.shape(params["kernel"]) == (3, 3, 2)
    assert np.shape(nn.Conv(2, 3).apply(params, x)) == (1, 9, 2)


@pytest.mark.parametrize("batch", [(), (3,), (2, 3)], ids=["unbatched", "one_axis", "two_axes"])
def test_conv_takes_any_number_of_batch_axes_as_flax_does(batch):
    """Flax folds the batch axes into one (none: x[None]) and unfolds them on the way out."""
    img = np.random.default_rng(2).standard_normal((*batch, 6, 5, 3)).astype(np.float32)
    conv = nn.Conv(4, (3, 2))
    p = conv.init(random.PRNGKey(0), img)
    assert {k: np.shape(v) for k, v in p.items()} == {"kernel": (3, 2, 3, 4), "bias": (4,)}
    flat = img.reshape(-1, 6, 5, 3)
    want = jax.lax.conv_general_dilated(flat, np.asarray(p["kernel"]), (1, 1), "SAME",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))
    want = (want + np.asarray(p["bias"])).reshape(*batch, 6, 5, 4)
    got = conv.apply(p, img)
    assert np.shape(got) == (*batch, 6, 5, 4)
    _close(got, want)
    _close(jit(conv.apply)(p, img), want)
    if not batch:  # the same as the layer on x[None], squeezed
        _close(got, np.asarray(conv.apply(p, img[None]))[0])


class AutoEncoder(nn.Module):
    def __init__(self):
        self.encoder = nn.Dense(3)
        self.decoder = nn.Dense(5)

    def __call__(self, x):
        return self.decode(self.encode(x))

    def encode(self, x):
        return self.encoder(x)

    def decode(self, z):
        return self.decoder(z)


@pytest.mark.parametrize("how", ["name", "function", "bound"])
def test_apply_runs_another_method_given_by_name_or_function_as_flax(how):
    x = np.random.default_rng(3).standard_normal((2, 5)).astype(np.float32)
    model = AutoEncoder()
    params = model.init(random.PRNGKey(0), x)
    enc, dec = params["encoder"], params["decoder"]
    method = {"name": "encode", "function": AutoEncoder.encode, "bound": model.encode}[how]
    want = x @ np.asarray(enc["kernel"]) + np.asarray(enc["bias"])
    _close(model.apply(params, x, method=method), want)  # the decoder's params go unread
    _close(jit(lambda p, v: model.apply(p, v, method=method))(params, x), want)
    z = np.ones((2, 3), np.float32)
    want = z @ np.asarray(dec["kernel"]) + np.asarray(dec["bias"])
    decode = {"name": "decode", "function": AutoEncoder.decode, "bound": model.decode}[how]
    _close(model.apply(params, z, method=decode), want)
    _close(model.apply(params, x, method="__call__"), model.apply(params, x))


# Flax's checks and signatures (flax/linen: merge_param, Conv, MultiHeadDotProductAttention,
# LayerNorm's _normalize), compared with the messages it raises
X3 = np.ones((2, 5, 8), np.float32)


def test_dropout_refuses_deterministic_given_twice_as_flaxs_merge_param():
    with pytest.raises(ValueError, match='^Parameter "deterministic" was passed to the '
                       "constructor and at call time. Should be passed just once.$"):
        nn.Dropout(0.5, deterministic=True).apply({}, X3, deterministic=False,
                                                  rngs={"dropout": random.PRNGKey(0)})


def test_conv_causal_padding_is_1d_only_as_flax():
    with pytest.raises(ValueError, match="^Causal padding is only implemented for 1D"):
        nn.Conv(2, (2, 2), padding="CAUSAL").init(random.PRNGKey(0), np.ones((1, 4, 4, 3)))


def test_attention_heads_must_divide_the_features_as_flax():
    with pytest.raises(AssertionError, match=r"Memory dimension \(8\) must be divisible by "
                       r"number of heads \(3\)\."):
        nn.MultiHeadAttention(3).init(random.PRNGKey(0), X3)


def test_attention_takes_flaxs_q_k_v_and_mask_by_keyword():
    r = np.random.default_rng(0)
    q, k, v = (r.normal(size=(1, 4, 4)).astype(np.float32) for _ in range(3))
    m = nn.MultiHeadAttention(1)
    p = m.init(random.PRNGKey(0), q)
    ours = np.asarray(m.apply(p, q, k, v))      # values v, no mask, as Flax reads it
    assert not np.allclose(ours, np.asarray(m.apply(p, q, k, mask=v)))
    np.testing.assert_allclose(np.asarray(m.apply(p, q, k)), np.asarray(m.apply(p, q, k, k)))


@pytest.mark.parametrize("dtype", [np.float16, jjnp.bfloat16, np.float32])
def test_layer_norm_without_params_keeps_the_input_dtype_as_flax(dtype):
    x = np.arange(8, dtype=np.float32).reshape(2, 4).astype(dtype)
    y = nn.LayerNorm(use_scale=False, use_bias=False).apply({}, x)
    assert np.asarray(y).dtype == np.dtype(dtype)
