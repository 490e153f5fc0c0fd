"""custom_jvp and custom_vjp: a function with its own derivative rule, as a call primitive.

JAX: jax/_src/custom_derivatives.py. Calling a decorated function flattens its arguments and
the user's rules, then binds one primitive, `custom_jvp_call` or `custom_vjp_call`, carrying
the function *and* its rule as `subfuns`. What each trace does with it is custom_calls.py: one
rule per trace type, in the tables `custom_jvp_call_rules` and `custom_vjp_call_rules` (a
later trace, vmap's or jit's, registers its own there).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from stages.s01_pytrees import (
    PyTreeDef,
    keystr,
    tree_flatten,
    tree_flatten_with_path,
    tree_map,
    tree_structure,
    tree_unflatten,
    treedef_children,
)
from stages.s02_tracing import core, dtypes
from stages.s02_tracing import linear_util as lu
from stages.s02_tracing.api_util import debug_info
from stages.s02_tracing.core import ShapedArray
from stages.s02_tracing.errors import aval_mismatch_extra

from .ad_util import (
    SymbolicZero,
    Zero,
    add_jaxvals,
    float0,
    tangent_aval,
)
from .custom_arguments import (
    check_for_tracers,
    nondiff_argnums_of,
    resolve_kwargs,
    split_nondiff,
    stop_gradient_tracers,
)
from .custom_calls import (  # noqa: F401  (re-exported: JAX has them in custom_derivatives)
    custom_jvp_call_p,
    custom_jvp_call_rules,
    custom_vjp_call_p,
    custom_vjp_call_rules,
)

# ------------------------------------------------------------------ flattening the rules


@lu.transformation_with_aux2
def _flatten_fun_nokwargs(f: Callable, store: lu.Store, in_tree: PyTreeDef, *args: Any
                          ) -> list[Any]:
    ans_flat, out_tree = tree_flatten(f(*tree_unflatten(in_tree, args)))
    store.store((out_tree, [core.get_aval(x) for x in ans_flat]))
    return ans_flat


@lu.transformation_with_aux2
def _flatten_jvp(f: Callable, store: lu.Store, primal_name: str, jvp_name: str,
                 in_tree: PyTreeDef, maybe_out_type: Callable, *args: Any) -> list[Any]:
    """The user's jvp(primals, tangents) -> (primal_out, tangent_out), flat, with JAX's checks:
    against the function's own output if it ran (it is traced under a staging trace), and of
    each tangent's type against its primal's."""
    primals_in, tangents_in = args[: len(args) // 2], args[len(args) // 2 :]
    pair_out = f(tree_unflatten(in_tree, primals_in), tree_unflatten(in_tree, tangents_in))
    if not isinstance(pair_out, (list, tuple)) or len(pair_out) != 2:
        raise TypeError(f"Custom JVP rule {jvp_name} for function {primal_name} must produce a "
                        "pair (list or tuple of length two) representing primal and tangent "
                        f"outputs, but got {pair_out}.")
    primals_out, out_tree = tree_flatten(pair_out[0])
    tangents_out, out_tree2 = tree_flatten(pair_out[1])
    if out_tree != out_tree2:
        raise TypeError(f"Custom JVP rule {jvp_name} for function {primal_name} must produce "
                        "primal and tangent outputs with equal container (pytree) structures, "
                        f"but got {out_tree} and {out_tree2} respectively.")
    primal_avals = [core.get_aval(x) for x in primals_out]
    try:
        fun_out_tree, fun_avals = maybe_out_type()
    except lu.StoreException:
        fun_out_tree = None  # the function itself did not run (eagerly, only the rule does)
    if fun_out_tree is not None:
        _check_rule_primals(jvp_name, primal_name, out_tree, primal_avals, fun_out_tree,
                            fun_avals)
    expected = [tangent_aval(a.strip_weak_type()) for a in primal_avals]
    got = [_tangent_type(t).strip_weak_type() for t in tangents_out]
    bad = [(p, e, g) for p, e, g in zip(primal_avals, expected, got, strict=True)
           if (e.shape, e.dtype) != (g.shape, g.dtype)]
    if bad and len(expected) == 1:
        (p, e, g), = bad
        raise TypeError("Custom JVP rule must produce primal and tangent outputs with "
                        f"corresponding shapes and dtypes. Expected {e.str_short()} "
                        f"(tangent type of {p.strip_weak_type().str_short()}) but got "
                        f"{g.str_short()}.")
    if bad:
        raise TypeError("Custom JVP rule must produce primal and tangent outputs with "
                        "corresponding shapes and dtypes, but got:\n" + "\n".join(
                            f"  primal {p.strip_weak_type().str_short()} with tangent "
                            f"{g.str_short()}, expecting tangent {e.str_short()}"
                            for p, e, g in bad))
    store.store((out_tree, primal_avals))
    return [*primals_out, *tangents_out]


def _check_rule_primals(jvp_name: str, primal_name: str, out_tree: PyTreeDef,
                        avals: list[ShapedArray], fun_out_tree: PyTreeDef,
                        fun_avals: list[ShapedArray]) -> None:
    """The rule's primal output must have the function's structure, shapes and dtypes."""
    def shown(tree: PyTreeDef, avals: list[ShapedArray]) -> str:
        return str(tree_unflatten(tree, [a.str_short() for a in avals])).replace("'", "")

    what = (f"Custom JVP rule {jvp_name} for function {primal_name} must produce a pair (list "
            "or tuple of length two) where the first element represents the primal output "
            "(equal in value to the output of the custom_jvp-decorated function "
            f"{primal_name}, and in particular ")
    if out_tree != fun_out_tree:
        raise TypeError(
            what + "of the same container/pytree structure), but instead the JVP rule output's "
            f"first element had container/pytree structure:\n    {shown(out_tree, avals)}\n"
            f"while the custom_jvp-decorated function {primal_name} had output container/"
            f"pytree structure:\n    {shown(fun_out_tree, fun_avals)}.")
    if not all((a.shape, a.dtype) == (b.shape, b.dtype)
               for a, b in zip(avals, fun_avals, strict=True)):
        raise TypeError(
            what + "with leaves of the same shape/dtype), but instead the JVP rule output's "
            f"first element had shapes/dtypes of:\n    {shown(out_tree, avals)}\nwhile the "
            f"custom_jvp-decorated function {primal_name} had output shapes/dtypes of:\n"
            f"    {shown(fun_out_tree, fun_avals)}")


def _tangent_type(x: Any) -> ShapedArray:
    if isinstance(x, SymbolicZero):
        return x.aval
    if getattr(x, "dtype", None) == float0:
        return ShapedArray(np.shape(x), float0)
    return core.get_aval(x)


@dataclasses.dataclass(slots=True)
class CustomVJPPrimal:
    """What fwd gets for each argument leaf under symbolic_zeros: the value, and whether it is
    perturbed (differentiated; if not, its cotangent is known to be zero)."""
    value: Any
    perturbed: bool


def custom_vjp_primal_tree_values(tree: Any) -> Any:
    """fwd's arguments with each CustomVJPPrimal replaced by its value."""
    def value(leaf: Any) -> Any:
        if type(leaf) is not CustomVJPPrimal:
            raise TypeError(f"unexpected leaf type {type(leaf)}")
        return leaf.value
    return tree_map(value, tree)


@lu.transformation_with_aux2
def _flatten_fwd(f: Callable, store: lu.Store, primal_name: str, fwd_name: str,
                 symbolic_zeros: bool, in_tree: PyTreeDef, *args: Any) -> list[Any]:
    """The user's fwd(*args) -> (out, residuals), flat as [*residuals, *outs]. The flat
    arguments come in pairs (value, perturbed), as JAX's; with symbolic_zeros fwd sees both."""
    pairs = zip(args[::2], args[1::2], strict=True)
    leaves = [CustomVJPPrimal(x, p) for x, p in pairs] if symbolic_zeros else args[::2]
    pair_out = f(*tree_unflatten(in_tree, leaves))
    if not isinstance(pair_out, (list, tuple)) or len(pair_out) != 2:
        raise TypeError(
            f"Custom VJP fwd rule {fwd_name} for function {primal_name} must produce a pair "
            "(list or tuple of length two) where the first element represents the primal "
            f"output (equal to those of the custom_vjp-decorated function {primal_name}) and "
            "the second element represents residuals (i.e. values stored from the forward "
            "pass for use on the backward pass), but instead of a pair the fwd rule "
            f"{fwd_name} produced {pair_out}.")
    primals_out, out_tree = tree_flatten(pair_out[0])
    res, res_tree = tree_flatten(pair_out[1])
    store.store((out_tree, res_tree))
    return [*res, *primals_out]


# --8<-- [start:flatten_bwd]
@lu.transformation2
def _flatten_bwd(f: Callable, in_tree: PyTreeDef, in_avals: tuple[ShapedArray, ...],
                 out_trees: Callable, *args: Any) -> list[Any]:
    """The user's bwd(res, ct_out) -> one cotangent per primal argument (None: zeros), flat."""
    out_tree, res_tree = out_trees()
    res, cts_out = args[: res_tree.num_leaves], args[res_tree.num_leaves :]
    py_cts_in = f(tree_unflatten(res_tree, res), tree_unflatten(out_tree, cts_out))
    if isinstance(py_cts_in, list) and len(py_cts_in) == len(treedef_children(in_tree)):
        py_cts_in = tuple(py_cts_in)
    # The cotangents are a tree prefix of the arguments: a None stands for zeros of its whole
    # subtree (an argument, or part of one), any other leaf for each leaf under it (JAX's rule)
    zero = object()
    dummy = tree_unflatten(in_tree, [object()] * in_tree.num_leaves)
    flat: list[Any] = []

    def append(ct: Any, subtree: Any) -> None:
        n = tree_structure(subtree).num_leaves
        if ct is not None or subtree is not None:
            flat.extend([zero if ct is None else ct] * n)

    try:
        if not isinstance(py_cts_in, tuple):
            raise ValueError
        tree_map(append, py_cts_in, dummy, is_leaf=lambda x: x is None)
    except ValueError:
        raise TypeError(
            "Custom VJP bwd rule must produce an output with the same container (pytree) "
            "structure as the args tuple of the primal function, and in particular must "
            "produce a tuple of length equal to the number of arguments to the primal "
            f"function, but got bwd output structure {tree_flatten(py_cts_in)[1]} for primal "
            f"input structure {in_tree}.") from None
    paths = [p for p, _ in tree_flatten_with_path(dummy)[0]]
    results = []
    for path, aval, ct in zip(paths, in_avals, flat, strict=True):
        expected = tangent_aval(aval)
        # an int or bool argument's cotangent is float0 whatever bwd says (1, 2.0, float0 zeros)
        if ct is zero or type(ct) is Zero or expected.dtype == float0:
            results.append(Zero(expected))
            continue
        if type(ct) is SymbolicZero:  # a zero bwd says it knows of (symbolic_zeros)
            if (ct.aval.shape, ct.aval.dtype) != (expected.shape, expected.dtype):
                raise ValueError(
                    "Custom VJP bwd rule produced a SymbolicZero with a shape/dtype that does "
                    "not match the corresponding input tangent shape/dtype: at "
                    f"output{keystr(path)} the SymbolicZero had shape/dtype "
                    f"{ct.aval.str_short()} while the corresponding input had shape/dtype "
                    f"{aval.str_short()}. Consider just returning a None here instead of a "
                    "SymbolicZero object.")
            results.append(Zero(ct.aval))
            continue
        got = core.get_aval(ct)
        # JAX lets a float argument's cotangent have another dtype (a temporary exception)
        same_dtype = got.dtype == expected.dtype or dtypes.issubdtype(expected.dtype, np.inexact)
        if got.shape != expected.shape or not same_dtype:
            raise ValueError(
                "Custom VJP bwd rule must produce an output with the same type as the args "
                f"tuple of the primal function, but at output{keystr(path)} the bwd rule "
                f"produced an output of type {got.str_short()} corresponding to an input of "
                f"type {aval.str_short()}{aval_mismatch_extra(aval, got)}")
        results.append(ct)
    return results
# --8<-- [end:flatten_bwd]


# ------------------------------------------------------------------ the decorators


class custom_jvp:
    """A function with its own forward-mode rule: `@custom_jvp` then `@f.defjvp`."""

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = (),
                 nondiff_argnames: Sequence[str] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = nondiff_argnums_of(fun, nondiff_argnums, nondiff_argnames)
        self.jvp: Callable | None = None
        self.symbolic_zeros = False

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        """jvp(primals, tangents) -> (primal_out, tangent_out), primals a tuple of arguments.

        With symbolic_zeros, a tangent that is zero arrives as a `SymbolicZero` (no data), and
        the rule may return one too: it can skip the work a zero would cost."""
        self.jvp = jvp
        self.symbolic_zeros = bool(symbolic_zeros)
        return jvp

    def defjvps(self, *jvps: Callable | None) -> None:
        """One rule per argument, rule(g, ans, *primals) -> its tangent contribution."""
        if self.nondiff_argnums:
            raise TypeError("Can't use ``defjvps`` with ``nondiff_argnums``.")

        def jvp(primals: tuple, tangents: tuple) -> tuple[Any, Any]:
            primal_out = self(*primals)
            # an argument without a rule contributes symbolic zeros, which the sum skips;
            # if no argument has one the tangent stays a tree of Zeros, which JAX refuses
            zeros = tree_map(Zero.from_primal_value, primal_out)
            contributions = [zeros if rule is None else rule(g, primal_out, *primals)
                             for rule, g in zip(jvps, tangents, strict=True)]
            return primal_out, tree_map(lambda _, *ts: functools.reduce(add_jaxvals, ts),
                                        primal_out, *contributions)

        self.defjvp(jvp)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = getattr(self.fun, "__name__", "fun")
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {name} using defjvp.")
        args = resolve_kwargs("custom_jvp", self.fun, args, kwargs)
        args = tuple(stop_gradient_tracers(x) if i in self.nondiff_argnums else x
                     for i, x in enumerate(args))
        fun, static, dyn_args = split_nondiff(self.fun, self.nondiff_argnums, args)
        rule = self.jvp
        if static:
            rule = functools.update_wrapper(functools.partial(self.jvp, *static), self.jvp)
        args_flat, in_tree = tree_flatten(dyn_args)
        f = lu.wrap_init(fun, debug_info=debug_info("custom_jvp fun", fun, dyn_args, {}))
        jvp_name = getattr(self.jvp, "__name__", "jvp")
        jvp = lu.wrap_init(rule, debug_info=debug_info("custom_jvp jvp", rule,
                                                       (dyn_args, dyn_args), {}))
        flat_fun, out_type1 = _flatten_fun_nokwargs(f, in_tree, use_eq_store=True)
        flat_jvp, out_type2 = _flatten_jvp(jvp, name, jvp_name, in_tree, out_type1,
                                           use_eq_store=True)
        out_flat = custom_jvp_call_p.bind(*args_flat, subfuns=(flat_fun, flat_jvp),
                                          symbolic_zeros=self.symbolic_zeros)
        _, (out_tree, _) = lu.merge_linear_aux(out_type1, out_type2)
        return tree_unflatten(out_tree, out_flat)


class custom_vjp:
    """A function with its own reverse-mode rule: `@custom_vjp` then `f.defvjp(fwd, bwd)`."""

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = (),
                 nondiff_argnames: Sequence[str] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = nondiff_argnums_of(fun, nondiff_argnums, nondiff_argnames)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None
        self.symbolic_zeros = False
        self.optimize_remat = False

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False,
               optimize_remat: bool = False) -> None:
        """fwd(*args) -> (out, residuals); bwd(*nondiff_args, residuals, ct_out) -> a tuple
        of one cotangent per differentiable argument.

        With symbolic_zeros, fwd gets each argument leaf as a CustomVJPPrimal (`.value`,
        `.perturbed`), and bwd gets a SymbolicZero for a cotangent known to be zero.
        optimize_remat is accepted and checked, but changes nothing here (JAX stages fwd as a
        `remat_opt` equation that a checkpoint can recompute; the values are the same)."""
        if symbolic_zeros and optimize_remat:
            raise NotImplementedError(
                "remat optimization for custom_vjp does not support symbolic zeros")
        self.fwd, self.bwd = fwd, bwd
        self.symbolic_zeros = bool(symbolic_zeros)
        self.optimize_remat = bool(optimize_remat)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = getattr(self.fun, "__name__", "fun")
        if self.fwd is None or self.bwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {name} using defvjp.")
        args = resolve_kwargs("custom_vjp", self.fun, args, kwargs)
        for i in self.nondiff_argnums:
            check_for_tracers(args[i])
        fun, static, dyn_args = split_nondiff(self.fun, self.nondiff_argnums, args)
        fwd, _, _ = split_nondiff(self.fwd, self.nondiff_argnums, args)
        bwd = self.bwd
        if static:
            bwd = functools.update_wrapper(functools.partial(self.bwd, *static), self.bwd)
        args_flat, in_tree = tree_flatten(dyn_args)
        in_avals = tuple(core.get_aval(x) for x in args_flat)
        f = lu.wrap_init(fun, debug_info=debug_info("custom_vjp fun", fun, dyn_args, {}))
        fwd_w = lu.wrap_init(fwd, debug_info=debug_info("custom_vjp fwd", fwd, dyn_args, {}))
        flat_fun, out_type = _flatten_fun_nokwargs(f, in_tree, use_eq_store=True)
        flat_fwd, out_trees = _flatten_fwd(fwd_w, name, getattr(self.fwd, "__name__", "fwd"),
                                           self.symbolic_zeros, in_tree, use_eq_store=True)
        flat_bwd = _flatten_bwd(lu.wrap_init(bwd), in_tree, in_avals, out_trees)
        out_flat = custom_vjp_call_p.bind(*args_flat, subfuns=(flat_fun, flat_fwd, flat_bwd),
                                          out_trees=out_trees,
                                          symbolic_zeros=self.symbolic_zeros)
        _, (out_tree, _) = lu.merge_linear_aux(out_type, out_trees)
        return tree_unflatten(out_tree, out_flat)
