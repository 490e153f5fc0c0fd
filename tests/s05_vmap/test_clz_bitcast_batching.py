"""vmap of clz and bitcast_convert_type against jax.vmap (values and printed jaxprs).

Both batch elementwise: the batch axis stays where it is. A bitcast to a narrower dtype adds its
pieces as a new last axis, after the batch axis wherever it sits; a bitcast to a wider dtype
joins the last axis, so a batch axis there is moved to the front first (JAX's rule, which keeps
it in place, cannot bitcast that case at all; the per-example loop is the oracle there).
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
import stages.s05_vmap as s05
from shared.testing import assert_same_typed_values

pytestmark = pytest.mark.oracle

rng = np.random.default_rng(11)
I = rng.integers(-(2**31), 2**31, (3, 4), dtype=np.int64).astype(np.int32)
I[0, :2] = (0, -1)
U8 = I.view(np.uint8).reshape(3, 4, 4)  # each int32 as its four bytes


def _same_bits(ours, theirs):
    o, t = np.ascontiguousarray(ours), np.ascontiguousarray(theirs)
    assert (o.dtype, o.shape) == (t.dtype, t.shape)
    assert o.tobytes() == t.tobytes()


@pytest.mark.parametrize("in_axes", [0, 1])
@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int16], ids=lambda d: np.dtype(d).name)
def test_vmap_of_clz_equals_jaxs_values_and_jaxpr(dtype, in_axes):
    x = I.astype(dtype)
    assert_same_typed_values(s05.vmap(s02.lax.clz, in_axes)(x),
                             jax.vmap(jax.lax.clz, in_axes)(x))
    ours = s02.make_jaxpr(s05.vmap(s02.lax.clz, in_axes))(x)
    theirs = jax.make_jaxpr(jax.vmap(jax.lax.clz, in_axes))(x)
    assert str(ours) == str(theirs)


def _bitcast(lax, new_dtype):
    return lambda x: lax.bitcast_convert_type(x, new_dtype)


BITCASTS = {
    "same width": (I, np.float32, [0, 1]),
    "narrower": (I, np.uint8, [0, 1]),
    "float32 to uint16 pieces": (I.view(np.float32), np.uint16, [0, 1]),
    "wider, batch axis first": (U8, np.uint32, [0, 1]),
    "int16 pairs to float32": (I.view(np.int16).reshape(3, 4, 2), np.float32, [0, 1]),
}


@pytest.mark.parametrize("case", list(BITCASTS))
def test_vmap_of_a_bitcast_equals_jaxs_values_and_jaxpr(case):
    x, new_dtype, axes = BITCASTS[case]
    for in_axes in axes:
        _same_bits(s05.vmap(_bitcast(s02.lax, new_dtype), in_axes)(x),
                   jax.vmap(_bitcast(jax.lax, new_dtype), in_axes)(x))
        ours = s02.make_jaxpr(s05.vmap(_bitcast(s02.lax, new_dtype), in_axes))(x)
        theirs = jax.make_jaxpr(jax.vmap(_bitcast(jax.lax, new_dtype), in_axes))(x)
        assert str(ours) == str(theirs)


@pytest.mark.parametrize("out_axes", [0, 1])
def test_a_wider_bitcast_batched_on_its_last_axis_is_the_per_example_loop(out_axes):
    # per example: a (3, 4) uint8 array whose rows are the bytes of one uint32 each
    got = s05.vmap(_bitcast(s02.lax, np.uint32), in_axes=2, out_axes=out_axes)(U8)
    want = np.stack([np.asarray(jax.lax.bitcast_convert_type(U8[:, :, i], np.uint32))
                     for i in range(U8.shape[2])], axis=out_axes)
    _same_bits(got, want)
    # the same as JAX's with the batch axis moved first by hand
    moved = jax.vmap(_bitcast(jax.lax, np.uint32), out_axes=out_axes)(np.moveaxis(U8, 2, 0))
    _same_bits(got, moved)


def test_vmap_of_the_gradient_through_them_equals_jaxs():
    def f(lax):
        return lambda x: x * lax.convert_element_type(
            lax.clz(lax.bitcast_convert_type(x, np.int32)), np.float32)

    x = np.array([1.5, -2.0, 0.25, 1e20, 3.0], np.float32)
    assert_same_typed_values(s05.vmap(s04.grad(f(s02.lax)))(x), jax.vmap(jax.grad(f(jax.lax)))(x))


def test_both_have_a_batching_rule():
    assert s02.lax.clz_p in s05.batching.primitive_batchers
    assert s02.lax.bitcast_convert_type_p in s05.batching.primitive_batchers
