"""What this stage does only so that its jaxprs match JAX 0.10.2's exactly.

None of it is part of the mechanism: JaxprTrace names it where it is used, so a reader can skip
it. The tests compare our printed jaxprs with JAX's character for character.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import Any

import numpy as np


class KnownResults:
    """The numpy arrays one JaxprTrace's known work computed, by identity.

    A known scalar that reaches the unknown side is inlined as a literal. JAX's known work
    returns jax.Arrays, which it never inlines, even 0-d: they cross as residuals. Ours returns
    numpy arrays, which would be inlined; so JaxprTrace asks this record, and a 0-d array known
    work computed crosses as a residual, as in JAX. Weak: an array nobody holds is forgotten.
    """

    def __init__(self):
        self._by_id: weakref.WeakValueDictionary = weakref.WeakValueDictionary()

    def record(self, outs: Iterable[Any]) -> None:
        for x in outs:
            if isinstance(x, np.ndarray):
                self._by_id[id(x)] = x

    def __contains__(self, val: Any) -> bool:
        return self._by_id.get(id(val)) is val
