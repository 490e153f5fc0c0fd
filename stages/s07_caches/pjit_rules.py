"""The jit primitive's rules in every table of stages 2-5: a jit stays a jit under every transform.

JAX: the `_pjit_*` rules of jax/_src/pjit.py (but its DCE rule is `dce_jaxpr_pjit_rule`, and its
custom partial eval a `partial` of `pe.closed_call_partial_eval_custom_rule`). Each rule
transforms the inner jaxpr and binds `jit_p` again on the result, so the transformed program is
still one jitted call (with the same name) and is compiled and cached like any other:

- jvp: a jit of the jvp jaxpr; partial eval: the known/unknown split into two jit calls, the
  known one run now, the unknown one recorded, residuals passed from one to the other (as JAX,
  residuals go last); partial_eval_jaxpr_custom and DCE: split or prune inside;
  transpose: a jit of the transposed jaxpr; batching: a jit of the batched jaxpr;
  staging: a jit made with `inline=True` becomes its equations in the enclosing jaxpr;
  printing: `jit[name=f jaxpr={ ... }]` with the params JAX hides hidden.

The jaxpr-to-jaxpr transformations are memoized on the jaxpr object, weakly, as JAX memoizes
them (`weakref_lru_cache`), so the same jit transformed twice yields the same jaxpr object and
hits the lowering cache: `grad(jit(f))` compiles its two programs once, not on every call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from stages.s02_tracing import core, source_info_util
from stages.s02_tracing import linear_util as lu
from stages.s02_tracing import partial_eval as s02_pe
from stages.s02_tracing.core import ClosedJaxpr, Var
from stages.s02_tracing.eval_shape import eval_shape_rules
from stages.s03_partial_eval import partial_eval as pe
from stages.s04_autodiff import ad, ad_checkpoint
from stages.s04_autodiff.ad_util import Zero
from stages.s05_vmap import batching

from .pjit import JitWrapped, jit_p
from .sharding_impls import UNSPECIFIED
from .util import WeakrefCache


def _memoized(name: str, transform: Any) -> Any:
    """`transform(jaxpr, *args)` cached weakly on the jaxpr object and on args."""
    cache = WeakrefCache(name, f"{name}: the jaxpr (by identity) and the rest", layer=False)

    def memoized(jaxpr: Any, *args: Any) -> Any:
        return cache.get_or_compute(jaxpr, args, lambda: transform(jaxpr, *args))

    memoized.cache = cache
    return memoized


_jvp_jaxpr = _memoized("jvp_jaxpr", ad.jvp_jaxpr)
_transpose_jaxpr = _memoized("transpose_jaxpr", ad_checkpoint.transpose_jaxpr)


def batch_jaxpr2(closed: ClosedJaxpr, axis_data: batching.AxisData,
                 in_dims: tuple[batching.BatchDim, ...]
                 ) -> tuple[ClosedJaxpr, tuple[batching.BatchDim, ...]]:
    """The jaxpr batched along `in_dims`, each output's batch axis left where the body put it
    (JAX: batching.batch_jaxpr2): no moveaxis is added inside, the caller moves it if needed."""
    fun = lu.wrap_init(core.jaxpr_as_fun(closed), debug_info=closed.jaxpr.debug_info)
    fun, out_dims = batching.batch_subtrace(fun, batching.TraceTag(), axis_data, in_dims)
    avals = [batching.unmapped_aval(axis_data.size, d, aval)
             for aval, d in zip(closed.in_avals, in_dims, strict=True)]
    return s02_pe.trace_to_closed_jaxpr(fun, avals), out_dims()


_batch_jaxpr = _memoized("batch_jaxpr2", batch_jaxpr2)


def _dce_closed_jaxpr(closed: ClosedJaxpr, used_outputs: tuple[bool, ...]
                      ) -> tuple[ClosedJaxpr, list[bool]]:
    jaxpr, used_inputs = pe.dce_jaxpr(closed.jaxpr, list(used_outputs))
    return ClosedJaxpr(jaxpr, closed.consts), used_inputs


_dce_jaxpr = _memoized("dce_jaxpr", _dce_closed_jaxpr)


def keep_where(xs: Sequence[Any], keep: Sequence[bool]) -> tuple[Any, ...]:
    return tuple(x for x, k in zip(xs, keep, strict=True) if k)


# ------------------------------------------------------------------ jvp (stage 4)


def _pjit_jvp(primals, tangents, *, jaxpr, in_shardings, out_shardings, donated_invars,
              **params):
    nz_in = tuple(type(t) is not Zero for t in tangents)
    jaxpr_jvp, nz_out = _jvp_jaxpr(jaxpr, nz_in, False)
    outs = jit_p.bind(
        *primals, *keep_where(tangents, nz_in), jaxpr=jaxpr_jvp,
        in_shardings=(*in_shardings, *keep_where(in_shardings, nz_in)),
        out_shardings=(*out_shardings, *keep_where(out_shardings, nz_out)),
        donated_invars=(*donated_invars, *keep_where(donated_invars, nz_in)), **params)
    n = len(jaxpr.out_avals)
    primals_out, nz_tangents_out = outs[:n], iter(outs[n:])
    tangents_out = [next(nz_tangents_out) if nz else Zero.from_primal_value(p)
                    for p, nz in zip(primals_out, nz_out, strict=True)]
    return primals_out, tangents_out


ad.primitive_jvps[jit_p] = _pjit_jvp


# ------------------------------------------------------------------ partial eval (stage 3)


class _Split(NamedTuple):
    """A jit's jaxpr split for some unknown inputs, with what needs no computing forwarded."""

    known: ClosedJaxpr  # known ins -> [known outs, residuals], minus the forwarded ones
    unknown: ClosedJaxpr  # [unknown ins, residuals] -> unknown outs
    out_unknowns: list[bool]
    num_res: int
    in_fwd: list[int | None]  # per known out and residual: the known input it just is
    out_fwd: list[int | None]  # per residual: the known output it just is
    keep: list[bool]  # which known outs and residuals the known jit still returns


def _split_jaxpr(jaxpr: ClosedJaxpr, unknown_ins: tuple[bool, ...], forward_outs: bool
                 ) -> _Split:
    known, unknown, out_unknowns, res_avals = pe.partial_eval_jaxpr_nounits(
        jaxpr, unknown_ins, False)
    num_res, outs = len(res_avals), known.jaxpr.outvars
    n_outs = len(outs) - num_res
    # JAX: partial_eval_jaxpr_nounits_fwd and the forwarding in _pjit_partial_eval
    invar_pos = {id(v): i for i, v in enumerate(known.jaxpr.invars)}
    in_fwd = [invar_pos.get(id(v)) if isinstance(v, Var) and (i >= n_outs or forward_outs)
              else None for i, v in enumerate(outs)]
    out_pos = {id(v): i for i, v in enumerate(outs[:n_outs]) if in_fwd[i] is None}
    out_fwd = [out_pos.get(id(v)) if in_fwd[n_outs + j] is None else None
               for j, v in enumerate(outs[n_outs:])]
    keep = [f is None for f in in_fwd[:n_outs]] + [
        f is None and o is None for f, o in zip(in_fwd[n_outs:], out_fwd, strict=True)]
    known = ClosedJaxpr(known.jaxpr.replace(outvars=keep_where(outs, keep)), known.consts)
    # the unknown jaxpr reads the residuals first; JAX moves them last, and so do we
    invars = unknown.jaxpr.invars
    unknown = ClosedJaxpr(unknown.jaxpr.replace(invars=[*invars[num_res:], *invars[:num_res]]),
                          unknown.consts)
    return _Split(known, unknown, out_unknowns, num_res, in_fwd, out_fwd, keep)


_split = _memoized("partial_eval_jaxpr", _split_jaxpr)


# --8<-- [start:partial_eval]
def _pjit_partial_eval(trace, *tracers, jaxpr, in_shardings, out_shardings, donated_invars,
                       **params):
    """Known inputs -> a jit run now (known outputs and residuals); the rest -> a jit recorded."""
    known_ins = tuple(t.is_known() for t in tracers)
    unknown_ins = tuple(not k for k in known_ins)
    split = _split(jaxpr, unknown_ins, all(s is UNSPECIFIED for s in out_shardings))
    known_outs = [not uk for uk in split.out_unknowns]
    n_known_outs = sum(known_outs)
    known_params = dict(
        params, jaxpr=split.known, in_shardings=keep_where(in_shardings, known_ins),
        out_shardings=keep_where(keep_where(out_shardings, known_outs)
                                 + (UNSPECIFIED,) * split.num_res, split.keep),
        donated_invars=keep_where(donated_invars, known_ins))
    known_vals = [t.pval.get_known() for t in tracers if t.is_known()]
    computed = iter(jit_p.bind(*known_vals, **known_params))
    # put back what was forwarded rather than computed
    outs = [known_vals[f] if f is not None else next(computed) if k else None
            for f, k in zip(split.in_fwd, split.keep, strict=True)]
    known_out_vals, residuals = outs[:n_known_outs], outs[n_known_outs:]
    residuals = [known_out_vals[o] if o is not None else r
                 for r, o in zip(residuals, split.out_fwd, strict=True)]
    if not any(split.out_unknowns):
        return known_out_vals
    unknown_params = dict(
        params, jaxpr=split.unknown,
        in_shardings=keep_where(in_shardings, unknown_ins) + (UNSPECIFIED,) * split.num_res,
        out_shardings=keep_where(out_shardings, split.out_unknowns),
        donated_invars=keep_where(donated_invars, unknown_ins) + (False,) * split.num_res)
    in_tracers = [*[t for t in tracers if not t.is_known()],
                  *[trace.new_instantiated_const(r) for r in residuals]]
    out_tracers = [pe.JaxprTracer(trace, pe.PartialVal.unknown(a), None)
                   for a in split.unknown.out_avals]
    recipe = pe.new_eqn_recipe(trace, in_tracers, out_tracers, jit_p, unknown_params)
    for t in out_tracers:
        t.recipe = recipe
    known_it, unknown_it = iter(known_out_vals), iter(out_tracers)
    return [next(unknown_it) if uk else next(known_it) for uk in split.out_unknowns]
# --8<-- [end:partial_eval]


pe.custom_partial_eval_rules[jit_p] = _pjit_partial_eval


def _pjit_partial_eval_custom_params_updater(unks_in, inst_in, kept_outs_known, inst_out,
                                             num_res, params_known, params_staged):
    """Per-input and per-output params follow the split; the jaxprs get their consts back."""
    consts = params_known.pop("consts")
    params_staged.pop("consts")
    known_ins = [not uk for uk in unks_in]
    params_known = dict(
        params_known, jaxpr=ClosedJaxpr(params_known["jaxpr"], consts),
        in_shardings=keep_where(params_known["in_shardings"], known_ins),
        out_shardings=keep_where(params_known["out_shardings"], kept_outs_known)
        + (UNSPECIFIED,) * num_res,
        donated_invars=keep_where(params_known["donated_invars"], known_ins))
    params_staged = dict(
        params_staged, jaxpr=ClosedJaxpr(params_staged["jaxpr"], consts),
        in_shardings=(UNSPECIFIED,) * num_res + keep_where(params_staged["in_shardings"],
                                                           inst_in),
        out_shardings=keep_where(params_staged["out_shardings"], inst_out),
        donated_invars=(False,) * num_res + keep_where(params_staged["donated_invars"],
                                                       inst_in))
    return params_known, params_staged


def _pjit_partial_eval_custom(saveable, unks_in, inst_in, eqn):
    # stage 3's rule splits an open jaxpr param: open ours, and close both halves again after
    closed = eqn.params["jaxpr"]
    open_eqn = eqn.replace(params=dict(eqn.params, jaxpr=closed.jaxpr, consts=closed.consts))
    return pe.call_partial_eval_custom_rule(
        "jaxpr", _pjit_partial_eval_custom_params_updater, saveable, unks_in, inst_in, open_eqn)


pe.partial_eval_jaxpr_custom_rules[jit_p] = _pjit_partial_eval_custom


def _pjit_dce_rule(used_outputs: list[bool], eqn: core.JaxprEqn):
    if not any(used_outputs) and not pe.has_effects(eqn):
        return [False] * len(eqn.invars), None
    new_jaxpr, used_inputs = _dce_jaxpr(eqn.params["jaxpr"], tuple(used_outputs))
    params = eqn.params
    new_params = dict(
        params, jaxpr=new_jaxpr,
        in_shardings=keep_where(params["in_shardings"], used_inputs),
        out_shardings=keep_where(params["out_shardings"], used_outputs),
        donated_invars=keep_where(params["donated_invars"], used_inputs))
    new_eqn = eqn.replace(invars=keep_where(eqn.invars, used_inputs),
                          outvars=keep_where(eqn.outvars, used_outputs), params=new_params)
    return used_inputs, new_eqn


pe.dce_rules[jit_p] = _pjit_dce_rule


# ------------------------------------------------------------------ transpose (stage 4)


def _pjit_transpose(cts, *args, jaxpr, in_shardings, out_shardings, donated_invars, **params):
    in_linear = tuple(ad.is_undefined_primal(x) for x in args)
    out_zeros = tuple(type(ct) is Zero for ct in cts)
    transposed, in_zeros = _transpose_jaxpr(jaxpr, in_linear, out_zeros)
    nonlinear = [x for x, lin in zip(args, in_linear, strict=True) if not lin]
    nz_cts = [ct for ct in cts if type(ct) is not Zero]
    out_nonzero = [lin and not z for lin, z in
                   zip(in_linear, _spread(in_zeros, in_linear), strict=True)]
    cts_nz = iter(jit_p.bind(
        *nonlinear, *nz_cts, jaxpr=transposed,
        in_shardings=(*keep_where(in_shardings, [not lin for lin in in_linear]),
                      *keep_where(out_shardings, [not z for z in out_zeros])),
        out_shardings=keep_where(in_shardings, out_nonzero),
        donated_invars=(False,) * len(transposed.in_avals), **params))
    return [next(cts_nz) if nz else None for nz in out_nonzero]


def _spread(in_zeros: Sequence[bool], in_linear: Sequence[bool]) -> list[bool]:
    """in_zeros has one entry per linear input: one per input, True for the others."""
    zeros = iter(in_zeros)
    return [next(zeros) if lin else True for lin in in_linear]


ad.primitive_transposes[jit_p] = _pjit_transpose


# ------------------------------------------------------------------ batching (stage 5)


def _pjit_batcher(axis_data, vals_in, dims_in, *, jaxpr, **params):
    new_jaxpr, dims_out = _batch_jaxpr(jaxpr, axis_data, tuple(dims_in))
    return jit_p.bind(*vals_in, jaxpr=new_jaxpr, **params), list(dims_out)


batching.primitive_batchers[jit_p] = _pjit_batcher


# ------------------------------------------------------------------ staging (stage 2)


def _pjit_staging_rule(trace: s02_pe.DynamicJaxprTrace, *tracers: Any, **params: Any) -> Any:
    """`jit(f, inline=True)` staged: f's equations join the jaxpr being built, with no jit
    equation around them. Any other jit is staged as one equation (JAX: pjit_staging_rule).
    Compiler options belong to the program XLA compiles: only the outermost jit takes them."""
    if params["compiler_options_kvs"]:
        raise ValueError(
            "`compiler_options` can only be passed to top-level `jax.jit`. Got compiler_options="
            f"{dict(params['compiler_options_kvs'])} specified on a nested jit with name: "
            f"{params['name']} and source info: "
            f"{source_info_util.summarize(source_info_util.current())}")
    if not (params["inline"] and all(
            s is UNSPECIFIED for s in (*params["in_shardings"], *params["out_shardings"]))):
        return trace.default_process_primitive(jit_p, list(tracers), params)
    closed = params["jaxpr"]
    with core.set_current_trace(trace):  # each equation is bound again, on this trace
        outs = core.eval_jaxpr(closed.jaxpr, closed.consts, *tracers)
    return [trace.to_jaxpr_tracer(x) for x in outs]


s02_pe.custom_staging_rules[jit_p] = _pjit_staging_rule
# eval_shape of a jitted function: its own trace, statics and trace cache (JAX: fun.trace)
eval_shape_rules[JitWrapped] = JitWrapped.eval_shape


# ------------------------------------------------------------------ printing (stage 2)


def _suggest_same_var_names(context: Any, for_vars: Sequence[Any],
                            like_vars: Sequence[Any]) -> None:
    """Name the inner jaxpr's binders like the equation's (JAX: suggest_same_var_names)."""
    if len(for_vars) != len(like_vars):
        return
    used: set[int] = set()
    for for_v, like_v in zip(for_vars, like_vars, strict=True):
        if (isinstance(like_v, Var) and id(like_v) not in used and isinstance(for_v, Var)
                and id(for_v) not in context.var_names):
            used.add(id(like_v))
            context.var_names[id(for_v)] = context.var_name(like_v)


def _pjit_pp_rule(eqn: core.JaxprEqn, context: Any, settings: Any) -> Any:
    params = dict(eqn.params)
    params.pop("inline", None)
    if not any(params["donated_invars"]):
        del params["donated_invars"]
    for name in ("in_shardings", "out_shardings"):
        if all(s is UNSPECIFIED for s in params[name]):
            del params[name]
    if not params["keep_unused"]:
        del params["keep_unused"]
    if not params["compiler_options_kvs"]:
        del params["compiler_options_kvs"]
    jaxpr = params["jaxpr"].jaxpr
    if jaxpr not in context.shared_jaxprs:
        _suggest_same_var_names(context, jaxpr.invars, eqn.invars)
        _suggest_same_var_names(context, jaxpr.outvars, eqn.outvars)
    del params["name"]  # printed first, to make the equation easy to scan
    return core.default_pp_eqn(eqn, context, settings, params=["name", *sorted(params)])


core.pp_eqn_rules[jit_p] = _pjit_pp_rule

