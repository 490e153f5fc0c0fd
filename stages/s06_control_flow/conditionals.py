"""cond and switch: every branch traced once, all of them hung on ONE `cond` equation.

JAX: jax/_src/lax/control_flow/conditionals.py. `cond(pred, true_fun, false_fun, *operands)`
becomes `cond[branches=(false_jaxpr, true_jaxpr)] index *consts *operands`: the bool predicate
is converted to an int32 index, so branches are stored false-first, and `switch` is the same
primitive with more branches (its index clamped into range). Both branches are always traced;
which one runs is decided when the equation is evaluated (impl), or, under vmap with a batched
predicate, both run and `select_n` picks per example (the batching rule below).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from stages.s01_pytrees import (
    PyTreeDef,
    keystr,
    tree_flatten,
    tree_flatten_with_path,
    tree_unflatten,
)
from stages.s02_tracing import core, dtypes, lax
from stages.s02_tracing import numpy as jnp
from stages.s02_tracing.api_util import debug_info, fun_sourceinfo
from stages.s02_tracing.core import ClosedJaxpr, ShapedArray
from stages.s04_autodiff.ad_util import stop_gradient
from stages.s05_vmap.batching import (
    AxisData,
    BatchDim,
    batch_jaxpr,
    bdim_at_front,
    moveaxis,
    not_mapped,
    primitive_batchers,
)

from .common import (
    _as_numpy,
    _bulleted,
    _initial_style_jaxpr,
    _jaxpr_forwarding,
    _merge_common_consts,
    _prune_outputs,
    aval_mismatch_extra,
    equality_errors,
    typematch,
)

_no_operand_sentinel = object()

# ------------------------------------------------------------------ the primitive

cond_p = core.Primitive("cond")
cond_p.multiple_results = True


# --8<-- [start:cond_impl]
def _cond_impl(index: np.ndarray, *args: Any, branches: Sequence[ClosedJaxpr]) -> list[Any]:
    """Run the one branch the index picks; any index out of range runs the last branch.

    That is XLA's Conditional (so -1 and -5 run the last branch too); `switch` clamps its
    index before binding, so only a cond_p bound directly sees the difference.
    """
    i = int(index)
    branch = branches[i if 0 <= i < len(branches) else len(branches) - 1]
    outs = core.eval_jaxpr(branch.jaxpr, branch.consts, *args)
    return [_as_numpy(x, a) for x, a in zip(outs, branch.out_avals, strict=True)]
# --8<-- [end:cond_impl]


def _cond_abstract_eval(index: ShapedArray, *avals: ShapedArray,
                        branches: Sequence[ClosedJaxpr]) -> list[ShapedArray]:
    """The outputs of branch 0 (all branches were checked to agree when cond was called)."""
    if index.shape or not np.issubdtype(index.dtype, np.integer):
        raise core.JaxprTypeError(f"cond index must be an integer scalar, got {index}")
    for branch in branches:
        if len(branch.in_avals) != len(avals) or not all(
                typematch(a, b) for a, b in zip(branch.in_avals, avals, strict=True)):
            raise core.JaxprTypeError(
                f"cond branch takes {[str(a) for a in branch.in_avals]} but is called with "
                f"{[str(a) for a in avals]}")
        if not all(typematch(a, b) for a, b in
                   zip(branch.out_avals, branches[0].out_avals, strict=True)):
            raise core.JaxprTypeError("cond branches must have equal output types")
    return list(branches[0].out_avals)


cond_p.def_impl(_cond_impl)
cond_p.def_abstract_eval(_cond_abstract_eval)

# ------------------------------------------------------------------ the API


def cond(pred: Any, true_fun: Callable, false_fun: Callable, *operands: Any,
         operand: Any = _no_operand_sentinel) -> Any:
    """`true_fun(*operands)` if pred else `false_fun(*operands)`: both traced, one cond equation.

    pred is a scalar bool (or number, compared with 0); the branches must return values of the
    same pytree structure, shapes and dtypes.
    """
    if not (callable(true_fun) and callable(false_fun)):
        raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
    if operand is not _no_operand_sentinel:
        if operands:
            raise TypeError("if 'operand' keyword is passed then no positional operands can be "
                            f"passed, got operand={operand!r} and positional operands "
                            f"{operands}")
        operands = (operand,)
    if pred is None:
        raise TypeError("cond predicate is None")
    if isinstance(pred, Sequence) or np.ndim(pred) != 0:
        what = (f"type {type(pred)}" if isinstance(pred, Sequence)
                else f"shape {np.shape(pred)}.")
        raise TypeError(f"Pred must be a scalar, got {pred} of {what}")
    pred_dtype = dtypes.dtype(pred)
    if pred_dtype.kind != "b":
        if pred_dtype.kind not in "iuf":
            raise TypeError(f"Pred type must be either boolean or number, got {pred_dtype}.")
        pred = pred != 0
    index = lax.convert_element_type(pred, np.int32)
    return _bind_branches("cond", index, [true_fun, false_fun], ["true_fun", "false_fun"],
                          operands, false_first=True)


def switch(index: Any, branches: Sequence[Callable], *operands: Any,
           operand: Any = _no_operand_sentinel) -> Any:
    """`branches[index](*operands)`, the index clamped into range; one cond equation."""
    if not all(callable(b) for b in branches):
        raise TypeError("lax.switch: branches argument should be a sequence of callables.")
    if operand is not _no_operand_sentinel:
        if operands:
            raise TypeError("if 'operand' keyword is passed then no positional operands can be "
                            f"passed, got operand={operand!r} and positional operands "
                            f"{operands}")
        operands = (operand,)
    if np.ndim(index) != 0:
        raise TypeError(f"Branch index must be scalar, got {index} of shape {np.shape(index)}.")
    index_dtype = dtypes.dtype(index)
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
    names = ["branch 0"] + [f"branch{i}" for i in range(1, len(branches))]  # JAX's spelling
    return _bind_branches("switch", index, list(branches), names, operands, false_first=False)


# --8<-- [start:bind_branches]
def _bind_branches(api_name: str, index: Any, funs: list[Callable], names: list[str],
                   operands: Sequence[Any], false_first: bool) -> Any:
    """Trace every branch once on the operands' avals, check they agree, bind one cond."""
    args, in_tree = tree_flatten(operands)
    avals = [core.get_aval(x) for x in args]
    traced = [_initial_style_jaxpr(f, in_tree, avals, debug_info(api_name, f, operands, {}))
              for f in funs]
    jaxprs, consts = _merge_common_consts([j for j, _, _ in traced], [c for _, c, _ in traced])
    for i in range(1, len(funs)):
        _check_branch_outputs(api_name, names[0], names[i], funs[0], funs[i],
                              traced[0][2], jaxprs[0].out_avals, traced[i][2],
                              jaxprs[i].out_avals)
    out_tree = traced[0][2]
    # an output every branch simply forwards from one input is not an output of the equation
    fwds = [_jaxpr_forwarding(j.jaxpr) for j in jaxprs]
    in_fwd = [f[0] if len(set(f)) == 1 else None for f in zip(*fwds, strict=True)]
    jaxprs = [_prune_outputs(j, [f is None for f in in_fwd]) for j in jaxprs]
    if false_first:
        jaxprs = jaxprs[::-1]  # branches=(false_fun, true_fun): index 0 is False
    outs = iter(cond_p.bind(index, *consts, *args, branches=tuple(jaxprs)))
    all_inputs = [*consts, *args]
    flat = [next(outs) if f is None else jnp.asarray(all_inputs[f]) for f in in_fwd]
    return tree_unflatten(out_tree, flat)
# --8<-- [end:bind_branches]


class _LeafMeta(type):
    # equality_errors prints a leaf's type: this class prints as JAX's words, "pytree leaf"
    def __repr__(cls) -> str:
        return "pytree leaf"


def _check_branch_outputs(api_name: str, name1: str, name2: str, f1: Callable, f2: Callable,
                          tree1: PyTreeDef, avals1: Sequence[ShapedArray],
                          tree2: PyTreeDef, avals2: Sequence[ShapedArray]) -> None:
    """Branches must return the same pytree structure, shapes and dtypes (weak types aside)."""
    info1, info2 = fun_sourceinfo(f1), fun_sourceinfo(f2)
    paths = [p for p, _ in tree_flatten_with_path(tree_unflatten(tree1, avals1))[0]]

    def component(p: tuple) -> str:
        return f" at path {keystr(p)}" if p else ""

    if tree1 != tree2:
        # JAX compares the structures with a stand-in leaf that prints as "pytree leaf"
        leaf = _LeafMeta("Leaf", (), {})()
        diffs = [f"{name1} output{component(p)} is a {t1} but {name2} output{component(p)} is "
                 f"a {t2}, so {why}"
                 for p, t1, t2, why in equality_errors(
                     tree_unflatten(tree1, [leaf] * tree1.num_leaves),
                     tree_unflatten(tree2, [leaf] * tree2.num_leaves))]
        differences = f"{diffs[0]}.\n" if len(diffs) == 1 else _bulleted(diffs)
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


# ------------------------------------------------------------------ batching


def _bcast_select_n(which: Any, *cases: Any) -> Any:
    """select_n with a batch of scalars `which` spread over the cases' trailing axes."""
    if np.ndim(which) != np.ndim(cases[0]):
        which = lax.broadcast_in_dim(which, np.shape(cases[0]), list(range(np.ndim(which))))
    return lax.select_n(which, *cases)


# --8<-- [start:cond_batching]
def _cond_batching_rule(axis_data: AxisData, args: Sequence[Any], dims: Sequence[BatchDim],
                        *, branches: Sequence[ClosedJaxpr]) -> tuple[list[Any], list[BatchDim]]:
    """Unbatched index: one cond over batched branches. Batched index: every branch runs on
    the whole batch and select_n picks, per example, the output of that example's branch."""
    index, *ops = args
    index_dim, *op_dims = dims
    if index_dim is not not_mapped:
        # EXERCISE 6.5 (cond-as-select): run every branch on every example, then select_n
        index, *ops = (bdim_at_front(x, d, axis_data.size) for x, d in zip(args, dims,
                                                                          strict=True))
        in_batched = [True] * len(branches[0].in_avals)
        out_batched = [True] * len(branches[0].out_avals)
        branch_outs = []
        for i, branch in enumerate(branches):
            batched, _ = batch_jaxpr(branch, axis_data, in_batched, out_batched)
            # the examples that do not take branch i see its operands under stop_gradient, so
            # a nan or inf in a branch they never take cannot reach their gradient
            predicate = lax.eq(index, np.int32(i))
            ops_i = [_bcast_select_n(predicate, stop_gradient(x), x) for x in ops]
            branch_outs.append(core.jaxpr_as_fun(batched)(*ops_i))
        out = [_bcast_select_n(index, *outs) for outs in zip(*branch_outs, strict=True)]
        return out, [0] * len(out)
        # END EXERCISE
    ops_batched = [d is not not_mapped for d in op_dims]
    ops = [moveaxis(x, d, 0) if b else x for x, d, b in zip(ops, op_dims, ops_batched,
                                                             strict=True)]
    # an output batched in any branch must be batched in all of them
    outs_batched = [batch_jaxpr(b, axis_data, ops_batched, False)[1] for b in branches]
    out_batched = [any(bs) for bs in zip(*outs_batched, strict=True)]
    new_branches = tuple(batch_jaxpr(b, axis_data, ops_batched, out_batched)[0]
                         for b in branches)
    out = cond_p.bind(index, *ops, branches=new_branches)
    return out, [0 if b else not_mapped for b in out_batched]
# --8<-- [end:cond_batching]


primitive_batchers[cond_p] = _cond_batching_rule
