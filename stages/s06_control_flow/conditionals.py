"""cond and switch: every branch traced once, all of them hung on ONE `cond` equation.

JAX: jax/_src/lax/control_flow/conditionals.py. `cond(pred, true_fun, false_fun, *operands)`
becomes `cond[branches=(false_jaxpr, true_jaxpr)] index *consts *operands`: the bool predicate
is converted to an int32 index, so branches are stored false-first, and `switch` is the same
primitive with more branches (its index clamped into range). Both branches are always traced;
which one runs is decided when the equation is evaluated. The primitive and its rules, in every
table, are cond_rules.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from stages.s01_pytrees import (
    PyTreeDef,
    equality_errors_pytreedef,
    keystr,
    tree_flatten,
    tree_flatten_with_path,
    tree_unflatten,
)
from stages.s02_tracing import core, dtypes, lax
from stages.s02_tracing import numpy as jnp
from stages.s02_tracing.api_util import debug_info, fun_sourceinfo
from stages.s02_tracing.core import ShapedArray

from . import eager
from .common import (
    initial_style_jaxpr,
    jaxpr_forwarding,
    merge_common_consts,
    prune_closed_jaxpr_outputs,
)
from .cond_rules import cond_p
from .util import aval_mismatch_extra, bulleted, check_branch_vma, typematch

_no_operand_sentinel = object()


def _operands(operands: tuple, operand: Any) -> tuple:
    """The operands, from the positional ones or the older `operand=` keyword (not both)."""
    if operand is _no_operand_sentinel:
        return operands
    if operands:
        raise TypeError("if 'operand' keyword is passed then no positional operands can be "
                        f"passed, got operand={operand!r} and positional operands {operands}")
    return (operand,)


def cond(pred: Any, true_fun: Callable, false_fun: Callable, *operands: Any,
         operand: Any = _no_operand_sentinel) -> Any:
    """`true_fun(*operands)` if pred else `false_fun(*operands)`: both traced, one cond equation.

    pred is a scalar bool (or number, compared with 0); the branches must return values of the
    same pytree structure, shapes and dtypes.
    """
    if not (callable(true_fun) and callable(false_fun)):
        if callable(false_fun) and len(operands) == 2 and callable(operands[1]):
            # the old form, cond(pred, x_true, f_true, x_false, f_false), still taken (as JAX
            # takes it): each branch gets both operands and reads its own
            x_true, f_true, x_false, f_false = true_fun, false_fun, *operands
            return cond(pred, lambda x, _: f_true(x), lambda _, x: f_false(x), x_true, x_false)
        raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
    operands = _operands(operands, operand)
    if pred is None:
        raise TypeError("cond predicate is None")
    if isinstance(pred, Sequence) or np.ndim(pred) != 0:
        what = (f"type {type(pred)}" if isinstance(pred, Sequence)
                else f"shape {np.shape(pred)}.")
        raise TypeError(f"Pred must be a scalar, got {pred} of {what}")
    try:
        pred_dtype = dtypes.dtype(pred)
    except TypeError as err:  # not an array, a scalar or a dtype at all
        raise TypeError(f"Pred type must be either boolean or number, got {pred}.") from err
    if pred_dtype.kind != "b":
        if pred_dtype.kind not in "iuf":
            raise TypeError(f"Pred type must be either boolean or number, got {pred_dtype}.")
        pred = pred != 0
    if eager.active(pred):  # disable_jit: the branch taken runs as Python, nothing is traced
        return eager.cond(pred, true_fun, false_fun, operands)
    index = lax.convert_element_type(pred, np.int32)
    return _bind_branches("cond", index, [true_fun, false_fun], ["true_fun", "false_fun"],
                          operands, false_first=True)


def switch(index: Any, branches: Sequence[Callable], *operands: Any,
           operand: Any = _no_operand_sentinel) -> Any:
    """`branches[index](*operands)`, the index clamped into range; one cond equation."""
    if not all(callable(b) for b in branches):
        raise TypeError("lax.switch: branches argument should be a sequence of callables.")
    operands = _operands(operands, operand)
    if np.ndim(index) != 0:
        raise TypeError(f"Branch index must be scalar, got {index} of shape {np.shape(index)}.")
    try:
        index_dtype = dtypes.result_type(index)
    except TypeError as err:
        raise TypeError(f"Index type must be an integer, got {index}.") from err
    if index_dtype.kind not in "iu":
        raise TypeError(f"Index type must be an integer, got {index} as {index_dtype}")
    branches = tuple(branches)
    if not branches:
        raise ValueError("Empty branch sequence")
    if len(branches) == 1:
        return branches[0](*operands)
    index = lax.convert_element_type(index, np.int32)
    # out-of-range indices pick the first or last branch
    index = lax.clamp(np.array(0, np.int32), index, np.array(len(branches) - 1, np.int32))
    if eager.active(index):
        return eager.switch(index, branches, operands)
    names = ["branch 0"] + [f"branch{i}" for i in range(1, len(branches))]  # JAX's spelling
    return _bind_branches("switch", index, list(branches), names, operands, false_first=False)


# --8<-- [start:bind_branches]
def _bind_branches(api_name: str, index: Any, funs: list[Callable], names: list[str],
                   operands: Sequence[Any], false_first: bool) -> Any:
    """Trace every branch once on the operands' avals, check they agree, bind one cond."""
    args, in_tree = tree_flatten(operands)
    avals = [core.get_aval(x) for x in args]
    traced = [initial_style_jaxpr(f, in_tree, avals, debug_info(api_name, f, operands, {}))
              for f in funs]
    jaxprs, consts = merge_common_consts([j for j, _, _ in traced], [c for _, c, _ in traced])
    for i in range(1, len(funs)):
        _check_branch_outputs(api_name, names[0], names[i], funs[0], funs[i],
                              traced[0][2], jaxprs[0].out_avals, traced[i][2],
                              jaxprs[i].out_avals)
    out_tree = traced[0][2]
    # Forwarding: an output that every branch returns straight from the same input (an operand
    # or a const) need not be an output of the equation; it is taken from the input instead,
    # so the jaxpr, and every transformation of it, carries one output fewer (as JAX does).
    fwds = [jaxpr_forwarding(j.jaxpr) for j in jaxprs]
    in_fwd = [f[0] if len(set(f)) == 1 else None for f in zip(*fwds, strict=True)]
    jaxprs = [prune_closed_jaxpr_outputs(j, [f is None for f in in_fwd]) for j in jaxprs]
    if false_first:
        jaxprs = jaxprs[::-1]  # branches=(false_fun, true_fun): index 0 is False
    outs = iter(cond_p.bind(index, *consts, *args, branches=tuple(jaxprs)))
    all_inputs = [*consts, *args]
    flat = [next(outs) if f is None else jnp.asarray(all_inputs[f]) for f in in_fwd]
    return tree_unflatten(out_tree, flat)
# --8<-- [end:bind_branches]


def _check_branch_outputs(api_name: str, name1: str, name2: str, f1: Callable, f2: Callable,
                          tree1: PyTreeDef, avals1: Sequence[ShapedArray],
                          tree2: PyTreeDef, avals2: Sequence[ShapedArray]) -> None:
    """Branches must return the same pytree structure, shapes and dtypes (weak types aside)."""
    info1, info2 = fun_sourceinfo(f1), fun_sourceinfo(f2)
    paths = [p for p, _ in tree_flatten_with_path(tree_unflatten(tree1, avals1))[0]]

    def component(p: tuple) -> str:
        return f" at path {keystr(p)}" if p else ""

    if tree1 != tree2:
        diffs = [f"{name1} output{component(p)} is a {t1} but {name2} output{component(p)} is "
                 f"a {t2}, so {why}"
                 for p, t1, t2, why in equality_errors_pytreedef(tree1, tree2)]
        differences = f"{diffs[0]}.\n" if len(diffs) == 1 else bulleted(diffs)
        raise TypeError(
            f"{api_name} branch outputs must have the same pytree structure, but they "
            f"differ:\n\n{name1} is {info1}\n{name2} is {info2}\n\n{differences}\n"
            f"Revise {name1} and/or {name2} so that they have the same pytree structure.")
    diffs = [f"the output of {name1}{component(p)} has type {a1.str_short()} but the "
             f"corresponding output of {name2} has type {a2.str_short()}"
             f"{aval_mismatch_extra(a1, a2)}"
             for p, a1, a2 in zip(paths, avals1, avals2, strict=True) if not typematch(a1, a2)]
    if diffs:
        if len(diffs) == 1:
            differences = f"{diffs[0][0].upper()}{diffs[0][1:]}.\n"
        else:
            differences = "\n".join(f"  * {d};" for d in diffs[:-1]) + f"\n  * {diffs[-1]}.\n"
        raise TypeError(
            f"{api_name} branches must have equal output types but they differ.\n\n"
            f"{name1} is {info1}\n{name2} is {info2}\n\n{differences}\n"
            f"Revise {name1} and/or {name2} so that all output types match.")
    check_branch_vma(api_name, name1, name2, info1, info2, paths, avals1, avals2)
