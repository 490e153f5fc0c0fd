"""The collectives' rules: batching (the named axis is the batch axis), jvp and transpose.

JAX: the `fancy_primitive_batchers[...]` and `ad.deflinear2(...)` lines of jax/_src/lax/parallel.py.
Each batching rule asks first: is the collective over THIS vmap's axis? If not, it is an
ordinary op to push through (the batch axis renumbers its positional axes). If so, it becomes
array code on the batch axis: psum is a reduce_sum over it, all_gather moves it into place,
axis_index is an iota. Every collective is linear: its jvp applies it to the tangent, and its
transpose is its adjoint collective (psum's is psum, all_gather's is psum_scatter, ...).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from stages.s02_tracing import lax, vma
from stages.s02_tracing import numpy as jnp
from stages.s02_tracing.lax.utils import const
from stages.s04_autodiff import ad, jvp_rules

from . import parallel as P
from .batching import AxisData, BatchDim, moveaxis, not_mapped, primitive_batchers

# ------------------------------------------------------------------ psum, pmax, pmin


def _reduce(prim: Any, x: Any, axes: tuple, groups: Any = None) -> Any:
    return prim.bind(x, axes=axes, axis_index_groups=groups)


def _no_groups_in_vmap(axis_index_groups: Any, message: str) -> None:
    # JAX's vmap rules refuse groups over their own axis (only pmap honoured them)
    if axis_index_groups is not None:
        raise NotImplementedError(message)


_GROUPS_REFUSED = "axis_index_groups not supported in vmap collectives. Please open a " \
    "feature request!"


# --8<-- [start:psum_batcher]
def _batched_reduction_collective(prim: Any, if_unmapped: Any, axis_data: AxisData,
                                  vals: Sequence[Any], dims: Sequence[BatchDim], *,
                                  axes: tuple, axis_index_groups: Any) -> tuple[Any, BatchDim]:
    """psum/pmax/pmin under a vmap: over its own axis, a reduction over the batch axis."""
    (x,), (d,) = vals, dims
    ours = axis_data.name in axes
    if d is not_mapped and not ours:
        return _reduce(prim, x, axes, axis_index_groups), not_mapped
    if d is not_mapped:
        if axis_index_groups:
            raise NotImplementedError
        # every index holds the same x: psum is size * x, pmax and pmin are x itself
        rest = tuple(a for a in axes if a != axis_data.name)
        x = _reduce(prim, x, rest) if rest else x
        return if_unmapped(x, axis_data.size), not_mapped
    if not any(isinstance(a, int) for a in axes) and not ours:
        # only other names: the batch axis rides along
        return _reduce(prim, x, axes, axis_index_groups), d
    _no_groups_in_vmap(axis_index_groups, _GROUPS_REFUSED)
    # EXERCISE 5.7 (named-axis): the batch axis first; our name becomes positional axis 0
    x = moveaxis(x, d, 0)
    # a negative axis is not counted from the end: it stays, for the bind to refuse (JAX: same)
    new_axes = tuple(a + (a >= 0) if isinstance(a, int) else 0 if a == axis_data.name else a
                     for a in axes)
    return _reduce(prim, x, new_axes), (not_mapped if ours else 0)
    # END EXERCISE
# --8<-- [end:psum_batcher]


primitive_batchers[P.psum_p] = lambda *a, **k: _batched_reduction_collective(
    P.psum_p, lambda x, n: const(x, n) * x, *a, **k)
for _p in (P.pmax_p, P.pmin_p):  # x itself, as an array of ours (a numpy constant is made one)
    primitive_batchers[_p] = lambda *a, _p=_p, **k: _batched_reduction_collective(
        _p, lambda x, n: jnp.asarray(x), *a, **k)


def _psum_transpose(ct: Any, x: Any, *, axes: tuple, axis_index_groups: Any) -> list[Any]:
    """psum is psum + broadcast: positional axes broadcast back, named ones sum again."""
    pos = tuple(a for a in axes if isinstance(a, int))
    named = tuple(a for a in axes if not isinstance(a, int))
    if pos:
        shape = x.aval.shape
        kept = [i for i in range(len(shape)) if i not in pos]
        ct = lax.broadcast_in_dim(ct, shape, kept)
    return [P.psum_p.bind(ct, axes=named, axis_index_groups=axis_index_groups)]


# ------------------------------------------------------------------ typed by varying axes
# Inside shard_map(check_vma=True) (stage 11): pvary casts an invariant value to varying, and
# psum_invariant sums a varying one to invariant; each is the other's transpose (JAX:
# `_pvary_transpose_rule`, `_psum_invariant_transpose_rule`). That pair is why a gradient
# taken inside the body, for a value every device shares, comes out summed over the devices.


def _pvary_transpose(ct: Any, x: Any, *, axes: tuple) -> list[Any]:
    return [P.bind_psum_invariant(ct, axes, None)]


def _psum_invariant_transpose(ct: Any, x: Any, *, axes: tuple) -> list[Any]:
    return [vma.pvary(ct, axes)]


def _along_mesh_axes(prim: Any):
    """A batcher for a cast or sum over mesh axes: a vmap's batch axis rides along."""
    def batcher(axis_data: AxisData, vals: Sequence[Any], dims: Sequence[BatchDim], *,
                axes: tuple) -> tuple[Any, BatchDim]:
        return prim.bind(vals[0], axes=axes), dims[0]
    return batcher


# ------------------------------------------------------------------ axis_index, ppermute


def _axis_index_batcher(axis_data: AxisData, vals: Sequence[Any], dims: Sequence[BatchDim], *,
                        axis_name: Any) -> tuple[Any, BatchDim]:
    if axis_data.name not in P.as_tuple(axis_name):
        return P.axis_index_p.bind(axis_name=axis_name), not_mapped
    return lax.iota(np.int32, axis_data.size), 0  # example k's index is k


def _ppermute_batcher(axis_data: AxisData, vals: Sequence[Any], dims: Sequence[BatchDim], *,
                      axis_name: tuple, perm: tuple) -> tuple[Any, BatchDim]:
    (x,), (d,) = vals, dims
    if axis_data.name not in axis_name:
        return P.ppermute_p.bind(x, axis_name=axis_name, perm=perm), d
    rest = tuple(a for a in axis_name if a != axis_data.name)
    if rest:
        return P.ppermute_p.bind(x, axis_name=rest, perm=perm), d
    # JAX asserts these (a full permutation, over this one axis) before anything else
    assert axis_name[0] == axis_data.name, "ppermute batcher called with a wrong axis!"
    assert len(perm) == axis_data.size, "Permutation doesn't match the axis size!"
    if d is not_mapped:
        return x, d
    # example dst takes example src's value: one take along the batch axis
    source = np.zeros(axis_data.size, dtype=int)
    for src, dst in perm:
        source[dst] = src
    return jnp.take(x, source, axis=d), d


def _ppermute_transpose(ct: Any, x: Any, *, axis_name: tuple, perm: tuple) -> list[Any]:
    inverse = tuple((dst, src) for src, dst in perm)
    return [P.ppermute(ct, axis_name, inverse)]


# ------------------------------------------------------------------ all_gather, psum_scatter


def _fold(axis: int, x: Any) -> Any:
    shape = list(np.shape(x))
    shape[axis:axis + 2] = [shape[axis] * shape[axis + 1]]
    return lax.reshape(x, tuple(shape))


def _split(axis: int, factor: int, x: Any) -> Any:
    shape = list(np.shape(x))
    shape[axis:axis + 1] = [factor, shape[axis] // factor]
    return lax.reshape(x, tuple(shape))


def _over_other_names(prim: Any, x: Any, d: BatchDim, dim_param: str, dim: int,
                      params: dict) -> tuple[Any, BatchDim]:
    """all_gather or psum_scatter over names other than the vmap's: the batch axis rides along,
    and whichever of it and the collective's own axis comes later moves up by one."""
    if d is not not_mapped:
        if d <= dim:
            dim += 1
        elif not params["tiled"]:
            d += 1  # as JAX's batchers (a tiled collective keeps the rank)
    return prim.bind(x, **{dim_param: dim}, **params), d


def _all_gather_batcher(axis_data: AxisData, vals: Sequence[Any], dims: Sequence[BatchDim], *,
                        all_gather_dimension: int, axis_name: tuple, axis_index_groups: Any,
                        axis_size: int, tiled: bool) -> tuple[Any, BatchDim]:
    (x,), (d,) = vals, dims
    params = dict(axis_name=axis_name, axis_index_groups=axis_index_groups,
                  axis_size=axis_size, tiled=tiled)
    if axis_data.name not in axis_name:
        return _over_other_names(P.all_gather_p, x, d, "all_gather_dimension",
                                 all_gather_dimension, params)
    _no_groups_in_vmap(axis_index_groups, "axis_index_groups not supported in vmap")
    if len(axis_name) > 1:
        raise NotImplementedError("Please open a feature request!")
    if d is not_mapped:  # every example's x: stack copies
        shape = list(np.shape(x))
        shape.insert(all_gather_dimension, axis_size)
        keep = [i for i in range(len(shape)) if i != all_gather_dimension]
        y = lax.broadcast_in_dim(x, tuple(shape), keep)
    else:  # the batch itself, its axis moved to where the gathered axis goes: a transpose even
        # when it is there already, which makes a numpy input an array of ours (as JAX's)
        perm = [i for i in range(np.ndim(x)) if i != d]
        perm.insert(all_gather_dimension, d)
        y = lax.transpose(x, perm)
    return (_fold(all_gather_dimension, y) if tiled else y), not_mapped


def _reduce_scatter_batcher(axis_data: AxisData, vals: Sequence[Any], dims: Sequence[BatchDim],
                            *, scatter_dimension: int, axis_name: tuple, axis_index_groups: Any,
                            axis_size: int, tiled: bool) -> tuple[Any, BatchDim]:
    (x,), (d,) = vals, dims
    params = dict(axis_name=axis_name, axis_index_groups=axis_index_groups,
                  axis_size=axis_size, tiled=tiled)
    if axis_data.name not in axis_name:
        return _over_other_names(P.reduce_scatter_p, x, d, "scatter_dimension",
                                 scatter_dimension, params)
    _no_groups_in_vmap(axis_index_groups, "axis_index_groups not supported in vmap")
    if len(axis_name) > 1:
        raise NotImplementedError("Please open a feature request!")
    # the sum over examples; example k keeps slice k of it, so slices become the batch
    y = x * const(x, axis_size) if d is not_mapped else lax.reduce_sum(x, (d,))
    if tiled:
        y = _split(scatter_dimension, axis_size, y)
    return y, scatter_dimension


def _all_gather_transpose(ct: Any, x: Any, *, all_gather_dimension: int, axis_name: tuple,
                          axis_index_groups: Any, axis_size: int, tiled: bool) -> list[Any]:
    return [P.psum_scatter(ct, axis_name, scatter_dimension=all_gather_dimension,
                           axis_index_groups=axis_index_groups, tiled=tiled)]


def _reduce_scatter_transpose(ct: Any, x: Any, *, axis_name: tuple, scatter_dimension: int,
                              axis_index_groups: Any, axis_size: int, tiled: bool) -> list[Any]:
    return [P.all_gather(ct, axis_name, axis=scatter_dimension,
                         axis_index_groups=axis_index_groups, tiled=tiled)]


# ------------------------------------------------------------------ all_to_all


def _all_to_all_batcher(axis_data: AxisData, vals: Sequence[Any], dims: Sequence[BatchDim], *,
                        axis_name: Any, split_axis: int, concat_axis: int,
                        axis_index_groups: Any, tiled: bool) -> tuple[Any, BatchDim]:
    _no_groups_in_vmap(axis_index_groups, "Please open a feature request!")
    (x,), (d,) = vals, dims
    names = P.as_tuple(axis_name)
    params = dict(axis_name=axis_name, axis_index_groups=None, tiled=tiled)
    if axis_data.name not in names:
        if d is not_mapped:
            return P.all_to_all_p.bind(x, split_axis=split_axis, concat_axis=concat_axis,
                                       **params), d
        return P.all_to_all_p.bind(x, split_axis=split_axis + (d <= split_axis),
                                   concat_axis=concat_axis + (d <= concat_axis), **params), d
    size = axis_data.size
    if d is not_mapped:
        x, d = lax.broadcast(x, (size,)), 0
    if len(names) > 1:
        pos = names.index(axis_data.name)
        return _all_to_all_among_names(x, d, size, names[:pos], names[pos + 1:], split_axis,
                                       concat_axis, tiled)
    if split_axis == concat_axis:
        # chunk k of example j goes to example k, in slot j: swap the chunk and batch axes
        axis = split_axis + (d <= split_axis)
        x = _split(axis, size, x)
        batch = d + (axis <= d)
        perm = list(range(np.ndim(x)))
        perm[axis], perm[batch] = perm[batch], perm[axis]
        return _fold(axis, lax.transpose(x, perm)), d
    x = _fold(concat_axis, moveaxis(x, d, concat_axis))
    return _split(split_axis, size, x), split_axis


def _all_to_all_among_names(x: Any, d: int, size: int, major: tuple, minor: tuple,
                            split_axis: int, concat_axis: int, tiled: bool) -> tuple[Any, int]:
    """all_to_all over names (..major, ours, minor..), the names' devices in row-major order
    (JAX: _all_to_all_batched_collective). Three leading axes collect the chunks: the major
    names' all_to_all fills the first, our batch axis is the second, the minor names' fill the
    third; folded together they are the gathered axis, moved to `concat_axis`."""
    x = lax.expand_dims(moveaxis(x, d, 0), (0, 2))  # (1, batch, 1, ...)
    split_axis, concat_axis = split_axis + 3, concat_axis + 3
    params = dict(axis_index_groups=None, tiled=tiled)
    if major:
        x = P.all_to_all_p.bind(x, axis_name=major, split_axis=split_axis, concat_axis=0,
                                **params)
    x = _split(split_axis, size, x)  # our chunks: example k takes chunk k, our new batch axis
    out_d = split_axis
    concat_axis += split_axis <= concat_axis
    split_axis += 1
    if minor:
        x = P.all_to_all_p.bind(x, axis_name=minor, split_axis=split_axis, concat_axis=2,
                                **params)
    x = _fold(0, _fold(0, x))  # (major * batch * minor, ...): every chunk, in device order
    concat_axis, out_d = concat_axis - 2, out_d - 2
    x = _fold(concat_axis - 1, moveaxis(x, 0, concat_axis - 1))
    return x, out_d - 1


def _all_to_all_transpose(ct: Any, x: Any, *, axis_name: Any, split_axis: int,
                          concat_axis: int, axis_index_groups: Any, tiled: bool) -> list[Any]:
    return [P.all_to_all_p.bind(ct, axis_name=axis_name, split_axis=concat_axis,
                                concat_axis=split_axis, axis_index_groups=axis_index_groups,
                                tiled=tiled)]


# ------------------------------------------------------------------ registration

primitive_batchers[P.axis_index_p] = _axis_index_batcher
primitive_batchers[P.ppermute_p] = _ppermute_batcher
primitive_batchers[P.all_gather_p] = _all_gather_batcher
primitive_batchers[P.reduce_scatter_p] = _reduce_scatter_batcher
primitive_batchers[P.all_to_all_p] = _all_to_all_batcher

# every collective is linear in its operand (JAX: ad.deflinear2); pmax and pmin are not, and
# JAX gives them no jvp rule
for _p in (P.psum_p, P.ppermute_p, P.all_gather_p, P.reduce_scatter_p, P.all_to_all_p):
    jvp_rules.deflinear(_p)
ad.primitive_transposes[P.psum_p] = _psum_transpose
jvp_rules.deflinear(P.psum_invariant_p)
for _p in (vma.pvary_p, P.psum_invariant_p):
    primitive_batchers[_p] = _along_mesh_axes(_p)
ad.primitive_transposes[vma.pvary_p] = _pvary_transpose
ad.primitive_transposes[P.psum_invariant_p] = _psum_invariant_transpose
ad.primitive_transposes[P.ppermute_p] = _ppermute_transpose
ad.primitive_transposes[P.all_gather_p] = _all_gather_transpose
ad.primitive_transposes[P.reduce_scatter_p] = _reduce_scatter_transpose
ad.primitive_transposes[P.all_to_all_p] = _all_to_all_transpose
