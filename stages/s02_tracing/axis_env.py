"""The axis environment: which named axes are bound here, and their sizes.

JAX: `core.AxisEnv`, `core.extend_axis_env_nd`, `core.get_axis_env` in jax/_src/core.py. A vmap
with `axis_name='i'` binds 'i' while its function runs (stage 5; shard_map binds its mesh axes in
stage 11), and so does `make_jaxpr(f, axis_env=[('i', 4)])`; a collective over a name nothing
bound fails with JAX's NameError. Stage 2 only keeps the record; the collectives are stage 5's.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass, field


@dataclass(frozen=True)
class AxisEnv:
    """Named axes in scope, innermost last; spmd_axis_names are the mesh axes vmaps named."""

    axis_sizes: dict = field(default_factory=dict)
    spmd_axis_names: frozenset = frozenset()
    # the manual mesh axes of a shard_map with check_vma=True: inside it every value's type
    # says which of these it varies along (ShapedArray.vma), and operands are made to agree
    vma_axes: frozenset = frozenset()

    def axis_size(self, axis_name: Hashable) -> int:
        if axis_name not in self.axis_sizes:
            raise NameError(f"unbound axis name: {axis_name}")
        return self.axis_sizes[axis_name]

    def axis_exists(self, axis_name: Hashable) -> bool:
        return axis_name in self.axis_sizes

    def axis_names(self) -> tuple:
        return tuple(self.axis_sizes)

    def __post_init__(self) -> None:  # the key, made once: jit reads it on every call
        key = (tuple(self.axis_sizes.items()), self.spmd_axis_names, self.vma_axes)
        object.__setattr__(self, "_key", key)

    def key(self) -> tuple:
        """A hashable snapshot, for caches whose traces depend on it (jit's: every call)."""
        return self._key


class _State(threading.local):
    def __init__(self) -> None:
        self.env = AxisEnv()


_state = _State()


def get_axis_env() -> AxisEnv:
    return _state.env


@contextlib.contextmanager
def _replaced(env: AxisEnv) -> Iterator[None]:
    prev, _state.env = _state.env, env
    try:
        yield
    finally:
        _state.env = prev


def extend_axis_env_nd(name_size_pairs: Iterable[tuple[Hashable, int]]
                       ) -> contextlib.AbstractContextManager:
    """Bind each (name, size) while the block runs; a None name (an unnamed vmap) binds nothing."""
    sizes = dict(_state.env.axis_sizes)
    sizes.update((name, size) for name, size in name_size_pairs if name is not None)
    return _replaced(AxisEnv(sizes, _state.env.spmd_axis_names, _state.env.vma_axes))


def add_spmd_axis_names(names: Iterable[Hashable] | None) -> contextlib.AbstractContextManager:
    """Record the mesh axes a vmap's `spmd_axis_name` maps onto while the block runs."""
    env = _state.env
    return _replaced(AxisEnv(env.axis_sizes, env.spmd_axis_names | frozenset(names or ()),
                             env.vma_axes))


def check_vma_axes(names: Iterable[Hashable]) -> contextlib.AbstractContextManager:
    """Type values by the axes among `names` they vary along while the block runs (JAX: the
    `_check_vma` config a shard_map with check_vma=True sets); empty `names` turns it off."""
    env = _state.env
    return _replaced(AxisEnv(env.axis_sizes, env.spmd_axis_names, frozenset(names)))


def vma_order(names: Iterable[Hashable]) -> tuple:
    """`names` in the order their axes were bound (a mesh's order), unbound ones sorted last."""
    bound = list(_state.env.axis_sizes)
    return tuple(sorted(names, key=lambda n: (0, bound.index(n)) if n in bound else (1, str(n))))


@contextlib.contextmanager
def axis_frame(axis_data: object) -> Iterator[None]:
    """Bind a vmap's axis (its AxisData: name, size, spmd_name) while the block runs."""
    # JAX: `with extend_axis_env_nd([(name, size)]), add_spmd_axis_names(spmd_name)`
    with extend_axis_env_nd([(axis_data.name, axis_data.size)]), \
            add_spmd_axis_names(axis_data.spmd_name):
        yield


def vma_axes() -> frozenset:
    """The axes values are typed by here (empty outside a shard_map with check_vma=True)."""
    return _state.env.vma_axes


def vma_str(vma: frozenset) -> str:
    """How an aval prints its varying axes: `{V:i}`, `{V:(i,j)}`, nothing when there are none."""
    if not vma:
        return ""
    names = ",".join(map(str, vma_order(vma)))
    return f"{{V:{names if len(vma) == 1 else f'({names})'}}}"


def dims_str(shape: tuple, sharding: object) -> str:
    """`8,4`; with a sharding in the type (stage 11), each split dimension says along which
    mesh axes: `8@x,4`, `8@(x,y),4`."""
    if sharding is None:
        return ",".join(map(str, shape))
    return ",".join(str(d) if s is None else f"{d}@{s}" if isinstance(s, str)
                    else f"{d}@({','.join(s)})" for d, s in zip(shape, sharding.spec, strict=True))
