"""shard_map's checks, with JAX's messages: what a spec may name, how long it may be, what must
divide what, and which outputs may be declared replicated.

JAX: jax/_src/shard_map.py (`_check_specs`, `_check_specs_vs_args`, `_spec_rank_error`,
`_spec_divisibility_error`, `_inout_vma_error`). Kept apart from shard_map.py: the mechanism
reads in a few lines, the wording takes many. Each failure is listed with the key path of its
spec and of its value; a single failure loses its bullet, as in JAX.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any

from stages.s01_pytrees import keystr, tree_flatten, tree_structure, tree_unflatten
from stages.s01_pytrees.key_paths import tree_flatten_with_path
from stages.s01_pytrees.tree_util import broadcast_prefix, prefix_errors

from .mesh import Mesh
from .partition_spec import PartitionSpec
from .sharding_impls import check_pspec


def is_spec(x: Any) -> bool:
    return isinstance(x, PartitionSpec)


def flat_specs(kind: str, specs: Any, tree: Any) -> list[PartitionSpec]:
    """One spec per leaf of `tree` from a prefix of it; JAX's pytree error if it is none."""
    errors = prefix_errors(specs, tree, is_leaf=is_spec)
    if errors:
        raise errors[0](f"shard_map {kind}_specs")
    return broadcast_prefix(specs, tree, is_leaf=is_spec)


def check_specs(kind: str, specs: Any, mesh: Mesh) -> None:
    """Every axis a spec names is a (manual) axis of the mesh; none is used twice."""
    manual = frozenset(mesh.axis_names)
    leaves = tree_flatten_with_path(specs, is_leaf=is_spec)[0]
    msgs = [f"  {kind}_specs{keystr(path)} is {x} of type {type(x).__name__}, "
            for path, x in leaves if not is_spec(x)]
    if msgs:
        raise TypeError(
            f"shard_map {kind}_specs argument must be a pytree of "
            "`jax.sharding.PartitionSpec` instances, but:\n\n" + "\n\n".join(msgs) + "\n\n"
            f"Check the {kind}_specs values passed to shard_map.")
    for path, spec in leaves:
        for name in spec.used_axes():
            if name not in manual:
                msgs.append(f"  {kind}_specs{keystr(path)} refers to {name!r}")
    if msgs:
        raise ValueError(
            f"shard_map {kind}_specs argument must refer to an axis marked as manual "
            f"({manual}), but:\n\n" + "\n\n".join(msgs) + "\n\n"
            f"Check the {kind}_specs values passed to shard_map.")


def check_duplicates(specs: Any, mesh: Mesh) -> None:
    """Each mesh axis at most once per spec (JAX checks this last, making shardings)."""
    for spec in tree_flatten(specs, is_leaf=is_spec)[0]:
        check_pspec(mesh, spec)


def _failures(specs: Any, tree: Any, fails: Sequence[Any]) -> list[tuple[str, Any, str, Any]]:
    """(spec key, spec, value key, aval) for each failing leaf (JAX: _iter_paths)."""
    spec_paths = tree_unflatten(tree_structure(specs, is_leaf=is_spec),
                                [(keystr(p), s) for p, s in
                                 tree_flatten_with_path(specs, is_leaf=is_spec)[0]])
    per_leaf = broadcast_prefix(spec_paths, tree, is_leaf=lambda x: isinstance(x, tuple)
                                and len(x) == 2 and isinstance(x[0], str))
    paths = [p for p, _ in tree_flatten_with_path(tree)[0]]
    return [(sk, s, keystr(p), f) for (sk, s), p, f in zip(per_leaf, paths, fails, strict=True)
            if f is not None]


def _bound_to(f: Callable, fun_name: str, value_key: str, arg_index: int) -> str:
    """`, where args[0] is bound to f's parameter 'a',` when the signature says so."""
    try:
        params = [p for p in inspect.signature(f).parameters.values()
                  if p.kind not in (p.KEYWORD_ONLY, p.VAR_KEYWORD)]
    except (TypeError, ValueError):
        return ""
    arg = value_key.split("]")[0] + "]"
    if arg_index >= len(params) or params[arg_index].kind == params[-1].VAR_POSITIONAL:
        return (f", where args{arg} is the index {arg_index - len(params) + 1} component "
                f"of {fun_name}'s varargs parameter '{params[-1].name}',")
    return f", where args{arg} is bound to {fun_name}'s parameter '{params[arg_index].name}',"


def _join(msgs: list[str]) -> str:
    return msgs[0][2:] if len(msgs) == 1 else "\n\n".join(msgs)


def check_explicit_specs(mesh: Any, flat_specs: Sequence[Any], avals: Sequence[Any]) -> None:
    """On a mesh with Explicit axes an argument's type already says how it is split: the spec
    must say the same (JAX: _shard_map's check against `typeof(arg).sharding.spec`)."""
    from .mesh import AxisType
    from .sharding_impls import NamedSharding
    from .sharding_in_types import typed_spec

    if not all(t is AxisType.Explicit for t in mesh.axis_types):
        return
    for spec, aval in zip(flat_specs, avals, strict=True):
        # a value with no sharding in its type (a numpy array) is replicated: P(None, ...)
        have = aval.sharding.spec if aval.sharding is not None else PartitionSpec(
            *[None] * aval.ndim)
        want = typed_spec(NamedSharding(mesh, spec), aval.ndim)
        if want != have:
            raise ValueError(
                f"in_specs passed to shard_map: {want} does not match the specs of the input: "
                f"{have} for arg: {aval}. `in_specs` is an optional argument so "
                "you can omit specifying it and shard_map will infer the in_specs from the "
                "arguments. If you want to reshard your inputs, you can use `jax.reshard` on "
                "the arguments and then pass those args to shard_map.")


def check_rank(kind: str, f: Callable, fun_name: str, specs: Any, tree: Any,
               avals: Sequence[Any]) -> None:
    """No spec longer than its value's rank (JAX: _spec_rank_error)."""
    flat = broadcast_prefix(specs, tree, is_leaf=is_spec)
    fails = [a if len(s) > a.ndim else None for s, a in zip(flat, avals, strict=True)]
    found = _failures(specs, tree, fails)
    if not found:
        return
    base = "the passed args" if kind == "in" else f"{fun_name}(*args)"
    msgs = []
    for spec_key, spec, value_key, aval in found:
        extra = _bound_to(f, fun_name, value_key, int(value_key[1:].split("]")[0])) \
            if kind == "in" else ""
        shape = aval.update(vma=frozenset()).str_short()  # JAX prints it without its vma
        msgs.append(f"* {kind}_specs{spec_key} is {spec} which has length {len(spec)}, but "
                    f"{base}{value_key}{extra} has shape {shape}, which has rank "
                    f"{aval.ndim} (and {aval.ndim} < {len(spec)})")
    msg = (f"shard_map applied to the function '{fun_name}' was given an {kind}_specs entry "
           f"which is too long to be compatible with the corresponding {kind}put value from "
           f"the function:\n\n{_join(msgs)}\n\nEntries in {kind}_specs must be of length no "
           f"greater than the number of axes in the corresponding {kind}put value.\n\n"
           f"Either revise the spec to be shorter, or modify '{fun_name}' so that its "
           f"{kind}puts have sufficient rank.")
    if any(not aval.ndim for *_, aval in found):
        msg += (f"\n\nFor scalar values (rank 0), consider using an {kind}_specs entry of "
                "`P()`, where `P = jax.sharding.PartitionSpec`.")
        if kind == "out":
            msg += (" In particular, for rank 0 outputs which are not constant over the mesh, "
                    "add at least one (singleton) axis to them so that they can be "
                    "concatenated using out_specs.")
    raise ValueError(msg)


def check_divisible(f: Callable, fun_name: str, mesh: Mesh, specs: Any, tree: Any,
                    avals: Sequence[Any]) -> None:
    """Each split dimension divisible by its mesh axes (JAX: _spec_divisibility_error)."""
    flat = broadcast_prefix(specs, tree, is_leaf=is_spec)

    def bad(spec: PartitionSpec, aval: Any) -> bool:
        return any(aval.shape[d] % math.prod(mesh.shape[n] for n in spec.axes_of(d))
                   for d in range(len(spec)))
    fails = [a if bad(s, a) else None for s, a in zip(flat, avals, strict=True)]
    found = _failures(specs, tree, fails)
    if not found:
        return
    msgs = []
    for spec_key, spec, value_key, aval in found:
        extra = _bound_to(f, fun_name, value_key, int(value_key[1:].split("]")[0]))
        for d in range(len(spec)):
            ns = spec.axes_of(d)
            size = math.prod(mesh.shape[n] for n in ns)
            if aval.shape[d] % size:
                axis = f"axes {ns}" if len(ns) > 1 else f"axis '{ns[0]}'"
                total = "total " if len(ns) > 1 else ""
                msgs.append(
                    f"* the passed args{value_key} of shape {aval.str_short()}{extra} "
                    f"corresponds to in_specs{spec_key} of value {spec}, which maps array "
                    f"axis {d} (of size {aval.shape[d]}) to mesh {axis} (of {total}size "
                    f"{size}), but {size} does not evenly divide {aval.shape[d]}")
    raise ValueError(
        f"shard_map applied to the function '{fun_name}' was given argument arrays with axis "
        f"sizes that are not evenly divisible by the corresponding mesh axis sizes:\n\n"
        f"The mesh given has shape {mesh.axis_sizes} with corresponding axis names "
        f"{mesh.axis_names}.\n\n{_join(msgs)}\n\nArray arguments' axis sizes must be evenly "
        "divisible by the mesh axis or axes indicated by the corresponding elements of the "
        "argument's in_specs entry. Consider checking that in_specs are correct, and if so "
        "consider changing the mesh axis sizes or else padding the input and adapting "
        f"'{fun_name}' appropriately.")


def check_replication(fun_name: str, mesh: Mesh, specs: Any, tree: Any,
                      out_vmas: Sequence[frozenset[str]]) -> None:
    """An output whose spec leaves an axis out must not vary along it (JAX:
    _inout_vma_error): the body must have made it the same on every device of that axis."""
    flat = broadcast_prefix(specs, tree, is_leaf=is_spec)

    def order(names: Any) -> str:
        return ",".join(n for n in mesh.axis_names if n in names)
    fails = []
    for spec, vma in zip(flat, out_vmas, strict=True):
        unmentioned = [n for n in mesh.axis_names if n not in spec.used_axes()]
        fails.append(vma if any(n in vma for n in unmentioned) else None)
    found = _failures(specs, tree, fails)
    if not found:
        return
    msgs = []
    for spec_key, spec, _, vma in found:
        unmentioned = [n for n in mesh.axis_names if n not in spec.used_axes()]
        if len(unmentioned) > 1:
            diff = [n for n in unmentioned if n in vma]
            msgs.append(
                f"* out_specs{spec_key} is {spec} which implies that the corresponding output "
                f"value is only varying across mesh axes {{{order(spec.used_axes())}}} and "
                f"not {{{order(diff)}}}, but it was inferred to be possibly varying over "
                f"{{{order(vma)}}}")
        else:
            msgs.append(
                f"* out_specs{spec_key} is {spec} which implies that the corresponding output "
                f"value is replicated across mesh axis '{unmentioned[0]}', but could not "
                "infer replication over any axes")
    raise ValueError(
        f"shard_map applied to the function '{fun_name}' was given out_specs which require "
        "replication which can't be statically inferred given the mesh:\n\n"
        f"The mesh given has shape {mesh.axis_sizes} with corresponding axis names "
        f"{mesh.axis_names}.\n\n{_join(msgs)}\n\nCheck if these output values are meant to "
        "be replicated over those mesh axes. If not, consider revising the corresponding "
        "out_specs entries. If so, consider disabling the check by passing the "
        "check_vma=False argument to `jax.shard_map`.")

