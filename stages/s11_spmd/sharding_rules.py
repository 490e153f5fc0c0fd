"""The sharding rules: for each primitive, its result's layout from its operands' layouts.

JAX: the `sharding_rule` beside each primitive in jax/_src/lax/lax.py and slicing.py
(`broadcasting_sharding_rule`, `_dot_general_sharding_rule`, `_reduce_sum_sharding_rule`,
`_reshape_sharding_rule`, `_get_sharding_for_varying_out_shape`, ...). A rule is to a layout
what a shape rule is to a shape: it reads the operands' types (on a mesh with Explicit axes,
sharding_in_types.py) and says the result's, or refuses with JAX's message when no layout
follows without moving data the program did not ask to move.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

from stages.s02_tracing import core
from stages.s02_tracing import lax as lx
from stages.s02_tracing.lax.utils import elementwise_prims
from stages.s04_autodiff.ad_util import add_jaxvals_p, stop_gradient_p

from .partition_spec import PartitionSpec


class ShardingTypeError(Exception):
    """Operands whose shardings a rule cannot combine (JAX: core.ShardingTypeError)."""


def spec_of(aval: Any) -> tuple:
    """The entries of aval's sharding, one per dimension; all None when it has none."""
    s = getattr(aval, "sharding", None)
    return tuple(s.spec) if s is not None else (None,) * len(aval.shape)


# ------------------------------------------------------------------ the rules

# primitive -> rule(*avals, **params) -> the result's spec (a tuple, one entry per dimension),
# a NamedSharding when the params name it, or None: untyped; a list for several results
sharding_rules: dict[core.Primitive, Any] = {}


# --8<-- [start:broadcasting]
def broadcasting_sharding_rule(name: str, *avals: Any, **params: Any) -> tuple:
    """Elementwise: each dimension split as the operands split it (a rank-0 operand, or a
    size-1 unsplit dimension, broadcasts); operands that disagree are an error."""
    ranked = [a for a in avals if a.shape]
    if not ranked:
        return ()
    specs = [spec_of(a) for a in ranked]
    out = []
    for d in range(len(ranked[0].shape)):
        split = {s[d] for s, a in zip(specs, ranked, strict=True)
                 if not (a.shape[d] == 1 and s[d] is None)} - {None}
        if len(split) > 1:
            raise ShardingTypeError(f"{name} got incompatible shardings for broadcasting: "
                                    f"{', '.join(map(str, specs))}.")
        out.append(split.pop() if split else None)
    return tuple(out)
# --8<-- [end:broadcasting]


def _check_match(left: tuple, right: tuple, msg: str) -> None:
    for a, b in zip(left, right, strict=True):
        if a is not None and b is not None and a != b:
            raise ShardingTypeError(msg)


def _dot_general_rule(lhs: Any, rhs: Any, *, dimension_numbers: Any, out_sharding: Any,
                      **_: Any) -> Any:
    if out_sharding is not None:
        return out_sharding
    (lc, rc), (lb, rb) = dimension_numbers
    ls, rs = spec_of(lhs), spec_of(rhs)
    lcs, rcs = tuple(ls[i] for i in lc), tuple(rs[i] for i in rc)
    lbs, rbs = tuple(ls[i] for i in lb), tuple(rs[i] for i in rb)
    _check_match(lbs, rbs, "dot_general requires lhs batch dimensions and rhs batch dimensions "
                 f"to have the consistent sharding, got {lbs} and {rbs}.")
    _check_match(lcs, rcs, "dot_general requires contracting dimensions to have consistent "
                 f"sharding, got {lcs} and {rcs}.")
    if any(a is not None and b is not None for a, b in zip(lcs, rcs, strict=True)):
        raise ShardingTypeError(
            "Contracting dimensions are sharded and it is ambiguous how the output should be "
            "sharded. Please specify the output sharding via the `out_sharding` parameter. "
            f"Got lhs_contracting_spec={lcs} and rhs_contracting_spec={rcs}")
    free_l = tuple(s for i, s in enumerate(ls) if i not in (*lc, *lb))
    free_r = tuple(s for i, s in enumerate(rs) if i not in (*rc, *rb))
    return lbs + free_l + free_r


def _reduce_rule(x: Any, *, axes: Sequence[int], out_sharding: Any = None, **_: Any) -> Any:
    """A reduction drops the reduced dimensions' entries: summing a split dimension leaves a
    value every device holds whole (the partitioner adds the all-reduce)."""
    if out_sharding is not None:
        return out_sharding
    return tuple(s for i, s in enumerate(spec_of(x)) if i not in set(axes))


def _broadcast_in_dim_rule(x: Any, *, shape: Sequence[int], broadcast_dimensions: Sequence[int],
                           sharding: Any) -> Any:
    if sharding is not None:
        return sharding
    out: list[Any] = [None] * len(shape)
    for entry, d in zip(spec_of(x), broadcast_dimensions, strict=True):
        out[d] = entry
    return tuple(out)


def _reshape_error(x: Any, new_sizes: Sequence[int]) -> ShardingTypeError:
    return ShardingTypeError(
        "This reshape is not supported. Please specify the sharding of the output via the "
        f"`out_sharding` argument of jax.lax.reshape. Got operand type: {x}, new sizes: "
        f"{tuple(new_sizes)}")


class _Unmatched(Exception):
    """More than one dimension changes: no rule types that reshape."""


def split_on_one_axis(old: Sequence[int], new: Sequence[int]) -> list[Any] | None:
    """If `new` is `old` with one dimension split into several (other dimensions in place,
    trailing 1s aside): per old dimension, its size or the list of sizes it became; else None
    (JAX: _split_on_one_axis, whose matching this follows step for step)."""
    if len(new) <= len(old):
        return None
    trailing = 0
    while old[-1] == 1 and new[-1] == 1:
        old, new, trailing = old[:-1], new[:-1], trailing + 1
    i, j, splits, out = 0, 0, 0, []
    while j < len(new):
        if old[i] == new[j]:
            out.append(old[i])
        else:
            splits += 1
            if splits > 1:
                raise _Unmatched
            part, nj = [new[j]], j + 1
            while math.prod(part) != old[i] or (nj < len(new) and new[nj] == 1):
                if math.prod(part) > old[i]:
                    return None
                if math.prod(part) == old[i] and i + 1 < len(old) and new[nj] == old[i + 1]:
                    break
                j += 1
                if j >= len(new):
                    return None
                part.append(new[j])
                nj += 1
            out.append(part)
        i, j = i + 1, j + 1
    if i != len(old):  # old dimensions left over (JAX fails an assert here)
        raise _Unmatched
    return out + [1] * trailing


def _split_partitions(x: Any, new_sizes: Sequence[int], axes: Sequence[str],
                      sizes: Sequence[int]) -> list[tuple[str, ...]]:
    """`axes` (major first) handed to the new dimensions `sizes` in order, each taking axes
    while it still divides; a dimension an axis does not divide cannot be typed."""
    pending, out = list(axes), []
    for size in sizes:
        mine: list[str] = []
        while size > 1 and pending:
            size, rem = divmod(size, x.sharding.mesh.shape[pending[0]])
            if rem:
                raise _reshape_error(x, new_sizes)
            mine.append(pending.pop(0))
        out.append(tuple(mine))
    if pending:
        raise _reshape_error(x, new_sizes)
    return out


def _reshape_rule(x: Any, *, new_sizes: Sequence[int], dimensions: Any, sharding: Any) -> Any:
    """Three reshapes keep a typed layout, as in JAX: adding or dropping 1s; splitting one
    dimension (its mesh axes go to the leading new dimensions they divide); merging several
    into one (allowed when the split ones lead). Any other needs `out_sharding`."""
    if sharding is not None:
        return sharding
    spec, shape, new_sizes = spec_of(x), tuple(x.shape), tuple(new_sizes)
    if all(s is None for s in spec):
        return (None,) * len(new_sizes)
    if [d for d in shape if d != 1] == [d for d in new_sizes if d != 1]:
        kept = iter(s for d, s in zip(shape, spec, strict=True) if d != 1)
        return tuple(None if n == 1 else next(kept) for n in new_sizes)
    try:
        split = split_on_one_axis(shape, new_sizes)
        merge = None if split is not None or len(new_sizes) >= len(shape) else \
            split_on_one_axis(new_sizes, shape)
    except _Unmatched:
        raise _reshape_error(x, new_sizes) from None
    if split is None and merge is None:
        raise _reshape_error(x, new_sizes)
    out: list[Any] = []
    if split is not None:
        for part, entry in zip(split, spec, strict=True):
            if not isinstance(part, list):
                out.append(entry)
            else:
                axes = PartitionSpec(entry).axes_of(0)
                if axes and dimensions is not None:
                    raise _reshape_error(x, new_sizes)
                out += _split_partitions(x, new_sizes, axes, part) if axes else \
                    [None] * len(part)
        return tuple(out)
    entries = iter(spec)
    for size, part in zip(new_sizes, merge, strict=True):
        if not isinstance(part, list):
            out.append(next(entries))
            continue
        axes = [a for e in [next(entries) for _ in part] for a in
                (e if isinstance(e, tuple) else (e,))]
        while axes and axes[-1] is None:
            axes.pop()
        if None in axes or (axes and dimensions is not None):
            raise _reshape_error(x, new_sizes)
        out += _split_partitions(x, new_sizes, axes, [size]) if axes else [None]
    return tuple(out)


def _transpose_rule(x: Any, *, permutation: Sequence[int]) -> tuple:
    spec = spec_of(x)
    return tuple(spec[p] for p in permutation)


def _squeeze_rule(x: Any, *, dimensions: Sequence[int]) -> tuple:
    return tuple(s for i, s in enumerate(spec_of(x)) if i not in set(dimensions))


def _cumulative_rule(x: Any, *, axis: int, reverse: bool) -> tuple:
    """A running sum along a split dimension would need the other devices' partial sums."""
    if spec_of(x)[axis] is not None:
        raise ShardingTypeError("Input should be unsharded over the axis being reduced. Got "
                                f"input type={x} and axis={axis}")
    return spec_of(x)


def _for_varying_out_shape(name: str, x: Any, shape: Sequence[int]) -> tuple:
    """A result of another shape keeps the operand's layout, if each changed split dimension
    still divides by its mesh axes (JAX: _get_sharding_for_varying_out_shape)."""
    spec = spec_of(x)
    for old, new, entry in zip(x.shape, shape, spec, strict=True):
        parts = math.prod(x.sharding.mesh.shape[a] for a in PartitionSpec(entry).axes_of(0))
        if old != new and entry is not None and new % parts:
            raise ShardingTypeError(
                f"{name} on sharded dims where out dim ({new}) is not divisible by mesh "
                f"axes ({parts}) with spec ({entry}) is not implemented. Got input "
                f"type={x.str_short(True)} and output shape={tuple(shape)}")
    return spec


def _varying_shape_rule(name: str, prim: core.Primitive) -> Any:
    """Slices and pads keep the operand's layout (see _for_varying_out_shape)."""
    return lambda x, *args, **params: _for_varying_out_shape(
        name, x, prim.shape_rule(x, *args, **params))


def _split_rule(x: Any, *, sizes: Sequence[int], axis: int) -> list[tuple]:
    """Each piece keeps the operand's layout, as a slice's result does."""
    return [_for_varying_out_shape("split", x, shape)
            for shape in lx.split_p.shape_rule(x, sizes=sizes, axis=axis)]


def _tile_rule(x: Any, *, reps: Sequence[int]) -> tuple:
    """The operand's layout, if no axis it repeats is split (a copy would need the others)."""
    for i, (r, entry) in enumerate(zip(reps, spec_of(x), strict=True)):
        if r != 1 and entry is not None:
            raise ShardingTypeError(f"Operand cannot be sharded on dimension {i} when the tiling "
                                    f"is non-trivial. Got input type: {x} with reps: {reps}")
    return spec_of(x)


def _concatenate_rule(*xs: Any, dimension: int) -> tuple:
    typed = {a.sharding for a in xs if a.sharding is not None}
    if len(typed) > 1:
        raise ShardingTypeError("All operands should have the same sharding. Got shardings "
                                f"{', '.join(str(a.sharding) for a in xs)}")
    return tuple(typed.pop().spec)


def _convert_element_type_rule(x: Any, *, sharding: Any, **_: Any) -> Any:
    return sharding if sharding is not None else spec_of(x)


def _bitcast_convert_type_rule(x: Any, *, new_dtype: Any) -> tuple:
    """A narrower dtype's new last axis of pieces is whole on each device; a wider one joins
    the last axis, which goes with its entry (JAX: _bitcast_convert_type_sharding_rule)."""
    old, new, spec = x.dtype.itemsize, new_dtype.itemsize, spec_of(x)
    return spec if old == new else (*spec, None) if old > new else spec[:-1]


def _select_n_rule(which: Any, *cases: Any) -> tuple:
    return broadcasting_sharding_rule("select_n", which, *cases)


for _p in elementwise_prims | {lx.integer_pow_p, add_jaxvals_p}:
    sharding_rules[_p] = functools.partial(broadcasting_sharding_rule, _p.name)
for _p in (lx.reduce_max_p, lx.reduce_min_p, lx.reduce_prod_p, lx.argmax_p, lx.argmin_p,
           lx.reduce_sum_p, lx.reduce_or_p, lx.reduce_and_p, lx.reduce_xor_p):
    sharding_rules[_p] = _reduce_rule
for _p in (lx.cumsum_p, lx.cumprod_p, lx.cummax_p, lx.cummin_p, lx.cumlogsumexp_p):
    sharding_rules[_p] = _cumulative_rule
sharding_rules.update({
    lx.dot_general_p: _dot_general_rule, lx.broadcast_in_dim_p: _broadcast_in_dim_rule,
    lx.reshape_p: _reshape_rule, lx.transpose_p: _transpose_rule, lx.squeeze_p: _squeeze_rule,
    lx.convert_element_type_p: _convert_element_type_rule, lx.select_n_p: _select_n_rule,
    stop_gradient_p: spec_of, lx.rev_p: lambda x, *, dimensions: spec_of(x),
    lx.concatenate_p: _concatenate_rule, lx.clamp_p: lambda lo, x, hi: spec_of(x),
    lx.bitcast_convert_type_p: _bitcast_convert_type_rule,
    lx.slice_p: _varying_shape_rule("slicing", lx.slice_p),
    lx.dynamic_slice_p: _varying_shape_rule("dynamic_slice", lx.dynamic_slice_p),
    lx.pad_p: _varying_shape_rule("padding", lx.pad_p), lx.split_p: _split_rule,
    lx.tile_p: _tile_rule,
})
