"""What jit with shardings checks of its shardings and arguments, with JAX's messages.

JAX: jax/_src/pjit.py (`jit` turns a list of in_shardings into a tuple, `_trace_for_jit`
refuses keyword arguments beside in_shardings), sharding_impls.py (`prepare_axis_resources`:
each leaf a Sharding, a PartitionSpec or None), api_util.py (`flatten_axis_resources`: one
sharding per argument leaf from a prefix, or the message saying where it is none). Static
arguments are no leaves: the shardings and the compiled program see the others only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stages.s01_pytrees import tree_flatten
from stages.s01_pytrees.tree_util import broadcast_prefix, prefix_errors
from stages.s02_tracing import core, source_info_util
from stages.s07_caches.sharding_impls import UNSPECIFIED
from stages.s08_lowering.module import dce_jaxpr_consts

from .mesh import Mesh
from .partition_spec import P
from .sharding_impls import NamedSharding, Sharding
from .sharding_in_types import get_mesh


def is_sharding_leaf(s: Any) -> bool:
    return s is None or s is UNSPECIFIED or isinstance(s, (Sharding, P))


def prepare_axis_resources(shardings: Any, arg_name: str) -> Any:
    """jit's `in_shardings` or `out_shardings` as given, checked when jit is called: a list of
    in_shardings is read as the tuple of one per positional argument, as JAX reads it."""
    if arg_name == "in_shardings" and isinstance(shardings, list):
        shardings = tuple(shardings)
    for leaf in tree_flatten(shardings, is_leaf=is_sharding_leaf)[0]:
        if not is_sharding_leaf(leaf):
            raise TypeError(f"{arg_name} leaf specifications are expected to be PartitionSpec "
                            f"instances or None, but got {leaf}")
    return shardings


def check_no_kwargs(in_shardings: Any, kwargs: dict) -> None:
    """in_shardings speak of the positional arguments only, so JAX takes no keywords then."""
    if kwargs and in_shardings is not None and in_shardings is not UNSPECIFIED:
        raise ValueError("pjit does not support kwargs when in_shardings is specified.")


def static_positions(n: int, static_argnums: Sequence[int]) -> set[int]:
    """Which of `n` positional arguments are static (a negative number counts from the end)."""
    return {i % n for i in static_argnums if -n <= i < n}


def dynamic_arguments(args: tuple, kwargs: dict, static_argnums: Sequence[int],
                      static_argnames: Sequence[str]) -> tuple[tuple, dict]:
    """The arguments that are traced (and laid out on devices): the static ones left out."""
    static = static_positions(len(args), static_argnums)
    return (tuple(a for i, a in enumerate(args) if i not in static),
            {k: v for k, v in kwargs.items() if k not in static_argnames})


def _create_sharding(s: Any, name: str) -> Any:  # a bare P is of set_mesh's mesh, as JAX's
    if isinstance(s, P) and get_mesh() is None:
        raise RuntimeError(
            f"jit requires a non-empty mesh in context if you are passing `PartitionSpec`s to "
            f"{name}. You can define a context mesh via `jax.set_mesh(mesh)`. Alternatively, "
            f"provide `Sharding`s to {name} and then the mesh context manager is not required.")
    return NamedSharding(get_mesh(), s) if isinstance(s, P) else s


def flatten_shardings(shardings: Any, tree: Any, name: str = "in_shardings") -> list[Any]:
    """One sharding (or None: the compiler chooses) per leaf of `tree`, from a prefix; `tree`
    is the tuple of positional arguments for in_shardings, the outputs for out_shardings."""
    per_leaf = flatten_axis_resources(f"pjit {name}", tree, shardings,
                                      tupled_args=name == "in_shardings")
    return [None if s is UNSPECIFIED else _create_sharding(s, name) for s in per_leaf]


def _prefix_leaves(shardings: Any, tree: Any) -> list[Any] | None:
    try:
        return broadcast_prefix(shardings, tree, is_leaf=is_sharding_leaf)
    except ValueError:
        return None


def flatten_axis_resources(what: str, tree: Any, shardings: Any, tupled_args: bool
                           ) -> list[Any]:
    """Each leaf of `shardings` repeated for the leaves of `tree` under it; where `shardings`
    is no prefix of `tree`, JAX's message: first the argument tuple's own length or type,
    then every place below where the two trees part."""
    if is_sharding_leaf(shardings):
        return [shardings] * len(tree_flatten(tree)[0])
    per_leaf = _prefix_leaves(shardings, tree)
    if per_leaf is not None:
        return per_leaf
    if tupled_args and (type(shardings) is not tuple or len(shardings) != len(tree)):
        msg = (f"{what} specification must be a tree prefix of the positional arguments "
               f"tuple. In particular, {what} must either be a Sharding, a PartitionSpec, or "
               "a tuple of length equal to the number of positional arguments.")
        if type(shardings) is not tuple:
            msg += f" But {what} is not a tuple: got {type(shardings)} instead."
        else:
            msg += (f" But {what} is the wrong length: got a tuple or list of length "
                    f"{len(shardings)} for an args tuple of length {len(tree)}.")
        if len(tree) == 1 and _prefix_leaves((shardings,), tree) is not None:
            msg += (f" Given the corresponding argument being passed, it looks like {what} "
                    "might need to be wrapped in a singleton tuple.")
        raise ValueError(msg)
    errors = prefix_errors(shardings, tree, is_leaf=is_sharding_leaf)
    details = "\n".join(str(make(what)) for make in errors)
    raise ValueError(f"Mismatch details ({len(errors)} found):\n{details}")


def intermediate_shardings(jaxpr: Any) -> list[tuple[Sharding, str, Any]]:
    """(sharding, equation name, where it was traced) for each layout an equation inside the
    function names: a constraint's, a shard_map's specs on its mesh; inner jaxprs included
    (JAX: dispatch.get_intermediate_shardings)."""
    out: list[tuple[Sharding, str, Any]] = []
    for eqn in jaxpr.eqns:
        name, params = eqn.primitive.name, eqn.params
        if name == "sharding_constraint" and isinstance(params["sharding"], NamedSharding):
            out.append((params["sharding"], name, eqn.source_info))
        elif name == "shard_map":
            out.extend((NamedSharding(params["mesh"], spec), name, eqn.source_info)
                       for spec in (*params["in_specs"], *params["out_specs"]))
        for v in params.values():
            for x in v if isinstance(v, (tuple, list)) else (v,):
                inner = getattr(x, "jaxpr", x)  # a ClosedJaxpr's, or a Jaxpr itself
                if hasattr(inner, "eqns"):
                    out.extend(intermediate_shardings(inner))
    return out


def check_devices(fun_name: str, arg_names: Sequence[str], args: Sequence[Any],
                  in_shardings: Sequence[Any], out_shardings: Sequence[Any],
                  inside: Sequence[tuple[Sharding, str, Any]] = ()) -> None:
    """Every argument's, output's and inner equation's sharding on the same devices in the
    same order; else JAX's message for the first two that differ, naming an argument whose
    own layout it is, or the equation and its source line (JAX:
    pxla._get_and_check_device_assignment, stages._device_assignment_mismatch_error)."""
    given = [("ARG_SHARDING", s, "") for s in in_shardings if s is not None]
    given += [("explicit output sharding", s, "") for s in out_shardings if s is not None]
    given += [(f"{name} inside jit", s, "" if info is None else
               f" at {source_info_util.summarize(info)}") for s, name, info in inside]
    if not given:
        return
    first = given[0][1]._device_assignment
    differs = [(kind, s._device_assignment, where) for kind, s, where in given
               if s._device_assignment != first]
    if not differs:
        return

    def describe(kind: str, devices: tuple, where: str) -> str:
        ids = f"with device ids {[d.id for d in devices]} on platform {devices[0].platform.upper()}"
        for name, x in zip(arg_names, args, strict=True):
            s = getattr(x, "sharding", None)
            if kind == "ARG_SHARDING" and s is not None and s._device_assignment == devices:
                return f" argument {name} of {fun_name} with shape {x.aval.str_short()} and {ids}"
        return f" {kind} {ids}{where}"
    raise ValueError("Received incompatible devices for jitted computation. Got"
                     f"{describe(given[0][0], first, given[0][2])} and{describe(*differs[0])}")


def jaxpr_meshes(jaxpr: core.Jaxpr) -> list[Any]:
    """The meshes the equations name (a shard_map's, a constraint's), inner jaxprs included."""
    found: list[Any] = []

    def visit(j: core.Jaxpr) -> None:
        for eqn in j.eqns:
            for v in eqn.params.values():
                for x in v if isinstance(v, (tuple, list)) else (v,):
                    if isinstance(x, Mesh):
                        found.append(x)
                    elif isinstance(x, NamedSharding):
                        found.append(x.mesh)
                    elif isinstance(x, core.ClosedJaxpr):
                        visit(x.jaxpr)
                    elif isinstance(x, core.Jaxpr):
                        visit(x)
    visit(jaxpr)
    return list(dict.fromkeys(found))


def places_nothing(closed: Any, ins: Sequence[Any], outs: Sequence[Any],
                   keep_unused: bool) -> bool:
    """No layout for an input the program uses, an output, or an equation inside: a program
    for one device. An unused argument is pruned first, laid out or not, as JAX prunes it
    before it chooses the devices (`keep_unused` keeps it)."""
    used = [True] * len(ins) if keep_unused else dce_jaxpr_consts(closed.jaxpr)[2]
    return all(s is None for s, u in zip(ins, used, strict=True) if u) and \
        all(s is None for s in outs) and not jaxpr_meshes(closed.jaxpr)
