"""jvp and transpose rules of gather and the scatters.

JAX: the `ad.defjvp`/`ad.primitive_transposes` lines beside gather and scatter in
jax/_src/lax/slicing.py. gather is linear in its operand: its tangent is the gather of the
tangent, its transpose a scatter-add of the cotangent into zeros (two windows that read the same
element both send it their cotangent). scatter-add is linear in operand and updates; its
transpose hands the operand the cotangent and the updates a gather of it. The indices are
integers: never differentiated.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stages.s02_tracing import lax
from stages.s02_tracing.lax import GatherDimensionNumbers, ScatterDimensionNumbers
from stages.s02_tracing.lax.scatter import scatter_window_sizes

from .ad import instantiate_zeros, is_undefined_primal, primitive_jvps, primitive_transposes
from .ad_util import Zero
from .jvp_rules import defjvp

# ------------------------------------------------------------------ gather


def _gather_jvp(g, operand, indices, *, dimension_numbers, slice_sizes, unique_indices,
                indices_are_sorted, mode, fill_value):
    # an out-of-bounds window's value is a constant fill: its tangent is 0
    return lax.gather(g, indices, dimension_numbers, slice_sizes, unique_indices=unique_indices,
                      indices_are_sorted=indices_are_sorted, mode=mode, fill_value=0)


def _as_scatter(dn: GatherDimensionNumbers) -> ScatterDimensionNumbers:
    return ScatterDimensionNumbers(
        update_window_dims=dn.offset_dims, inserted_window_dims=dn.collapsed_slice_dims,
        scatter_dims_to_operand_dims=dn.start_index_map,
        operand_batching_dims=dn.operand_batching_dims,
        scatter_indices_batching_dims=dn.start_indices_batching_dims)


def _as_gather(dn: ScatterDimensionNumbers) -> GatherDimensionNumbers:
    return GatherDimensionNumbers(
        offset_dims=dn.update_window_dims, collapsed_slice_dims=dn.inserted_window_dims,
        start_index_map=dn.scatter_dims_to_operand_dims,
        operand_batching_dims=dn.operand_batching_dims,
        start_indices_batching_dims=dn.scatter_indices_batching_dims)


# --8<-- [start:gather_transpose]
def _gather_transpose(ct, operand, indices, *, dimension_numbers, slice_sizes, unique_indices,
                      indices_are_sorted, mode, fill_value):
    """Every window sends its cotangent back where it was read from: a scatter-add."""
    zeros = lax.full(operand.aval.shape, 0, ct.dtype)
    return [lax.scatter_add(zeros, indices, ct, _as_scatter(dimension_numbers),
                            unique_indices=unique_indices,
                            indices_are_sorted=indices_are_sorted, mode=mode), None]
# --8<-- [end:gather_transpose]


defjvp(lax.gather_p, _gather_jvp, None)
primitive_transposes[lax.gather_p] = _gather_transpose

# ------------------------------------------------------------------ scatters


def _shape(x: Any) -> tuple:
    return x.aval.shape if is_undefined_primal(x) else np.shape(x)


def _scatter_params(params: dict) -> dict:
    return {k: params[k] for k in ("indices_are_sorted", "unique_indices", "mode")}


def _scatter_add_jvp(primals, tangents, **params):
    operand, indices, updates = primals
    g_operand, _, g_updates = tangents
    out = lax.scatter_add_p.bind(operand, indices, updates, **params)
    if type(g_operand) is Zero and type(g_updates) is Zero:
        return out, Zero.from_primal_value(out)
    return out, lax.scatter_add_p.bind(instantiate_zeros(g_operand), indices,
                                       instantiate_zeros(g_updates), **params)


def _window_gather(t, indices, updates, dn, mode):
    sizes = scatter_window_sizes(np.shape(t), _shape(updates), dn)
    return lax.gather(t, indices, _as_gather(dn), sizes, mode=mode, fill_value=0)


def _scatter_add_transpose(t, operand, indices, updates, *, dimension_numbers, mode, **params):
    operand_t = t if is_undefined_primal(operand) else None
    update_t = (_window_gather(t, indices, updates, dimension_numbers, mode)
                if is_undefined_primal(updates) else None)
    return [operand_t, None, update_t]


def _scatter_mul_jvp_rhs(g, x, i, y, *, dimension_numbers, indices_are_sorted, unique_indices,
                         mode, **params):
    if not unique_indices:
        raise NotImplementedError(
            "scatter_mul gradients are only implemented if `unique_indices=True`")
    return lax.mul(x, lax.scatter_add(lax.zeros_like_array(x), i, g, dimension_numbers,
                                      indices_are_sorted=indices_are_sorted,
                                      unique_indices=unique_indices, mode=mode))


def _scatter_mul_transpose(t, operand, indices, updates, *, dimension_numbers,
                           indices_are_sorted, unique_indices, mode, **params):
    operand_t = update_t = None
    if is_undefined_primal(operand):
        operand_t = lax.scatter_mul(t, indices, updates, dimension_numbers,
                                    indices_are_sorted=indices_are_sorted,
                                    unique_indices=unique_indices, mode=mode)
    if is_undefined_primal(updates):
        if not unique_indices:
            raise NotImplementedError(
                "scatter_mul gradients are only implemented if `unique_indices=True`")
        update_t = _window_gather(lax.mul(t, operand), indices, updates, dimension_numbers,
                                  mode)
    return [operand_t, None, update_t]


def _ones(x: Any, dtype: Any = None) -> Any:
    return lax.full(np.shape(x), 1, dtype or x.dtype)


def _zeros(x: Any) -> Any:
    return lax.full(np.shape(x), 0, x.dtype)


def _scatter_extremal_jvp(prim, primals, tangents, *, dimension_numbers, **params):
    """min/max: the tangent of the value that won, shared equally among ties (JAX's rule)."""
    operand, indices, updates = primals
    g_operand, _, g_updates = tangents
    dn = dimension_numbers
    out = prim.bind(operand, indices, updates, dimension_numbers=dn, **params)
    if type(g_operand) is Zero and type(g_updates) is Zero:
        return out, Zero.from_primal_value(out)
    g_operand, g_updates = instantiate_zeros(g_operand), instantiate_zeros(g_updates)
    gdn, sizes = _as_gather(dn), scatter_window_sizes(np.shape(operand), np.shape(updates), dn)
    initial = lax.gather(operand, indices, gdn, sizes)
    target = lax.gather(out, indices, gdn, sizes)
    won = lax.eq(updates, target)
    kept = lax.eq(initial, target)
    num_updates = lax.gather(lax.scatter_add(_zeros(operand), indices,
                                             lax.select(won, _ones(updates), _zeros(updates)),
                                             dn), indices, gdn, sizes)
    num_refs = lax.gather(lax.scatter_add(_zeros(operand), indices, _ones(updates), dn),
                          indices, gdn, sizes)
    updates_norm = lax.select(kept, 1.0 / (num_updates + 1), 1.0 / num_updates)
    updates_coef = lax.select(won, updates_norm, _zeros(updates))
    operand_norm = lax.select(kept, 1.0 / (num_updates + 1), _zeros(num_updates))
    operand_coef = (-1.0 + operand_norm) / num_refs
    tangent_updates = lax.gather(g_operand, indices, gdn, sizes) * operand_coef + \
        g_updates * updates_coef
    return out, lax.scatter_add(g_operand, indices, tangent_updates, dn,
                                **_scatter_params(params))


def _scatter_jvp(primals, tangents, *, update_jaxpr, update_consts, dimension_numbers,
                 indices_are_sorted, unique_indices, mode):
    """Replacement: the tangent of whichever update won each element (JAX's id trick)."""
    operand, indices, updates = primals
    g_operand, _, g_updates = tangents
    dn = dimension_numbers
    params = dict(update_jaxpr=update_jaxpr, update_consts=update_consts, dimension_numbers=dn,
                  indices_are_sorted=indices_are_sorted, mode=mode)
    if type(g_operand) is Zero and type(g_updates) is Zero:
        out = lax.scatter_p.bind(operand, indices, updates, unique_indices=unique_indices,
                                 **params)
        return out, Zero.from_primal_value(out)
    g_operand, g_updates = instantiate_zeros(g_operand), instantiate_zeros(g_updates)
    if unique_indices:
        return (lax.scatter_p.bind(operand, indices, updates, unique_indices=True, **params),
                lax.scatter_p.bind(g_operand, indices, g_updates, unique_indices=True,
                                   **params))
    # number the updates 1..n, scatter the numbers: each element learns which update won
    ids_shape = list(np.shape(updates))
    for d in dn.update_window_dims:
        ids_shape[d] = 1
    num_ids = int(np.prod(ids_shape))
    id_dtype = np.uint32  # JAX: int_dtype_for_dim(num_ids, signed=False)
    update_ids = lax.add(lax.reshape(lax.iota(id_dtype, num_ids), tuple(ids_shape)),
                         _ones(updates, id_dtype))
    scattered = lax.scatter(lax.full(np.shape(operand), 0, id_dtype), indices, update_ids, dn,
                            indices_are_sorted=indices_are_sorted,
                            unique_indices=unique_indices, mode=mode)
    gathered = lax.gather(scattered, indices, _as_gather(dn),
                          scatter_window_sizes(np.shape(operand), np.shape(updates), dn))
    untouched = lax.eq(scattered, _zeros(scattered))
    winners = lax.eq(update_ids, gathered)
    kw = dict(indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode)
    out = lax.scatter_add(lax.select(untouched, operand, _zeros(operand)), indices,
                          lax.select(winners, updates, _zeros(updates)), dn, **kw)
    tangent = lax.scatter_add(lax.select(untouched, g_operand, _zeros(g_operand)), indices,
                              lax.select(winners, g_updates, _zeros(g_updates)), dn, **kw)
    return out, tangent


def _scatter_transpose(t, operand, indices, updates, *, dimension_numbers, indices_are_sorted,
                       unique_indices, mode, **params):
    if not unique_indices:
        raise NotImplementedError("scatter transpose is only implemented where "
                                  "unique_indices=True")
    operand_t = update_t = None
    if is_undefined_primal(operand):
        operand_t = lax.scatter(t, indices, lax.full(_shape(updates), 0, t.dtype),
                                dimension_numbers, indices_are_sorted=indices_are_sorted,
                                unique_indices=True, mode=mode)
    if is_undefined_primal(updates):
        update_t = _window_gather(t, indices, updates, dimension_numbers, mode)
    return [operand_t, None, update_t]


primitive_jvps[lax.scatter_add_p] = _scatter_add_jvp
primitive_transposes[lax.scatter_add_p] = _scatter_add_transpose
defjvp(lax.scatter_mul_p, lambda g, x, i, y, **kw: lax.scatter_mul_p.bind(g, i, y, **kw), None,
       _scatter_mul_jvp_rhs)
primitive_transposes[lax.scatter_mul_p] = _scatter_mul_transpose
for _p in (lax.scatter_min_p, lax.scatter_max_p):
    primitive_jvps[_p] = lambda primals, tangents, _p=_p, **kw: _scatter_extremal_jvp(
        _p, primals, tangents, **kw)
primitive_jvps[lax.scatter_p] = _scatter_jvp
primitive_transposes[lax.scatter_p] = _scatter_transpose

# ------------------------------------------------------------------ sort


def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
    """Sort an iota along with the operands: the permutation it comes out as moves the
    tangents too (a gather, example by example along the other axes)."""
    shape = np.shape(primals[0])
    iota = lax.broadcasted_iota(np.uint32, shape, dimension)
    *outs, perm = lax.sort_p.bind(*primals, iota, dimension=dimension, is_stable=is_stable,
                                  num_keys=num_keys)
    others = tuple(np.int64(d) for d in range(len(shape)) if d != dimension)
    dn = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(dimension,),
                                start_index_map=(dimension,), operand_batching_dims=others,
                                start_indices_batching_dims=others)
    idx = lax.expand_dims(perm, (len(shape),))
    tangents_out = [t if type(t) is Zero else
                    lax.gather(t, idx, dn, (1,) * len(shape), mode="promise_in_bounds")
                    for t in tangents]
    return outs, tangents_out


primitive_jvps[lax.sort_p] = _sort_jvp
