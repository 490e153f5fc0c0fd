"""checkpoint (remat): trade memory for compute by recomputing values in the backward pass.

JAX: jax/_src/ad_checkpoint.py. `checkpoint(f)` traces f to a jaxpr and binds one `remat2`
equation holding it. The rules that make it work: its jvp differentiates the inner jaxpr (still
inside a remat2); its partial-eval rule splits the inner jaxpr with stage 3's
`partial_eval_jaxpr_custom` and the *policy*, so only what the policy saves becomes a residual
and the rest is recomputed inside the linear side's remat2; its transpose runs the backward
pass of the inner jaxpr inside another remat2. `checkpoint_name` tags a value for the
name-based policies.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from stages.s01_pytrees import (
    broadcast_prefix,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_unflatten,
)
from stages.s02_tracing import core, make_jaxpr
from stages.s02_tracing import linear_util as lu
from stages.s02_tracing.api_util import debug_info
from stages.s02_tracing.core import ClosedJaxpr, Jaxpr, Literal
from stages.s02_tracing.partial_eval import (
    convert_constvars_jaxpr,
    trace_to_closed_jaxpr,
    trace_to_jaxpr,
)
from stages.s03_partial_eval import partial_eval as pe
from stages.s03_partial_eval.ad_checkpoint import (  # noqa: F401  (re-exported, as JAX has them)
    checkpoint_dots,
    dots_saveable,
    dots_with_no_batch_dims_saveable,
    everything_saveable,
    nothing_saveable,
    save_from_both_policies,
)

from . import ad
from .ad_util import Zero, tangent_aval

# ------------------------------------------------------------------ names and name policies

name_p = core.Primitive("name")
name_p.def_impl(lambda x, *, name: x)
name_p.def_abstract_eval(lambda x, *, name: x)


def checkpoint_name(x: Any, name: str) -> Any:
    """x, unchanged, but tagged `name` for the name-based policies (an identity equation)."""
    return tree_map(functools.partial(name_p.bind, name=name), x)


def _name_jvp(primals, tangents, *, name):
    (x,), (xdot,) = primals, tangents
    return name_p.bind(x, name=name), xdot  # the tangent is not named


ad.primitive_jvps[name_p] = _name_jvp


@dataclass(frozen=True)
class SaveOnlyTheseNames:
    """Save the values tagged with one of these names; recompute everything else."""

    saveable_names: frozenset[str]

    def __call__(self, prim: core.Primitive, *avals: Any, **params: Any) -> bool:
        return prim is name_p and params["name"] in self.saveable_names


@dataclass(frozen=True)
class SaveAnyNamesButThese:
    """Save every tagged value except these names; recompute everything else."""

    names: frozenset[str]

    def __call__(self, prim: core.Primitive, *avals: Any, **params: Any) -> bool:
        return prim is name_p and params["name"] not in self.names


def save_only_these_names(*names: str) -> SaveOnlyTheseNames:
    return SaveOnlyTheseNames(frozenset(names))


def save_any_names_but_these(*names: str) -> SaveAnyNamesButThese:
    return SaveAnyNamesButThese(frozenset(names))


def save_anything_except_these_names(*names_not_to_save: str) -> Callable[..., bool]:
    """Meant to save every value but those named so. JAX 0.10.2's never reads the names and
    saves everything (everything_saveable under another name); ours does the same."""
    return lambda *_, **__: True


def _cse_flags(prevent_cse: bool | tuple[bool, ...], *groups: Any) -> bool | tuple[bool, ...]:
    """prevent_cse for a new remat2 equation: a bool stays (it covers every operand); a tuple,
    one flag per operand, is rebuilt as the groups' flags in operand order."""
    if isinstance(prevent_cse, bool):
        return prevent_cse
    return tuple(flag for group in groups for flag in group)


def _kept(flags: Any, keep: Sequence[bool]) -> Any:
    """The flags of the kept operands (a bool prevent_cse is every operand's)."""
    if isinstance(flags, bool):
        return flags
    return tuple(f for f, k in zip(flags, keep, strict=True) if k)


# ------------------------------------------------------------------ the remat2 primitive

remat_p = core.Primitive("remat2")
remat_p.multiple_results = True


def _remat_impl(*args, jaxpr, prevent_cse, differentiated, policy):
    return core.eval_jaxpr(jaxpr, (), *args)


def _remat_abstract_eval(*avals, jaxpr, prevent_cse, differentiated, policy):
    return [v.aval for v in jaxpr.outvars]


remat_p.def_impl(_remat_impl)
remat_p.def_abstract_eval(_remat_abstract_eval)


def _remat_jvp(primals, tangents, *, jaxpr, prevent_cse, differentiated, policy):
    """A remat2 of the inner jaxpr's jvp: [primals, nonzero tangents] in and out."""
    nonzeros = [type(t) is not Zero for t in tangents]
    jvp_closed, out_nonzeros = ad.jvp_jaxpr(ClosedJaxpr(jaxpr, []), nonzeros, False)
    nz_tangents = [t for t in tangents if type(t) is not Zero]
    cse = _cse_flags(prevent_cse, [False] * len(jvp_closed.consts), prevent_cse,
                     [True] * len(nz_tangents))  # the tangents are fenced, as in JAX
    outs = remat_p.bind(*jvp_closed.consts, *primals, *nz_tangents,
                        jaxpr=convert_constvars_jaxpr(jvp_closed.jaxpr),
                        prevent_cse=cse, differentiated=differentiated, policy=policy)
    primals_out, nz_tangents_out = outs[: len(jaxpr.outvars)], iter(outs[len(jaxpr.outvars) :])
    tangents_out = [next(nz_tangents_out) if nz else Zero.from_primal_value(p)
                    for p, nz in zip(primals_out, out_nonzeros, strict=True)]
    return primals_out, tangents_out


ad.primitive_jvps[remat_p] = _remat_jvp


# --8<-- [start:remat_partial_eval]
def _remat_partial_eval(trace: pe.JaxprTrace, *tracers: pe.JaxprTracer, jaxpr: Jaxpr,
                        prevent_cse: bool, differentiated: bool, policy: Callable | None):
    """Split the inner jaxpr by the policy: the known half runs now (its saved values are the
    residuals); the unknown half, recomputing what was not saved, is a new remat2 equation."""
    in_unknowns = [not t.is_known() for t in tracers]
    jaxpr_known, jaxpr_staged, out_unknowns, out_inst, num_res = pe.partial_eval_jaxpr_custom(
        jaxpr, in_unknowns, [True] * len(tracers), False, False, policy or nothing_saveable)
    # keep only what the unknown outputs need, and only the residuals they read
    # (the staged jaxpr returns the instantiated outputs; keep those that are unknown)
    staged_unknown = [uk for uk, inst in zip(out_unknowns, out_inst, strict=True) if inst]
    jaxpr_unknown, used_staged = pe.dce_jaxpr(jaxpr_staged, staged_unknown)
    used_res, used_ins = used_staged[:num_res], used_staged[num_res:]
    n_known_outs = len(out_unknowns) - sum(out_unknowns)
    jaxpr_known, used_known = pe.dce_jaxpr(jaxpr_known, [True] * n_known_outs + used_res)
    # the known half runs on the parent trace (JAX also inserts reduce_precision here, so XLA
    # cannot compute a residual more precisely in the forward pass than in the recompute)
    known_vals = [t.pval.get_known() for t in tracers if t.is_known()]
    known_vals = [v for v, used in zip(known_vals, used_known, strict=True) if used]
    outs = core.eval_jaxpr(jaxpr_known, (), *known_vals)
    known_outs, residuals = outs[:n_known_outs], outs[n_known_outs:]
    res_tracers = [trace.new_instantiated_const(r) for r in residuals]
    staged_in = [trace.instantiate_const(t)
                 for t, used in zip(tracers, used_ins, strict=True) if used]
    out_tracers = [pe.JaxprTracer(trace, pe.PartialVal.unknown(v.aval), None)
                   for v in jaxpr_unknown.outvars]
    cse = _cse_flags(prevent_cse, [True] * len(res_tracers), _kept(prevent_cse, used_ins))
    params = dict(jaxpr=jaxpr_unknown, prevent_cse=cse, differentiated=True, policy=policy)
    recipe = pe.new_eqn_recipe(trace, [*res_tracers, *staged_in], out_tracers, remat_p, params)
    for t in out_tracers:
        t.recipe = recipe
    known_it, unknown_it = iter(known_outs), iter(out_tracers)
    return [next(unknown_it) if uk else next(known_it) for uk in out_unknowns]
# --8<-- [end:remat_partial_eval]


pe.custom_partial_eval_rules[remat_p] = _remat_partial_eval


def _remat_partial_eval_custom_params_updater(unks_in, inst_in, kept_outs_known, inst_out,
                                              num_res, params_known, params_staged):
    # the staged half is what the backward pass recomputes: it is marked differentiated
    prevent_cse = params_known["prevent_cse"]
    known = _kept(prevent_cse, [not uk for uk in unks_in])
    staged = _cse_flags(prevent_cse, [True] * num_res, _kept(prevent_cse, inst_in))
    return (dict(params_known, prevent_cse=known),
            dict(params_staged, prevent_cse=staged, differentiated=True))


# A remat2 nested in a remat2 (or under a cond, a scan) is split equation by equation: without
# this rule its known outputs would be staged with it, and the primal would need a tangent.
# JAX: remat_partial_eval_custom_params_updater with pe.call_partial_eval_custom_rule
pe.partial_eval_jaxpr_custom_rules[remat_p] = functools.partial(
    pe.call_partial_eval_custom_rule, "jaxpr", _remat_partial_eval_custom_params_updater)


def transpose_jaxpr(jaxpr: ClosedJaxpr, in_linear: Sequence[bool], out_zeros: Sequence[bool]
                    ) -> tuple[ClosedJaxpr, list[bool]]:
    """A jaxpr from [non-linear inputs, nonzero output cts] to the nonzero input cts; it
    recomputes what the linear part needs from the non-linear inputs, then runs backwards."""
    in_avals = [*[a for a, lin in zip(jaxpr.in_avals, in_linear, strict=True) if not lin],
                *[tangent_aval(a) for a, z in zip(jaxpr.out_avals, out_zeros, strict=True)
                  if not z]]
    in_zeros: list[list[bool]] = []

    def transposed(*args: Any) -> list[Any]:
        n_nonlinear = len(in_linear) - sum(in_linear)
        ins, cts = args[:n_nonlinear], iter(args[n_nonlinear:])
        known, linear, _, _ = pe.partial_eval_jaxpr_nounits(jaxpr, in_linear, True)
        residuals = core.jaxpr_as_fun(known)(*ins)
        out_cts = [Zero(tangent_aval(a)) if z else next(cts)
                   for a, z in zip(jaxpr.out_avals, out_zeros, strict=True)]
        undefined = [ad.UndefinedPrimal(v.aval) for v in linear.jaxpr.invars[len(residuals):]]
        cts_in = ad.backward_pass(linear.jaxpr, linear.consts, [*residuals, *undefined],
                                  out_cts)[len(residuals):]
        in_zeros.append([type(ct) is Zero for ct in cts_in])
        return [ct for ct in cts_in if type(ct) is not Zero]

    return trace_to_closed_jaxpr(lu.wrap_init(transposed), in_avals), in_zeros[0]


def _remat_transpose(cts, *args, jaxpr, prevent_cse, differentiated, policy):
    in_linear = [ad.is_undefined_primal(x) for x in args]
    out_zeros = [type(ct) is Zero for ct in cts]
    transposed, in_zeros = transpose_jaxpr(ClosedJaxpr(jaxpr, []), in_linear, out_zeros)
    nonlinear = [x for x, lin in zip(args, in_linear, strict=True) if not lin]
    nz_cts = [ct for ct in cts if type(ct) is not Zero]
    cse = _cse_flags(prevent_cse, [False] * len(transposed.consts),
                     _kept(prevent_cse, [not lin for lin in in_linear]), [True] * len(nz_cts))
    cts_nz = iter(remat_p.bind(*transposed.consts, *nonlinear, *nz_cts,
                               jaxpr=convert_constvars_jaxpr(transposed.jaxpr),
                               prevent_cse=cse, differentiated=True, policy=policy))
    zeros = iter(in_zeros)
    return [(None if next(zeros) else next(cts_nz)) if lin else None for lin in in_linear]


ad.primitive_transposes[remat_p] = _remat_transpose


def _remat_dce(used_outputs: list[bool], eqn: core.JaxprEqn):
    """Prune inside the inner jaxpr too (JAX: remat_dce)."""
    if not any(used_outputs) and not pe.has_effects(eqn):
        return [False] * len(eqn.invars), None
    new_jaxpr, used_inputs = pe.dce_jaxpr(eqn.params["jaxpr"], used_outputs)
    new_eqn = eqn.replace(
        invars=[v for v, used in zip(eqn.invars, used_inputs, strict=True) if used],
        outvars=[v for v, used in zip(eqn.outvars, used_outputs, strict=True) if used],
        params=dict(eqn.params, jaxpr=new_jaxpr,
                    prevent_cse=_kept(eqn.params["prevent_cse"], used_inputs)))
    return used_inputs, new_eqn


pe.dce_rules[remat_p] = _remat_dce

# ------------------------------------------------------------------ checkpoint


def checkpoint(fun: Callable, *, prevent_cse: bool | Sequence[bool] = True,
               policy: Callable | None = None,
               static_argnums: int | tuple[int, ...] = ()) -> Callable:
    """`fun`, staged as one remat2 equation: under grad, what `policy` does not save is
    recomputed in the backward pass (default: save nothing but the inputs). prevent_cse may
    be a tuple, a prefix of the (non-static) arguments: a flag for each."""
    if isinstance(prevent_cse, Sequence):
        prevent_cse = tuple(prevent_cse)
    if not isinstance(prevent_cse, (tuple, bool)):
        raise TypeError(f"prevent_cse must be a bool or tuple of bools, got {type(prevent_cse)=}")

    @functools.wraps(fun)
    def fun_remat(*args: Any, **kwargs: Any) -> Any:
        static = _resolve_static_argnums(static_argnums, len(args))
        dbg = debug_info("checkpoint / remat", fun, args, kwargs, static)
        dyn_args = tuple(a for i, a in enumerate(args) if i not in static)
        for x in tree_leaves((dyn_args, kwargs)):
            core.get_aval(x)  # JAX's message for an argument that is not an array
        # a static argument may be anything, a tracer too: it is closed over, never a key
        closed, args_flat, out_tree = trace_to_jaxpr(fun, args, kwargs, dbg, static,
                                                     require_static_args_hashable=False)
        cse = prevent_cse
        if isinstance(prevent_cse, tuple):  # the constants the trace found are never fenced
            flags = broadcast_prefix(prevent_cse, (dyn_args, kwargs) if kwargs else dyn_args)
            cse = _cse_flags(prevent_cse, [False] * len(closed.consts), flags)
        out_flat = remat_p.bind(*closed.consts, *args_flat,
                                jaxpr=convert_constvars_jaxpr(closed.jaxpr),
                                prevent_cse=cse, differentiated=False, policy=policy)
        return tree_unflatten(out_tree, out_flat)

    return fun_remat


def _resolve_static_argnums(static_argnums: int | tuple[int, ...], nargs: int
                            ) -> tuple[int, ...]:
    """Negative positions count from the end of this call's arguments (JAX: the `% len(args)`
    in _remat_static_argnums)."""
    static_argnums = (static_argnums,) if type(static_argnums) is int else static_argnums
    if not (type(static_argnums) is tuple and all(type(d) is int for d in static_argnums)):
        raise TypeError("the `static_argnums` argument to `jax.checkpoint` / `jax.remat` must "
                        f"be an int, tuple of ints or, bool, but got value {static_argnums}")
    for d in static_argnums:
        if d < -nargs:  # JAX's debug_info check comes first, and catches only these
            raise ValueError(
                "Positional argument indices, e.g. for `static_argnums`, must have value "
                "greater than or equal to -len(args) and less than len(args), but got value "
                f"{d} for len(args) == {nargs}.")
    if not all(-nargs <= d < nargs for d in static_argnums):
        raise ValueError("the `static_argnums` argument to `jax.checkpoint` / `jax.remat` can "
                         "only take integer values greater than or equal to `-len(args)` and "
                         f"less than `len(args)`, but got {static_argnums}, while `len(args)` "
                         f"= {nargs}")
    return tuple(sorted({d % nargs for d in static_argnums}))


def remat(fun: Callable, *, prevent_cse: bool = True, policy: Callable | None = None,
          static_argnums: int | tuple[int, ...] = ()) -> Callable:
    """Alias of checkpoint (a separate function, as in JAX)."""
    return checkpoint(fun, prevent_cse=prevent_cse, policy=policy, static_argnums=static_argnums)


# ------------------------------------------------------------------ what gets saved


def saved_residuals(f: Callable, *args: Any, **kwargs: Any) -> list[tuple[core.ShapedArray, str]]:
    """The residuals grad of f would keep, each with where it comes from, as JAX reports."""
    from .api import linearize  # api imports ad, which this module extends

    leaves, in_tree = tree_flatten((args, kwargs))
    names = debug_info("saved_residuals", f, args, kwargs).arg_names

    def f_of_leaves(*leaves_: Any) -> Any:
        args_, kwargs_ = tree_unflatten(in_tree, leaves_)
        return f(*args_, **kwargs_)

    def residuals_of(*leaves_: Any) -> list[Any]:
        # every leaf is differentiated, keyword arguments' too, as in JAX
        return linearize(f_of_leaves, *leaves_)[1].residuals

    jaxpr = make_jaxpr(residuals_of)(*leaves).jaxpr
    res_ids = {id(x) for x in jaxpr.outvars if not isinstance(x, Literal)}
    # in JAX's order: literals, constants, arguments, then equation outputs in program order
    results = [(x.aval, "from a literal") for x in jaxpr.outvars if isinstance(x, Literal)]
    results += [(v.aval, "from a constant") for v in jaxpr.constvars if id(v) in res_ids]
    results += [(v.aval, f"from the argument {name}")
                for v, name in zip(jaxpr.invars, names, strict=True) if id(v) in res_ids]
    for eqn in jaxpr.eqns:
        for v in eqn.outvars:
            if id(v) not in res_ids:
                continue
            if eqn.primitive is name_p:
                results.append((v.aval, f"named '{eqn.params['name']}'"))
            else:
                results.append((v.aval, f"output of {eqn.primitive.name}"))
    return results


def print_saved_residuals(f: Callable, *args: Any, **kwargs: Any) -> None:
    for aval, src in saved_residuals(f, *args, **kwargs):
        print(f"{aval.str_short(short_dtypes=True)} {src}")
