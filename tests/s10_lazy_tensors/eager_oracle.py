"""Eager CPU torch as the oracle of one lazy op: the same values, dtype and shape, or the same
error with the same first line."""

from __future__ import annotations

import torch


def outcome(f, device):
    """f's result on the host, or the type and first line of what it raised."""
    try:
        out = f(device)
    except Exception as e:  # noqa: BLE001 - the oracle's outcome, whatever it is
        return type(e), str(e).splitlines()[0]
    return out.cpu()


def assert_same(f, dev):
    """Bit for bit: the same values (NaN where eager has NaN), dtype and shape, or the same
    error with the same message."""
    want, got = outcome(f, "cpu"), outcome(f, dev)
    if isinstance(want, tuple):
        assert got == want
    else:
        assert isinstance(got, torch.Tensor), got
        assert (got.dtype, got.shape) == (want.dtype, want.shape)
        torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)
