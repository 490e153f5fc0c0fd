"""Small helpers JAX keeps elsewhere: list surgery, type matching, the varying axes of a cond's
branches and of a loop's carry, and a scan's trip count under `unroll` (which only a compiler's
layout of the loop reads), and a forwarded numpy xs put back as a new array (`maybe_put`).

JAX: `split_list`, `partition_list`, `merge_lists` in jax/_src/util.py; `typematch` in
jax/_src/core.py (`aval_mismatch_extra`, also core's there, is stage 2's errors.py here).
Where two pytrees differ (`equality_errors`) is stage 1's, as it is tree_util's in JAX.
"""

from __future__ import annotations

import inspect
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from stages.s01_pytrees import PyTreeDef, keystr, tree_flatten_with_path, tree_unflatten
from stages.s02_tracing import core, dtypes
from stages.s02_tracing.array import Array
from stages.s02_tracing.axis_env import vma_order
from stages.s02_tracing.core import ShapedArray
from stages.s02_tracing.errors import aval_mismatch_extra  # noqa: F401  (JAX: core's)

# ------------------------------------------------------------------ lists


def split_list(xs: Sequence[Any], sizes: Sequence[int]) -> list[list[Any]]:
    """`xs` cut into pieces of `sizes`, then the rest: split_list(x, [1, 2]) gives 3 lists."""
    xs = list(xs)
    out = []
    for n in sizes:
        out.append(xs[:n])
        xs = xs[n:]
    out.append(xs)
    return out


def partition_list(which: Sequence[bool], xs: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """(the xs where `which` is False, the xs where it is True)."""
    falses = [x for w, x in zip(which, xs, strict=True) if not w]
    trues = [x for w, x in zip(which, xs, strict=True) if w]
    return falses, trues


def merge_lists(which: Sequence[bool], falses: Sequence[Any], trues: Sequence[Any]) -> list[Any]:
    """The inverse of partition_list."""
    f_iter, t_iter = iter(falses), iter(trues)
    out = [next(t_iter) if w else next(f_iter) for w in which]
    assert next(f_iter, None) is None and next(t_iter, None) is None
    return out


# ------------------------------------------------------------------ types


def typematch(a: ShapedArray, b: ShapedArray) -> bool:
    """Same shape, dtype and sharding (where both have one); weak types aside (core.typematch)."""
    return (a.shape, a.dtype) == (b.shape, b.dtype) and (
        a.sharding is None or b.sharding is None or a.sharding == b.sharding)


# ------------------------------------------------------------------ varying axes


def pcast_hint(fixes: Sequence[str], *, loop: bool) -> str:
    """JAX's advice when only the varying axes differ (inside shard_map with check_vma=True):
    cast the less varying side with `pcast(..., to='varying')` (ours: vma.pvary). JAX lays a
    list out one way for a loop's carry and another for a cond's branches."""
    if not fixes:
        return ""
    if len(fixes) == 1:
        hint = f"This might be fixed by {fixes[0]}.\n"
    elif loop:
        hint = "This might be fixed by:\n" + bulleted(fixes)
    else:
        hint = ("This might be fixed by:\n" + "\n".join(f"  * {d};" for d in fixes[:-1])
                + f"\n  * {fixes[-1]}.\n")
    return hint + ("See https://docs.jax.dev/en/latest/notebooks/shard_map.html#scan-vma "
                   "for more information.\n\n")


def bulleted(diffs: Sequence[str]) -> str:
    """One difference as a sentence; several as a bulleted list (JAX's layout)."""
    if len(diffs) == 1:
        return f"{diffs[0][0].upper()}{diffs[0][1:]}.\n"
    return "\n".join(f"  * {d};\n" for d in diffs[:-1]) + f"  * {diffs[-1]}.\n"


def check_branch_vma(api_name: str, name1: str, name2: str, info1: str, info2: str,
                      paths: list, avals1: Sequence[ShapedArray],
                      avals2: Sequence[ShapedArray]) -> None:
    """Inside shard_map(check_vma=True) the branches must also agree on the mesh axes each
    output varies along (stage 11), with JAX's message; JAX's advice names the axes
    `a1 - a2` with the branches swapped, which comes out as `()` for the varying branch."""
    bad = [(p, a1, a2) for p, a1, a2 in zip(paths, avals1, avals2, strict=True)
           if a1.vma != a2.vma]
    if not bad:
        return

    def component(p: tuple) -> str:
        return f" at path {keystr(p)}" if p else ""
    diffs = [f"the output of {name1}{component(p)} has type {a1.str_short()} but the "
             f"corresponding output of {name2} has type {a2.str_short()}"
             f"{aval_mismatch_extra(a1, a2)}" for p, a1, a2 in bad]
    if len(diffs) == 1:
        differences = f"{diffs[0][0].upper()}{diffs[0][1:]}.\n"
    else:
        differences = "\n".join(f"  * {d};" for d in diffs[:-1]) + f"\n  * {diffs[-1]}.\n"
    fixes = [f"applying `jax.lax.pcast(..., {vma_order(a.vma - b.vma)}, to='varying')` to the "
             f"output of {n}{component(p)}"
             for p, v1, v2 in bad for n, a, b in ((name1, v2, v1), (name2, v1, v2))
             if b.vma - a.vma]
    raise TypeError(
        f"{api_name} branches must have equal output types but they differ.\n\n"
        f"{name1} is {info1}\n{name2} is {info2}\n\n{differences}\n"
        f"{pcast_hint(fixes, loop=False)}"
        f"Revise {name1} and/or {name2} so that all output types match.")


def carry_component(body_fun: Callable) -> Callable[[tuple], str]:
    """How the message names a carry leaf: by the body's first parameter and the key path."""
    try:
        carry_name = next(iter(inspect.signature(body_fun).parameters), None)
    except (ValueError, TypeError):
        carry_name = None
    if carry_name:
        return lambda p: (f"the input carry component {carry_name}{keystr(p)}" if p
                          else f"the input carry {carry_name}")
    return lambda p: f"the input carry at path {keystr(p)}" if p else "the input carry"


def check_carry_vma(name: str, body_fun: Callable, in_tree: PyTreeDef,
                    in_avals: Sequence[ShapedArray], out_avals: Sequence[ShapedArray]) -> None:
    """Inside shard_map(check_vma=True) the carry must also keep the mesh axes it varies along
    (stage 11); JAX refuses a carry that starts replicated and comes out varying."""
    if all(a.vma == b.vma for a, b in zip(in_avals, out_avals, strict=True)):
        return
    component = carry_component(body_fun)
    paths = [path for path, _ in tree_flatten_with_path(tree_unflatten(in_tree, in_avals))[0]]
    bad = [(p, a, b) for p, a, b in zip(paths, in_avals, out_avals, strict=True)
           if a.vma != b.vma]
    diffs = [f"{component(p)} has type {a.str_short()} but the corresponding output carry "
             f"component has type {b.str_short()}{aval_mismatch_extra(a, b)}"
             for p, a, b in bad]
    fixes = [f"applying `jax.lax.pcast(..., {vma_order(b.vma - a.vma)}, to='varying')`, to the "
             f"initial carry value corresponding to {component(p)}"
             for p, a, b in bad if b.vma - a.vma]
    raise TypeError(
        f"{name} function carry input and carry output must have equal types, but they "
        f"differ:\n\n{bulleted(diffs)}\n{pcast_hint(fixes, loop=True)}"
        "Revise the function so that all output types match the corresponding input types.")


# ------------------------------------------------------------------ unroll


def scan_trip_count(length: int, unroll: int) -> tuple[int, int]:
    """(loop trips, leftover iterations): with unroll=k the loop body holds k copies of `f`."""
    if unroll == 0:
        return 0, length  # unroll=0 unrolls everything
    num_trips, remainder = divmod(length, operator.index(unroll))  # 2.5: JAX's TypeError
    if unroll != 1 and num_trips == 1 and remainder == 0:
        return 0, length  # one trip of everything is no loop at all
    return num_trips, remainder


def maybe_put(x: Any) -> Any:
    """A numpy xs forwarded as a y comes back as a new array, made outside any trace, as the
    loop would have made it (JAX: _maybe_put, a device_put): a constant of its own."""
    if not isinstance(x, np.ndarray):
        return x
    value = np.array(dtypes.canonicalize_value(x))
    return Array(core.get_aval(value), value)
