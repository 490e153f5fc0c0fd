"""Reading an explicit tile assignment back as XLA's iota: which reshapes and transposes of
`arange(n)` to try. JAX reads the compiled program's shardings as XLA prints them
(`devices=[8,1]<=[4,2]T(1,0)`); we get device ids and search for the iota they are.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np


def iota_candidates(devices: np.ndarray) -> Iterator[tuple[tuple[int, ...], tuple[int, ...]]]:
    """(reshape_dims, perm) pairs to try when reading an explicit assignment back, in the
    order whose first match XLA would print."""
    n = devices.size
    yield (n,), (0,)
    shape = [d for d in devices.shape if d != 1] or [1]
    for perm in itertools.permutations(range(len(shape))):
        dims = tuple(shape[p] for p in np.argsort(perm))
        yield dims, perm
    # a device order whose minor mesh axis is major ((y, x) over a (4, 2) mesh: 0 2 4 6 1 3
    # 5 7) is an iota of the mesh's shape, not the tile's: try n's factorizations too
    for k in (2, 3):
        for dims in _factorizations(n, k):
            for perm in itertools.permutations(range(k)):
                yield dims, perm


def _factorizations(n: int, k: int) -> list[tuple[int, ...]]:
    """Every k-tuple of factors above 1 whose product is n, in order."""
    if k == 1:
        return [(n,)] if n > 1 else []
    return [(d, *rest) for d in range(2, n) if n % d == 0
            for rest in _factorizations(n // d, k - 1)]
