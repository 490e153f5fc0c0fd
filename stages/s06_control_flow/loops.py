"""Loops as primitives: scan, while_loop, fori_loop and map, each one equation however long.

JAX: jax/_src/lax/control_flow/loops.py. The body is traced ONCE into a closed jaxpr that hangs
on a single `scan` or `while` equation as a parameter; what it closes over is hoisted into
explicit operands (`num_consts` / `cond_nconsts`, `body_nconsts`). The price is the carry rule:
what goes round the loop must keep its pytree structure, shapes and dtypes (common.py). The
primitives and their rules, in every table, are scan_rules.py and while_rules.py.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import numpy as np

from stages.s01_pytrees import (
    tree_flatten,
    tree_map,
    tree_structure,
    tree_unflatten,
    treedef_children,
    treedef_is_leaf,
)
from stages.s02_tracing import core, dtypes, lax
from stages.s02_tracing import numpy as jnp
from stages.s02_tracing.api_util import debug_info, save_wrapped_fun_debug_info
from stages.s02_tracing.core import ClosedJaxpr, ShapedArray
from stages.s02_tracing.lax.utils import const
from stages.s03_partial_eval import dce_jaxpr
from stages.s05_vmap import vmap

from . import eager
from .common import (
    initial_style_jaxpr,
    jaxpr_forwarding,
    mapped_leading_aval,
    move_binders_to_front,
    prune_closed_jaxpr_outputs,
    trace_loop_body,
)
from .scan_rules import scan_p
from .util import maybe_put, merge_lists, partition_list, split_list
from .while_rules import while_p

# ================================================================== scan


def _infer_scan_length(xs_flat: list[Any], length: int | None) -> int:
    """The number of iterations: `length`, or the leading axis every xs shares."""
    try:
        lengths = [x.shape[0] for x in xs_flat]
    except (AttributeError, IndexError):
        for x in xs_flat:  # a value that is no array at all: JAX's TypeError
            core.get_aval(x)
        bad = ", ".join(str(x) for x in xs_flat if not np.shape(x))  # JAX: an IndexError
        raise ValueError(f"scan got value with no leading axis to scan over: {bad}.") from None
    specs = [s.spec for x in xs_flat if (s := core.get_aval(x).sharding) is not None]
    if any(s[0] is not None for s in specs):  # on Explicit axes (`map` here is lax.map)
        raise ValueError("0th dimension of all xs should be replicated. Got "
                         + ", ".join(str(s) for s in specs))
    if length is not None:
        length = int(core.concrete_or_error(
            None, length, "The `length` argument to `scan` expects a concrete `int` value. "
            "For scan-like iteration with a dynamic length, use `while_loop` or `fori_loop`."))
        if not all(length == n for n in lengths):
            raise ValueError(f"scan got `length` argument of {length} which disagrees with "
                             f"leading axis sizes {lengths}.")
        return length
    if len(set(lengths)) > 1:
        raise ValueError("scan got values with different leading axis sizes: "
                         f"{', '.join(str(n) for n in lengths)}.")
    if not lengths:
        raise ValueError("scan got no values to scan over and `length` not provided.")
    return lengths[0]


# --8<-- [start:scan]
def scan(f: Callable, init: Any, xs: Any = None, length: int | None = None,
         reverse: bool = False, unroll: int | bool = 1, _split_transpose: bool = False
         ) -> tuple[Any, Any]:
    """Loop `carry, y = f(carry, x)` over the leading axis of xs; return (carry, stacked ys).

    `f` is traced once: the jaxpr has one scan equation whatever the length.
    """
    if not callable(f):
        raise TypeError("lax.scan: f argument should be a callable.")
    init_flat, init_tree = tree_flatten(init)
    xs_flat, _ = tree_flatten(xs)
    in_tree = tree_structure((init, xs))
    length = _infer_scan_length(xs_flat, length)
    if eager.active():  # disable_jit: a Python loop
        return eager.scan(f, init, xs_flat, tree_structure(xs), length, reverse)
    x_avals = [mapped_leading_aval(core.get_aval(x)) for x in xs_flat]
    dbg = debug_info("scan", f, (init, xs), {})

    def trace_body(carry_avals: list[ShapedArray]) -> tuple:
        jaxpr, consts, out_tree = initial_style_jaxpr(f, in_tree, [*carry_avals, *x_avals], dbg)
        if len(children := treedef_children(out_tree)) != 2:  # any node of two (JAX's unpack)
            outs = tree_unflatten(out_tree, jaxpr.out_avals)
            raise TypeError(f"scan body output must be a pair, got {outs}.")
        carry_tree = children[0]
        return (jaxpr, consts, out_tree), carry_tree, jaxpr.out_avals[:carry_tree.num_leaves]

    # a weakly typed init (a Python scalar) takes the body's output type: traced again
    init_flat, (jaxpr, consts, out_tree) = trace_loop_body("scan body", f, init_flat, init_tree,
                                                           trace_body)

    unroll = core.concrete_or_error(
        None, unroll, "The `unroll` argument to `scan` expects a concrete `int` or `bool` value.")
    if isinstance(unroll, bool):
        unroll = builtins.max(length, 1) if unroll else 1
    if unroll < 0:
        raise ValueError("`unroll` must be a `bool` or a non-negative `int`.")
    out = _bind_scan(consts, init_flat, xs_flat, jaxpr, length, reverse, unroll)
    # the body's own pair: a body returning [carry, y] makes scan return a list, as in JAX
    return tree_unflatten(out_tree, out)
# --8<-- [end:scan]


def _bind_scan(consts: list[Any], init: list[Any], xs: list[Any], jaxpr: ClosedJaxpr,
               length: int, reverse: bool, unroll: int) -> list[Any]:
    """Bind scan_p, first taking out what the body merely passes through (as JAX does)."""
    num_carry, num_ys = len(init), len(jaxpr.out_avals) - len(init)
    fwd = jaxpr_forwarding(jaxpr.jaxpr)
    # Forwarding, 1: a carry the body returns unchanged is the same on every trip, a constant
    # of the loop; it becomes a const operand (under vmap or jvp, a const is cheaper: it is not
    # batched or differentiated per trip) and comes out as the init it was.
    to_const = [f == len(consts) + i for i, f in enumerate(fwd[:num_carry])]
    jaxpr = prune_closed_jaxpr_outputs(jaxpr, [not m for m in to_const] + [True] * num_ys)
    jaxpr = move_binders_to_front(jaxpr, [False] * len(consts) + to_const + [False] * len(xs))
    init, new_consts = partition_list(to_const, init)
    # Forwarding, 2: a y that is just its iteration's x stacks up to xs itself: it needs no
    # loop, so it is dropped from the body and taken from xs
    first_x = len(consts) + num_carry
    y_is_x = [f - first_x if f is not None and f >= first_x else None
              for f in fwd[num_carry:]]
    jaxpr = prune_closed_jaxpr_outputs(jaxpr, [True] * len(init) + [f is None for f in y_is_x])
    out = scan_p.bind(*new_consts, *consts, *init, *xs, reverse=reverse, length=length,
                      jaxpr=jaxpr, num_consts=len(new_consts) + len(consts),
                      num_carry=len(init), unroll=unroll)
    carry_out, ys = split_list(out, [len(init)])
    ys_iter = iter(ys)
    ys = [next(ys_iter) if f is None else maybe_put(xs[f]) for f in y_is_x]
    return [*merge_lists(to_const, carry_out, new_consts), *ys]


# ================================================================== while_loop


# --8<-- [start:while_loop]
def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    """`while cond_fun(val): val = body_fun(val)`, as one while equation."""
    if not (callable(body_fun) and callable(cond_fun)):
        raise TypeError("lax.while_loop: body_fun and cond_fun arguments should be callable.")
    if eager.active():  # disable_jit: a Python loop, if every predicate is known
        ran, result = eager.while_loop(cond_fun, body_fun, init_val)
        if ran:
            return result
    init_vals, init_tree = tree_flatten(init_val)
    in_tree = tree_structure((init_val,))
    cond_dbg = debug_info("while_cond", cond_fun, (init_val,), {})
    body_dbg = debug_info("while_body", body_fun, (init_val,), {})

    def trace_cond_and_body(init_avals: list[ShapedArray]) -> tuple:
        cond_jaxpr, cond_consts, cond_tree = initial_style_jaxpr(cond_fun, in_tree, init_avals,
                                                                 cond_dbg)
        body_jaxpr, body_consts, body_tree = initial_style_jaxpr(body_fun, in_tree, init_avals,
                                                                 body_dbg)
        if not treedef_is_leaf(cond_tree) or len(cond_jaxpr.out_avals) != 1:
            raise TypeError(f"cond_fun must return a boolean scalar, but got pytree {cond_tree}.")
        pred = cond_jaxpr.out_avals[0]
        if pred.shape != () or pred.dtype != np.bool_:
            raise TypeError("cond_fun must return a boolean scalar, but got output type(s) "
                            f"{cond_jaxpr.out_avals}.")
        traced = (cond_jaxpr, cond_consts, body_jaxpr, body_consts, body_tree)
        return traced, body_tree, body_jaxpr.out_avals

    init_vals, traced = trace_loop_body("while_loop body", body_fun, init_vals, init_tree,
                                        trace_cond_and_body)
    cond_jaxpr, cond_consts, body_jaxpr, body_consts, body_tree = traced
    outs = _bind_while(cond_jaxpr, cond_consts, body_jaxpr, body_consts, init_vals)
    return tree_unflatten(body_tree, outs)
# --8<-- [end:while_loop]




def _bind_while(cond_jaxpr: ClosedJaxpr, cond_consts: list[Any], body_jaxpr: ClosedJaxpr,
                body_consts: list[Any], init_vals: list[Any]) -> list[Any]:
    """Bind while_p; a carry the body passes through and the predicate never reads is made a
    body constant first (as JAX does: under vmap, constants need not be batched)."""
    # Forwarding: such a carry is the same on every trip and after the loop; the predicate
    # must not read it, or dropping it from the carry would change the cond jaxpr's inputs
    fwd = jaxpr_forwarding(body_jaxpr.jaxpr)
    carry_nofwd = [f != len(body_consts) + i for i, f in enumerate(fwd)]
    cond_pruned, keep = dce_jaxpr(cond_jaxpr.jaxpr, [True],
                                  [True] * len(cond_consts) + carry_nofwd)
    to_const = [not k for k in keep[len(cond_consts):]]
    if any(to_const):
        cond_jaxpr = ClosedJaxpr(cond_pruned, cond_jaxpr.consts)
        body_jaxpr = prune_closed_jaxpr_outputs(body_jaxpr, [not m for m in to_const])
        body_jaxpr = move_binders_to_front(body_jaxpr, [False] * len(body_consts) + to_const)
    init_vals, new_consts = partition_list(to_const, init_vals)
    body_consts = [*new_consts, *body_consts]
    outs = while_p.bind(*cond_consts, *body_consts, *init_vals,
                        cond_nconsts=len(cond_consts), cond_jaxpr=cond_jaxpr,
                        body_nconsts=len(body_consts), body_jaxpr=body_jaxpr)
    return merge_lists(to_const, outs, new_consts)


# ================================================================== fori_loop and map


def _fori_cond_fun(loop_carry: tuple) -> Any:
    i, upper, _ = loop_carry
    return lax.lt(i, upper)


def _fori_body_fun(body_fun: Callable, dbg: Any) -> Callable:
    def while_body_fun(loop_carry: tuple) -> tuple:
        i, upper, x = loop_carry
        # JAX: lax._const(i, 1): a weak counter stays weak
        return lax.add(i, const(i, 1)), upper, body_fun(i, x)

    names = dbg.arg_names and (dbg.arg_names[0], "", *dbg.arg_names[1:])  # `upper`: no name
    save_wrapped_fun_debug_info(while_body_fun, dbg._replace(arg_names=names))
    return while_body_fun


def _fori_scan_body_fun(body_fun: Callable, dbg: Any) -> Callable:
    def scanned_fun(loop_carry: tuple, _: Any) -> tuple:
        i, x = loop_carry
        return (i + 1, body_fun(i, x)), None

    save_wrapped_fun_debug_info(scanned_fun, dbg._replace(result_paths=None))
    return scanned_fun


_is_concrete = eager.is_concrete  # JAX: core.is_concrete


# --8<-- [start:fori_loop]
def fori_loop(lower: Any, upper: Any, body_fun: Callable, init_val: Any, *,
              unroll: int | bool | None = None) -> Any:
    """`for i in range(lower, upper): val = body_fun(i, val)`.

    With concrete bounds this is a scan of upper - lower steps, so reverse-mode autodiff
    works; with traced bounds it is a while loop, which reverse mode refuses.
    """
    if not callable(body_fun):
        raise TypeError("lax.fori_loop: body_fun argument should be callable.")
    lower_dtype, upper_dtype = dtypes.dtype(lower), dtypes.dtype(upper)
    dtype = lower_dtype if lower_dtype == upper_dtype else None
    if dtype is None and np.issubdtype(lower_dtype, np.signedinteger) \
            and np.issubdtype(upper_dtype, np.signedinteger):
        # one Python-int bound takes the other bound's dtype
        lower_weak, upper_weak = dtypes.is_weakly_typed(lower), dtypes.is_weakly_typed(upper)
        if lower_weak and not upper_weak:
            dtype = upper_dtype
        elif upper_weak and not lower_weak:
            dtype = lower_dtype
    if dtype is None:
        raise TypeError("lower and upper arguments to fori_loop must have equal types, got "
                        f"{lower_dtype.name} and {upper_dtype.name}")
    dbg = debug_info("fori_loop", body_fun, (0, init_val), {})  # what errors say of body_fun
    if eager.active(lower, upper) and eager.empty_range(lower, upper):
        return init_val
    # EXERCISE 6.2 (fori-choice): concrete bounds -> scan of known length; else a while loop
    if _is_concrete(lower) and _is_concrete(upper):
        lower_ = int(core.concrete_or_error(None, lower))
        upper_ = int(core.concrete_or_error(None, upper))
        (_, result), _ = scan(_fori_scan_body_fun(body_fun, dbg), (lower_, init_val), None,
                              length=builtins.max(upper_ - lower_, 0),
                              unroll=False if unroll is None else unroll)
        return result
    if unroll is not None and unroll is not False and unroll != 1:
        raise ValueError("Can only use `unroll` in `fori_loop` if the loop bounds are "
                         "statically known.")
    if lower_dtype != dtype:
        lower = lax.convert_element_type(lower, dtype)
    if upper_dtype != dtype:
        upper = lax.convert_element_type(upper, dtype)
    _, _, result = while_loop(_fori_cond_fun, _fori_body_fun(body_fun, dbg),
                              (lower, upper, init_val))
    return result
    # END EXERCISE
# --8<-- [end:fori_loop]


def map(f: Callable, xs: Any, *, batch_size: int | None = None) -> Any:
    """`f` applied to each slice of xs along its leading axis: a scan with no carry.

    With `batch_size`, the scan runs over batches of that many slices, each vmapped.
    """
    if batch_size is None:
        _, ys = scan(lambda _, x: ((), f(x)), (), xs)
        return ys
    leaves, treedef = tree_flatten(xs)
    if not leaves:  # what scan says of nothing to scan over
        raise ValueError("scan got no values to scan over and `length` not provided.")
    n = leaves[0].shape[0]
    num_batches, remainder = divmod(n, batch_size) if batch_size else (0, n)
    done = num_batches * batch_size
    # each leaf is split (whole batches, then the rest) before the scan runs, as JAX orders it
    split = [(x[:done].reshape((num_batches, batch_size, *x.shape[1:])) if num_batches
              else None, x[done:] if remainder or not num_batches else None) for x in leaves]
    if not num_batches:  # no whole batch: vmap all there is, even nothing
        return vmap(f)(tree_unflatten(treedef, [rest for _, rest in split]))
    _, ys = scan(lambda _, x: ((), vmap(f)(x)), (), tree_unflatten(treedef, [b for b, _ in split]))
    flatten = lambda y: jnp.reshape(y, (-1, *y.shape[2:]))  # noqa: E731
    if not remainder:
        return tree_map(flatten, ys)
    rest = vmap(f)(tree_unflatten(treedef, [r for _, r in split]))
    return tree_map(lambda a, b: lax.concatenate([flatten(a), b], 0), ys, rest)
