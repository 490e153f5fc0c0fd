"""Collectives over named axes: psum, pmean, pmax, pmin, all_gather, psum_scatter, all_to_all,
ppermute, axis_index, axis_size.

JAX: jax/_src/lax/parallel.py. A collective names an axis ('i') that some map bound: a vmap with
`axis_name='i'` here, shard_map's mesh axes later (stage 11 registers its own rules for these
same primitives). Under vmap the named axis IS the batch axis, so the batching rule turns the
collective into ordinary array code: psum over 'i' is a reduce_sum over the batch axis. Axes may
also be positional (ints), which the primitives reduce like reduce_sum. The rules (batching, jvp,
transpose) are in parallel_rules.py.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from stages.s01_pytrees import tree_map
from stages.s02_tracing import core, dtypes, lax, vma
from stages.s02_tracing.axis_env import get_axis_env
from stages.s02_tracing.lax.reductions import reduce_op_shape_rule
from stages.s02_tracing.lax.utils import canonicalize_axis, const

AxisName = Hashable

__all__ = ["all_gather", "all_gather_p", "all_to_all", "all_to_all_p", "axis_index",
           "axis_index_p", "axis_size", "pcast", "pmax", "pmax_p", "pmean", "pmin", "pmin_p",
           "ppermute", "ppermute_p", "psum", "psum_invariant_p", "psum_p", "psum_scatter",
           "reduce_scatter_p"]


def as_tuple(axis_name: Any) -> tuple:
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _check_axis_names(axes: Sequence[Any], api_name: str) -> None:
    """Every named (non-int) axis must be bound by an enclosing map: JAX's NameError if not."""
    env = get_axis_env()
    for name in axes:
        if not isinstance(name, int) and not env.axis_exists(name):
            raise NameError(f"Found an unbound axis name: {name}. To fix this, please call "
                            f"{api_name} under `jax.shard_map`.")


def _index_groups(axes: tuple, axis_index_groups: Any) -> tuple | None:
    """Groups of indices that reduce among themselves, checked and made hashable (a param)."""
    if axis_index_groups is None:
        return None
    if any(isinstance(a, int) for a in axes):
        raise ValueError("axis_index_groups only supported for sums over just named axes")
    every = range(sum(len(group) for group in axis_index_groups))
    if {i for group in axis_index_groups for i in group} != set(every):
        raise ValueError("axis_index_groups must cover all indices exactly once")
    return tuple(map(tuple, axis_index_groups))


# --------------------------------------------------------------------- the API (traceables)


# --8<-- [start:psum]
def psum(x: Any, axis_name: AxisName | Sequence[AxisName], *,
         axis_index_groups: Any = None) -> Any:
    """The sum of x over every index of the named axis (or axes); the same result everywhere
    (within each of `axis_index_groups`, when given)."""
    axes = as_tuple(axis_name)
    if not axes:
        return x
    groups = _index_groups(axes, axis_index_groups)

    def bind(leaf: Any) -> Any:
        if dtypes.dtype(leaf) == np.bool_:
            leaf = lax.convert_element_type(leaf, np.int32)
        if not isinstance(leaf, core.Tracer):
            # a value no map varies (a constant): the sum over n copies is n times it
            named = [a for a in axes if not isinstance(a, int)]
            pos = [canonicalize_axis(a, np.ndim(leaf)) for a in axes if isinstance(a, int)]
            size = len(groups[0]) if groups else \
                math.prod(get_axis_env().axis_size(name) for name in named)
            return const(leaf, size) * (lax.reduce_sum(leaf, pos) if pos else leaf)
        if _typed(axes):  # in shard_map(check_vma=True): a sum that makes the value invariant
            return bind_psum_invariant(leaf, axes, groups)
        return psum_p.bind(leaf, axes=axes, axis_index_groups=groups)
    return tree_map(bind, x)
# --8<-- [end:psum]


def pcast(x: Any, axis_name: AxisName | Sequence[AxisName], *, to: str) -> Any:
    """Change which mesh axes x is typed as varying along (inside shard_map, check_vma=True).
    Ours has only JAX's invariant -> varying cast (`pvary`); JAX also casts to 'reduced' and
    'unreduced' types, which ours lacks."""
    if isinstance(axis_name, (set, frozenset)):
        raise TypeError(f"{axis_name=} must be a tuple or a str. Got {axis_name}")
    axes = axis_name if isinstance(axis_name, tuple) else (axis_name,)
    if not axis_name:
        return x
    if to not in ("unreduced", "reduced", "varying"):
        raise ValueError("Got unexpected `to` value. Allowed `to` values are:"
                         f" {set(['unreduced', 'reduced', 'varying'])}")
    if to != "varying":
        raise NotImplementedError(f"pcast to {to!r}: ours has no reduced or unreduced types")
    return tree_map(lambda leaf: vma.pvary(leaf, axes), x)


def _typed(axes: tuple) -> bool:
    """Are values typed by their variation along these axes here (stage 11's check_vma)?"""
    typed = get_axis_env().vma_axes
    return bool(typed) and all(a in typed for a in axes)


def bind_psum_invariant(leaf: Any, axes: tuple, groups: Any) -> Any:
    """psum where values carry their varying axes (JAX's `bind_psum_invariant`): the operand is
    first made to vary along every summed axis, then `psum_invariant` sums it and its result
    varies along none of them. It takes no axis_index_groups (JAX raises a bare
    NotImplementedError too)."""
    if groups is not None:
        raise NotImplementedError
    return psum_invariant_p.bind(insert_collective_pvary(axes, leaf), axes=axes)


def insert_collective_pvary(axes: tuple, leaf: Any) -> Any:
    """Where values carry their varying axes (shard_map, check_vma=True), the operand of a
    collective is first made to vary along every named axis it goes over (JAX's
    `insert_collective_pvary`): the same value on each device, now typed as differing. It costs
    nothing when run, but its transpose is a psum, so a gradient reaching only some devices'
    copies is summed back into the one invariant input."""
    named = tuple(a for a in axes if not isinstance(a, int))
    if not named or not _typed(named):
        return leaf
    missing = tuple(a for a in named if a not in core.get_aval(leaf).vma)
    return vma.pvary(leaf, missing) if missing else leaf


def pmean(x: Any, axis_name: AxisName | Sequence[AxisName], *,
          axis_index_groups: Any = None) -> Any:
    """The mean over the named axis: psum divided by the axis (or group) size."""
    x = psum(x, axis_name, axis_index_groups=axis_index_groups)
    n = _axis_size(axis_name, axis_index_groups)
    return tree_map(lambda v: v / n, x)


def _reducer(prim: core.Primitive):
    def reduce(x: Any, axis_name: AxisName | Sequence[AxisName], *,
               axis_index_groups: Any = None) -> Any:
        axes = as_tuple(axis_name)
        groups = _index_groups(axes, axis_index_groups)
        return tree_map(lambda leaf: prim.bind(insert_collective_pvary(axes, leaf), axes=axes,
                                               axis_index_groups=groups), x)
    return reduce


def axis_index(axis_name: AxisName | Sequence[AxisName]) -> Any:
    """Which index of the named axis this is (0 .. size-1); for several names, row-major."""
    if not isinstance(axis_name, (tuple, list)):
        return axis_index_p.bind(axis_name=axis_name)
    index, inner = lax.full((), 0, np.int32), 1
    for name in reversed(axis_name):
        index = index + axis_index(name) * inner
        inner *= axis_size(name)
    return index


def axis_size(axis_name: AxisName | Sequence[AxisName]) -> int:
    """The size of the named axis (a Python int: psum of 1, folded)."""
    return psum(1, axis_name)


def _axis_size(axis_name: Any, axis_index_groups: Any = None) -> int:
    """The size of one group of indices: the whole axis unless groups are given."""
    return psum(1, axis_name, axis_index_groups=axis_index_groups)


def all_gather(x: Any, axis_name: AxisName | Sequence[AxisName], *,
               axis_index_groups: Any = None, axis: int = 0, tiled: bool = False) -> Any:
    """Every index's x, stacked along a new axis `axis` (concatenated there if `tiled`)."""
    axis_name = as_tuple(axis_name)
    if not axis_name:
        return x
    groups = None if axis_index_groups is None else tuple(map(tuple, axis_index_groups))
    size = _axis_size(axis_name, groups)

    def bind(leaf: Any) -> Any:
        dim = canonicalize_axis(axis, np.ndim(leaf) if tiled else np.ndim(leaf) + 1)
        leaf = insert_collective_pvary(axis_name, leaf)
        return all_gather_p.bind(leaf, all_gather_dimension=dim, axis_name=axis_name,
                                 axis_index_groups=groups, axis_size=size, tiled=tiled)
    return tree_map(bind, x)


def psum_scatter(x: Any, axis_name: AxisName | Sequence[AxisName], *,
                 scatter_dimension: int = 0, axis_index_groups: Any = None,
                 tiled: bool = False) -> Any:
    """psum, of which index k keeps only slice k along `scatter_dimension`."""
    axis_name = as_tuple(axis_name)
    if not axis_name:
        return x
    size = _axis_size(axis_name, axis_index_groups)
    groups = None if axis_index_groups is None else tuple(map(tuple, axis_index_groups))
    return tree_map(lambda leaf: reduce_scatter_p.bind(
        insert_collective_pvary(axis_name, leaf), axis_name=axis_name,
        scatter_dimension=scatter_dimension, axis_index_groups=groups, axis_size=size,
        tiled=tiled), x)


def all_to_all(x: Any, axis_name: AxisName, split_axis: int, concat_axis: int, *,
               axis_index_groups: Any = None, tiled: bool = False) -> Any:
    """Split x's `split_axis` across the named axis, gathering the named axis at `concat_axis`."""
    groups = None if axis_index_groups is None else tuple(map(tuple, axis_index_groups))

    def bind(x: Any, split_axis: int = split_axis, concat_axis: int = concat_axis) -> Any:
        group_size = _axis_size(axis_name, groups)
        if tiled:
            if np.shape(x)[split_axis] % group_size != 0:
                raise ValueError(f"The size of all_to_all split_axis ({np.shape(x)[split_axis]}) "
                                 "has to be divisible by the size of the named axis "
                                 f"{axis_name} ({group_size})")
        else:
            if group_size != np.shape(x)[split_axis]:
                raise ValueError("all_to_all requires the size of the mapped axis axis_name to "
                                 "equal x.shape[split_axis], but they are "
                                 f"{group_size} and {np.shape(x)[split_axis]} respectively.")
            # the primitive keeps the rank: a size-1 axis receives the gathered one
            if split_axis < concat_axis:
                concat_axis += 1
                x = lax.expand_dims(x, (concat_axis,))
            elif concat_axis < split_axis:
                x = lax.expand_dims(x, (concat_axis,))
                split_axis += 1
        x = insert_collective_pvary(as_tuple(axis_name), x)
        out = all_to_all_p.bind(x, split_axis=split_axis, concat_axis=concat_axis,
                                axis_name=axis_name, axis_index_groups=groups, tiled=tiled)
        if not tiled and split_axis != concat_axis:
            out = lax.squeeze(out, (split_axis,))
        return out
    return tree_map(bind, x)


def ppermute(x: Any, axis_name: AxisName | Sequence[AxisName],
             perm: Sequence[tuple[int, int]]) -> Any:
    """Send index src's x to index dst for each (src, dst) in perm; an index nobody sends to
    gets zeros."""
    axis_name = as_tuple(axis_name)
    perm = tuple(tuple(p) for p in perm)
    return tree_map(lambda leaf: ppermute_p.bind(insert_collective_pvary(axis_name, leaf),
                                                 axis_name=axis_name, perm=perm), x)


# --------------------------------------------------------------------- the primitives


def _positional_axes(aval: core.ShapedArray, axes: Sequence[Any]) -> tuple[int, ...]:
    """The int axes of a collective, checked as lax's reductions check theirs (JAX: the same
    shape rule): a negative one is refused, not counted from the end."""
    pos = tuple(a for a in axes if isinstance(a, int))
    reduce_op_shape_rule(aval, axes=pos)
    return pos


def _allreduce_abstract_eval(api_name: str, aval: core.ShapedArray, *, axes: tuple,
                             axis_index_groups: Any) -> core.ShapedArray:
    _check_axis_names(axes, api_name)
    pos = _positional_axes(aval, axes)
    return aval.update(shape=tuple(d for i, d in enumerate(aval.shape) if i not in pos))


def _allreduce_impl(reducer: Any, api_name: str, x: np.ndarray, *, axes: tuple,
                    axis_index_groups: Any) -> np.ndarray:
    # only positional axes can be reduced with nothing mapped; a bound name has a map to do it
    _check_axis_names(axes, api_name)
    if not all(isinstance(a, int) for a in axes):
        raise NotImplementedError("a collective over a named axis runs only under the map "
                                  "that binds the name")
    pos = _positional_axes(core.get_aval(x), axes)
    return np.asarray(reducer(x, pos)) if pos else np.asarray(x)


def _allreduce_primitive(name: str, reducer: Any) -> core.Primitive:
    prim = core.Primitive(name)
    # JAX checks pmax/pmin names in psum's words: its abstract eval is psum's
    prim.def_impl(lambda x, **p: _allreduce_impl(reducer, "psum", x, **p))
    prim.def_abstract_eval(lambda aval, **p: _allreduce_abstract_eval("psum", aval, **p))
    return prim


# lax's reductions: an empty axis gives XLA's identity (0; -inf or +inf, or an int's bound)
psum_p = _allreduce_primitive("psum", lax.reduce_sum)


def _psum_invariant_abstract_eval(aval: core.ShapedArray, *, axes: tuple) -> core.ShapedArray:
    _check_axis_names(axes, "psum")
    if not set(axes) & aval.vma:
        raise ValueError(
            "psum is a variant->invariant collective. This means that the axis names "
            "mentioned in `axes` passed to `psum` must be present in "
            f"`jax.typeof(inp).vma`. Got axes={axes} and jax.typeof(inp).vma={aval.vma}")
    return aval.update(vma=aval.vma - frozenset(axes))


psum_invariant_p = core.Primitive("psum_invariant")
psum_invariant_p.def_impl(lambda x, *, axes: psum_p.impl(x, axes=axes, axis_index_groups=None))
psum_invariant_p.def_abstract_eval(_psum_invariant_abstract_eval)
pmax_p = _allreduce_primitive("pmax", lax.reduce_max)
pmin_p = _allreduce_primitive("pmin", lax.reduce_min)
pmax = _reducer(pmax_p)
pmax.__name__, pmax.__doc__ = "pmax", "The maximum of x over every index of the named axis."
pmin = _reducer(pmin_p)
pmin.__name__, pmin.__doc__ = "pmin", "The minimum of x over every index of the named axis."


def _unmapped_only(api_name: str):
    """An impl for collectives that only a map can run: check the names, else refuse."""
    def impl(*args: Any, axis_name: Any, **params: Any) -> Any:
        _check_axis_names(as_tuple(axis_name), api_name)
        raise NotImplementedError(f"Evaluation rule for '{api_name}' not implemented")
    return impl


def _ppermute_abstract_eval(aval: core.ShapedArray, *, axis_name: tuple, perm: tuple
                            ) -> core.ShapedArray:
    _check_axis_names(axis_name, "ppermute")
    return aval


ppermute_p = core.Primitive("ppermute")
ppermute_p.def_abstract_eval(_ppermute_abstract_eval)  # JAX: no impl at all


def _all_gather_abstract_eval(aval: core.ShapedArray, *, all_gather_dimension: int,
                              axis_name: tuple, axis_index_groups: Any, axis_size: int,
                              tiled: bool) -> core.ShapedArray:
    _check_axis_names(axis_name, "all_gather")
    shape = list(aval.shape)
    if tiled:
        shape[all_gather_dimension] *= axis_size
    else:
        shape.insert(all_gather_dimension, axis_size)
    return aval.update(shape=tuple(shape))


all_gather_p = core.Primitive("all_gather")
all_gather_p.def_impl(_unmapped_only("all_gather"))
all_gather_p.def_abstract_eval(_all_gather_abstract_eval)


def _reduce_scatter_abstract_eval(aval: core.ShapedArray, *, axis_name: tuple,
                                  scatter_dimension: int, axis_index_groups: Any,
                                  axis_size: int, tiled: bool) -> core.ShapedArray:
    _check_axis_names(axis_name, "reduce_scatter")
    shape = list(aval.shape)
    size = shape[scatter_dimension]
    if tiled:
        if size % axis_size != 0:
            raise ValueError(f"tiled reduce_scatter operand scatter dimension size {size} must "
                             f"be divisible by shard_count {axis_size}")
        shape[scatter_dimension] = size // axis_size
    else:
        if size != axis_size:
            raise ValueError(f"reduce_scatter operand scatter dimension size {size} must match "
                             f"shard count {axis_size}")
        del shape[scatter_dimension]
    return aval.update(shape=tuple(shape))


reduce_scatter_p = core.Primitive("reduce_scatter")
reduce_scatter_p.def_impl(_unmapped_only("reduce_scatter"))
reduce_scatter_p.def_abstract_eval(_reduce_scatter_abstract_eval)


def _all_to_all_abstract_eval(aval: core.ShapedArray, *, axis_name: Any, split_axis: int,
                              concat_axis: int, axis_index_groups: Any, tiled: bool
                              ) -> core.ShapedArray:
    names = as_tuple(axis_name)
    _check_axis_names(names, "all_to_all")
    size = math.prod(get_axis_env().axis_size(n) for n in names) if axis_index_groups is None \
        else len(axis_index_groups[0])
    shape = list(aval.shape)
    shape[split_axis] //= size
    shape[concat_axis] *= size
    return aval.update(shape=tuple(shape), weak_type=False)


def _all_to_all_impl(*args: Any, **params: Any) -> Any:
    raise RuntimeError("all_to_all must be used within a mapped context like vmap or "
                       "shard_map.")


all_to_all_p = core.Primitive("all_to_all")
all_to_all_p.def_impl(_all_to_all_impl)
all_to_all_p.def_abstract_eval(_all_to_all_abstract_eval)


def _axis_index_abstract_eval(*, axis_name: Any) -> core.ShapedArray:
    _check_axis_names(as_tuple(axis_name), "axis_index")
    return core.ShapedArray((), np.dtype(np.int32))


axis_index_p = core.Primitive("axis_index")
axis_index_p.def_impl(_unmapped_only("axis_index"))
axis_index_p.def_abstract_eval(_axis_index_abstract_eval)
