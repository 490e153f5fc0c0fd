"""What cond, while_loop and scan share: trace a body once, hoist its constants, check its types.

JAX: tracing a body is `pe.trace_to_jaxpr` + `pe.separate_consts`, called in loops.py and
conditionals.py; jax/_src/lax/control_flow/common.py holds `_merge_common_consts`; the carry
check is in loops.py (`_check_carry_type`, `_promote_weak_typed_input`); then `core.typematch`,
`tree_util.equality_errors`, and the list helpers of jax/_src/util.py.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from stages.s01_pytrees import (
    PyTreeDef,
    flatten_one_level_with_keys,
    keystr,
    tree_structure,
    tree_unflatten,
)
from stages.s02_tracing import core, dtypes, lax
from stages.s02_tracing import linear_util as lu
from stages.s02_tracing import partial_eval as pe
from stages.s02_tracing.api_util import flatten_fun_nokwargs
from stages.s02_tracing.core import ClosedJaxpr, ShapedArray

# ------------------------------------------------------------------ list helpers (JAX: util.py)


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
    """Same shape and dtype; weak types are ignored (JAX: core.typematch)."""
    return a.shape == b.shape and a.dtype == b.dtype


def aval_mismatch_extra(a: ShapedArray, b: ShapedArray) -> str:
    """`, so the dtypes do not match` and friends (JAX: core.aval_mismatch_extra)."""
    mismatches = []
    if a.dtype != b.dtype:
        mismatches.append("the dtypes do not match")
    if a.shape != b.shape:
        mismatches.append("the shapes do not match")
    if not mismatches:
        return ""
    if len(mismatches) == 1:
        return ", so " + mismatches[0]
    return ", so " + ", ".join(mismatches[:-1]) + ", and " + mismatches[-1]


def _as_numpy(x: Any, aval: ShapedArray) -> np.ndarray:
    """A body output as an array of its aval's dtype (a literal output is a Python scalar)."""
    return np.asarray(x, dtype=aval.dtype)


def unmapped_leading_aval(length: int, aval: ShapedArray) -> ShapedArray:
    """`aval` with a leading axis of `length`: one y per iteration, stacked."""
    return aval.update(shape=(length, *aval.shape))


def mapped_leading_aval(aval: ShapedArray) -> ShapedArray:
    """`aval` without its leading axis: what one iteration sees of an xs."""
    return aval.update(shape=aval.shape[1:])


# ------------------------------------------------------------------ tracing a body once


# --8<-- [start:trace_body]
def _initial_style_jaxpr(fun: Callable, in_tree: PyTreeDef, in_avals: Sequence[ShapedArray],
                         debug_info: lu.DebugInfo) -> tuple[ClosedJaxpr, list[Any], PyTreeDef]:
    """Trace `fun` ONCE on abstract inputs; return (closed jaxpr, consts, output treedef).

    Whatever the body closes over (an array, a tracer of an enclosing transformation) became a
    constvar while tracing; it is moved to the front of the jaxpr's invars, and its value is
    returned, to be passed as an explicit operand of the control-flow equation.
    """
    # JAX 0.10.2: pe.trace_to_jaxpr, then pe.separate_consts; our name is the helper older
    # JAX kept in control_flow/common.py for this job
    flat_fun, out_tree = flatten_fun_nokwargs(lu.wrap_init(fun, debug_info=debug_info), in_tree)
    jaxpr, _, consts = pe.trace_to_jaxpr_dynamic(flat_fun, in_avals)
    closed = ClosedJaxpr(pe.convert_constvars_jaxpr(jaxpr), [])
    return closed, consts, out_tree()
# --8<-- [end:trace_body]


def _move_binders_to_front(jaxpr: ClosedJaxpr, to_move: Sequence[bool]) -> ClosedJaxpr:
    """The program with the invars marked in `to_move` first (JAX: pe.move_binders_to_front)."""
    stay, move = partition_list(to_move, jaxpr.jaxpr.invars)
    return ClosedJaxpr(jaxpr.jaxpr.replace(invars=[*move, *stay]), jaxpr.consts)


def _move_binders_to_back(jaxpr: ClosedJaxpr, to_move: Sequence[bool]) -> ClosedJaxpr:
    """The program with the invars marked in `to_move` last (JAX: pe.move_binders_to_back)."""
    stay, move = partition_list(to_move, jaxpr.jaxpr.invars)
    return ClosedJaxpr(jaxpr.jaxpr.replace(invars=[*stay, *move]), jaxpr.consts)


def _prune_outputs(jaxpr: ClosedJaxpr, keep: Sequence[bool]) -> ClosedJaxpr:
    """Drop the outputs not in `keep` (JAX: pe.prune_closed_jaxpr_outputs; we do not DCE)."""
    outvars = [v for v, k in zip(jaxpr.jaxpr.outvars, keep, strict=True) if k]
    return ClosedJaxpr(jaxpr.jaxpr.replace(outvars=outvars), jaxpr.consts)


def _jaxpr_forwarding(jaxpr: core.Jaxpr) -> list[int | None]:
    """For each output, the index of the invar it simply returns, else None."""
    # JAX: pe._jaxpr_forwarding
    index = {id(v): i for i, v in enumerate(jaxpr.invars)}
    return [index.get(id(v)) if isinstance(v, core.Var) else None for v in jaxpr.outvars]


def _merge_common_consts(jaxprs: Sequence[ClosedJaxpr], all_consts: Sequence[Sequence[Any]]
                         ) -> tuple[list[ClosedJaxpr], list[Any]]:
    """Give every branch every branch's consts (the equation has one operand list).

    Branch i's jaxpr gets dummy binders for the other branches' consts; a value closed over by
    two branches is passed once (JAX deduplicates by identity, as we do).
    """
    consts = [c for cs in all_consts for c in cs]
    avals = [core.get_aval(c) for c in consts]
    firsts: dict[int, int] = {}  # id(const) -> its first position
    for i, c in enumerate(consts):
        firsts.setdefault(id(c), i)
    keep = [firsts[id(c)] == i for i, c in enumerate(consts)]
    new_jaxprs = []
    start = 0
    for jaxpr, cs in zip(jaxprs, all_consts, strict=True):
        own = jaxpr.jaxpr.invars[:len(cs)]
        binders = [core.Var(a) for a in avals[:start]] + own + \
            [core.Var(a) for a in avals[start + len(cs):]]
        start += len(cs)
        # a duplicate binder is replaced by the binder of its first occurrence
        subst = {id(v): binders[firsts[id(c)]] for v, c in zip(binders, consts, strict=True)}
        new_jaxprs.append(_substitute(jaxpr, len(cs), binders, subst, keep))
    return new_jaxprs, [c for c, k in zip(consts, keep, strict=True) if k]


def _substitute(jaxpr: ClosedJaxpr, n_own: int, binders: list[core.Var],
                subst: dict[int, core.Var], keep: list[bool]) -> ClosedJaxpr:
    def rename(x: core.Atom) -> core.Atom:
        return subst.get(id(x), x) if isinstance(x, core.Var) else x

    eqns = [e.replace(invars=[rename(x) for x in e.invars]) for e in jaxpr.jaxpr.eqns]
    invars = [v for v, k in zip(binders, keep, strict=True) if k] + jaxpr.jaxpr.invars[n_own:]
    outvars = [rename(x) for x in jaxpr.jaxpr.outvars]
    return ClosedJaxpr(jaxpr.jaxpr.replace(invars=invars, eqns=eqns, outvars=outvars),
                       jaxpr.consts)


# ------------------------------------------------------------------ structure differences


def equality_errors(tree1: Any, tree2: Any, path: tuple = ()
                    ) -> Iterator[tuple[tuple, str, str, str]]:
    """Where two pytrees differ: (key path, what tree1 has, what tree2 has, why they differ).

    JAX: tree_util.equality_errors. Leaves that are both leaves never differ here: this is
    about structure only.
    """
    def is_leaf(t: Any) -> bool:
        treedef = tree_structure(t)
        return treedef.num_nodes == 1 and treedef.num_leaves == 1

    if is_leaf(tree1) and is_leaf(tree2):
        return
    if type(tree1) is not type(tree2):
        yield path, str(type(tree1)), str(type(tree2)), "their Python types differ"
        return
    if isinstance(tree1, (list, tuple)) and len(tree1) != len(tree2):
        yield (path, f"{type(tree1).__name__} of length {len(tree1)}",
               f"{type(tree2).__name__} of length {len(tree2)}", "the lengths do not match")
        return
    kids1, meta1 = flatten_one_level_with_keys(tree1)
    kids2, meta2 = flatten_one_level_with_keys(tree2)
    kids1, kids2 = list(kids1), list(kids2)
    if len(kids1) != len(kids2):
        diff = " ".join(repr(getattr(k, "key", k)) for k in
                        {k for k, _ in kids1} ^ {k for k, _ in kids2})

        def children(t: Any, n: int) -> str:
            return f"{type(t)} with {n} child{'ren' if n > 1 else ''}"

        why = "the numbers of children do not match"
        if diff:
            why += f", with the symmetric difference of key sets: {{{diff}}}"
        yield path, children(tree1, len(kids1)), children(tree2, len(kids2)), why
        return
    if meta1 != meta2:
        yield (path, f"{type(tree1)} with pytree metadata {meta1}",
               f"{type(tree2)} with pytree metadata {meta2}",
               "the pytree node metadata does not match")
        return
    for (key, c1), (_, c2) in zip(kids1, kids2, strict=True):
        yield from equality_errors(c1, c2, (*path, key))


def _capitalize(s: str) -> str:
    return s[0].upper() + s[1:]


def _bulleted(diffs: Sequence[str]) -> str:
    """One difference as a sentence; several as a bulleted list (JAX's layout)."""
    if len(diffs) == 1:
        return f"{_capitalize(diffs[0])}.\n"
    return "\n".join(f"  * {d};\n" for d in diffs[:-1]) + f"  * {diffs[-1]}.\n"


# ------------------------------------------------------------------ the carry-type check


def _carry_component(body_fun: Callable) -> Callable[[tuple], str]:
    """How the message names a carry leaf: by the body's first parameter and the key path."""
    try:
        carry_name = next(iter(inspect.signature(body_fun).parameters), None)
    except (ValueError, TypeError):
        carry_name = None
    if carry_name:
        return lambda p: (f"the input carry component {carry_name}{keystr(p)}" if p
                          else f"the input carry {carry_name}")
    return lambda p: f"the input carry at path {keystr(p)}" if p else "the input carry"


# --8<-- [start:check_carry_type]
def _check_carry_type(name: str, body_fun: Callable, in_tree: PyTreeDef,
                      in_avals: Sequence[ShapedArray], out_tree: PyTreeDef,
                      out_avals: Sequence[ShapedArray]) -> None:
    """The carry must come out as it went in: same pytree structure, shapes and dtypes.

    Weak types are ignored here (a weak init has already been promoted). `name` is
    'scan body' or 'while_loop body'; leaves are named by key path off the body's first
    parameter, as in JAX's message.
    """
    # EXERCISE 6.4 (carry-check): compare structures, then each leaf's type; raise JAX's errors
    component = _carry_component(body_fun)
    if in_tree != out_tree:
        diffs = [f"{component(path)} is a {thing1} but the corresponding component of the "
                 f"carry output is a {thing2}, so {why}"
                 for path, thing1, thing2, why in equality_errors(
                     tree_unflatten(in_tree, in_avals), tree_unflatten(out_tree, out_avals))]
        raise TypeError(
            f"{name} function carry input and carry output must have the same pytree "
            f"structure, but they differ:\n\n{_bulleted(diffs)}\n"
            "Revise the function so that the carry output has the same pytree structure as "
            "the carry input.")
    paths = [path for path, _ in _leaf_paths(tree_unflatten(in_tree, in_avals))]
    diffs = [f"{component(path)} has type {a.str_short()} but the corresponding output carry "
             f"component has type {b.str_short()}{aval_mismatch_extra(a, b)}"
             for path, a, b in zip(paths, in_avals, out_avals, strict=True)
             if not typematch(a, b)]
    if diffs:
        raise TypeError(
            f"{name} function carry input and carry output must have equal types, but they "
            f"differ:\n\n{_bulleted(diffs)}\n"
            "Revise the function so that all output types match the corresponding input types.")
    # END EXERCISE
# --8<-- [end:check_carry_type]


def _leaf_paths(tree: Any) -> list[tuple[tuple, Any]]:
    from stages.s01_pytrees import tree_flatten_with_path

    return tree_flatten_with_path(tree)[0]


# --8<-- [start:promote_weak]
def _promote_weak_typed_input(in_val: Any, in_aval: ShapedArray, out_aval: ShapedArray
                              ) -> tuple[Any, bool]:
    """A weakly typed init (a Python scalar) whose body output differs is promoted, not refused.

    `scan(lambda c, x: (c + x, x), 0, xs_f32)`: the carry starts as a weak int32 and comes
    back float32; JAX converts the init to float32 and traces the body a second time.
    """
    if in_aval.weak_type and not typematch(in_aval, out_aval):
        new_dtype = dtypes.result_type(in_val, out_aval.dtype)
        return lax.convert_element_type(in_val, new_dtype), True
    return in_val, False
# --8<-- [end:promote_weak]
