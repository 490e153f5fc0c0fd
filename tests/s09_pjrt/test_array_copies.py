"""When a device array is a new buffer, against jax.Array: device_put(may_alias=False) copies
(deleting the original spares the copy), donate=True is a new array on the same buffer;
copy.copy and copy.deepcopy keep the device and the commitment; a DLPack consumer that writes
the buffer is seen on the next read; device_put takes a pytree of devices; `in` is JAX's."""

from __future__ import annotations

import copy

import jax
import numpy as np
import pytest

import stages.s09_pjrt as s09

VALUES = np.arange(3, dtype=np.float32)


def test_a_device_put_asked_not_to_alias_survives_the_original_as_jaxs():
    for put in (s09.device_put, jax.device_put):
        x = put(VALUES)
        y = put(x, may_alias=False)
        assert y is not x and not x.is_deleted()
        x.delete()
        assert np.array_equal(np.asarray(y), VALUES)


def test_a_donating_device_put_is_a_new_array_on_the_same_buffer_as_jaxs():
    for put in (s09.device_put, jax.device_put):
        x = put(VALUES)
        y = put(x, donate=True)
        assert y is not x and not x.is_deleted()  # JAX's CPU client deletes nothing
        x.delete()
        assert y.is_deleted()


def test_a_plain_device_put_of_a_device_array_is_the_array_itself_as_jaxs():
    x = s09.device_put(VALUES)
    assert s09.device_put(x) is x and s09.device_put(x, may_alias=True) is x
    theirs = jax.device_put(VALUES)
    assert jax.device_put(theirs) is theirs


@pytest.mark.parametrize("how", [copy.copy, copy.deepcopy], ids=["copy", "deepcopy"])
def test_copying_keeps_the_device_and_the_commitment_as_jaxs(how):
    device = s09.device_put(1.0).device
    for put, dev in ((s09.device_put, device), (jax.device_put, jax.devices()[0])):
        x = put(VALUES, dev)
        y = how(x)
        assert (y is not x, y.committed, y.devices()) == (True, True, x.devices())
        x.delete()
        assert np.array_equal(np.asarray(y), VALUES)


def test_a_dlpack_consumer_writing_the_buffer_is_seen_on_the_next_read_as_in_jax():
    torch = pytest.importorskip("torch")
    seen = []
    for put in (s09.device_put, jax.device_put):
        x = put(np.arange(3, dtype=np.float32))  # a fresh one: JAX's CPU client may share it
        repr(x)  # the host copy is read once
        torch.from_dlpack(x).add_(10)
        seen.append((x.tolist(), (x + 0).tolist()))
    assert seen[0] == seen[1] == ([10.0, 11.0, 12.0], [10.0, 11.0, 12.0])


def test_device_put_takes_a_pytree_of_devices_as_jax():
    ours_device, jax_device = s09.device_put(1.0).device, jax.devices()[0]
    outs = [put({"a": 1, "b": 2.0, "c": [VALUES, VALUES]}, {"a": d, "b": None, "c": d})
            for put, d in ((s09.device_put, ours_device), (jax.device_put, jax_device))]
    for ours, theirs in zip(jax.tree_util.tree_leaves(outs[0]),
                            jax.tree_util.tree_leaves(outs[1]), strict=True):
        assert (ours.committed, ours.dtype, ours.weak_type) == \
            (theirs.committed, theirs.dtype, theirs.weak_type)
    with pytest.raises(ValueError):  # not a prefix of the value's tree
        s09.device_put([1, 2.0], [ours_device])


@pytest.mark.parametrize("query,shape", [(1.0, (3,)), (7.0, (3,)), (1.0, (1, 1)),
                                         (np.ones(2), (3,)), (None, (3,))],
                         ids=["found", "not found", "2-d", "a vector query", "None"])
def test_in_is_jaxs_on_a_device_array(query, shape):
    def outcome(put):
        try:
            return "ok", query in put(np.arange(np.prod(shape), dtype=np.float32).reshape(shape))
        except Exception as e:  # the same refusal, word for word
            return type(e).__name__, str(e)
    assert outcome(s09.device_put) == outcome(jax.device_put)


@pytest.mark.parametrize("how", ["jnp.array", "astype(copy=True)"])
def test_an_explicit_copy_survives_the_donation_of_its_original_as_jaxs(how):
    import stages.s07_caches as s07
    from stages.s02_tracing import numpy as jnp

    for put, np_, jit in ((s09.device_put, jnp, s07.jit), (jax.device_put, jax.numpy, jax.jit)):
        x = put(VALUES)
        y = np_.array(x) if how == "jnp.array" else x.astype(np.float32, copy=True)
        assert y is not x
        jit(lambda a: a * 2, donate_argnums=0)(x)
        assert np.array_equal(np.asarray(y), VALUES)
