"""Policy-driven partial evaluation: the splitter remat (jax.checkpoint) hands a policy to.

JAX: `partial_eval_jaxpr_custom` and `partial_eval_jaxpr_custom_rules` in
jax/_src/interpreters/partial_eval.py (re-exported from our partial_eval.py). It works on the
equations of a jaxpr rather than by tracing, and asks one more question of each known equation:
`saveable(primitive, *avals, **params)`. Saved: the equation runs once, on the known side, and
its outputs cross to the staged side as residuals. Not saved: the equation runs on the known
side and again on the staged side, and only its inputs cross. What a policy does not save is
recomputed: that is rematerialization.

Each value of the jaxpr carries two bits: unknown (it depends on an unknown input) and
instantiated (the staged side has it without a residual).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from stages.s02_tracing import core
from stages.s02_tracing.core import Atom, Jaxpr, JaxprEqn, Var

from .dce import has_effects


class RecomputeType:
    """What a policy returns to have an equation recomputed (same as returning False)."""

    def __repr__(self) -> str:
        return "Recompute"


class SaveableType:
    """What a policy returns to have an equation's outputs saved (same as returning True)."""

    def __repr__(self) -> str:
        return "Saveable"


Recompute = RecomputeType()
Saveable = SaveableType()


def ensure_enum(case: Any) -> RecomputeType | SaveableType:
    """A policy's answer as Saveable or Recompute; anything else is the policy's bug."""
    # JAX also accepts Offloadable(src, dst) (save to host memory); we have one memory.
    if isinstance(case, bool):
        return Saveable if case else Recompute
    if not isinstance(case, (RecomputeType, SaveableType)):
        raise TypeError(
            "Value returned by a remat policy should be a bool or `ad_checkpoint.Recompute`, "
            f"`ad_checkpoint.Saveable`. Got {case} of type {type(case)}."
        )
    return case


def everything_saveable(*_: Any, **__: Any) -> bool:
    """The policy of no remat at all (JAX: pe.everything_saveable, also in ad_checkpoint)."""
    return True


# A rule splits one equation: rule(saveable, unks_in, inst_in, eqn) ->
#   (eqn for the known side or None, eqn for the staged side or None,
#    unks_out, inst_out, residuals: the Vars the staged side will read from the known side).
# Empty here; stage 4 registers remat (through `call_partial_eval_custom_rule` below), stages
# 6-7 cond, scan and jit.
PartialEvalCustomRule = Callable[
    [Callable[..., Any], Sequence[bool], Sequence[bool], JaxprEqn],
    tuple[JaxprEqn | None, JaxprEqn | None, list[bool], list[bool], list[Var]],
]
partial_eval_jaxpr_custom_rules: dict[core.Primitive, PartialEvalCustomRule] = {}


# --8<-- [start:default_rule]
def default_partial_eval_custom_rule(saveable: Callable[..., Any], unks_in: Sequence[bool],
                                     inst_in: Sequence[bool], eqn: JaxprEqn
                                     ) -> tuple[JaxprEqn | None, JaxprEqn | None, list[bool],
                                                list[bool], list[Var]]:
    """The rule of every first-order primitive (JAX writes it inline in the loop)."""
    n = len(eqn.outvars)
    # EXERCISE 3.5 (policy-split): unknown -> staged; known -> ask saveable: save or recompute
    # a known Var the staged side does not have yet must cross as a residual
    needs = [x for x, inst in zip(eqn.invars, inst_in, strict=True)
             if isinstance(x, Var) and not inst]
    if any(unks_in):
        return None, eqn, [True] * n, [True] * n, needs
    policy = ensure_enum(saveable(eqn.primitive, *[x.aval for x in eqn.invars], **eqn.params))
    if has_effects(eqn) or isinstance(policy, SaveableType):
        # run once; the outputs become residuals if the staged side ever reads them
        return eqn, None, [False] * n, [False] * n, []
    # recompute: run on both sides; the inputs cross instead of the outputs
    return eqn, eqn.replace(), [False] * n, [True] * n, needs
    # END EXERCISE
# --8<-- [end:default_rule]


# --8<-- [start:partial_eval_jaxpr_custom]
def partial_eval_jaxpr_custom(jaxpr: Jaxpr, in_unknowns: Sequence[bool],
                              in_inst: bool | Sequence[bool],
                              ensure_out_unknowns: bool | Sequence[bool],
                              ensure_out_inst: bool | Sequence[bool],
                              saveable: Callable[..., Any]
                              ) -> tuple[Jaxpr, Jaxpr, list[bool], list[bool], int]:
    """Split `jaxpr` equation by equation; return (known, staged, out_unknowns, out_inst, num_res).

    jaxpr_known: known inputs -> [known outputs..., residuals...].
    jaxpr_staged: [residuals..., instantiated inputs...] -> instantiated outputs.
    `in_inst[i]`: the staged side receives input i itself (unknown inputs must be).
    `ensure_out_unknowns` / `ensure_out_inst` force outputs unknown / onto the staged side.
    Both jaxprs keep `jaxpr`'s constvars.
    """
    n_in, n_out = len(jaxpr.invars), len(jaxpr.outvars)
    in_inst = [in_inst] * n_in if isinstance(in_inst, bool) else list(in_inst)
    if isinstance(ensure_out_unknowns, bool):
        ensure_out_unknowns = [ensure_out_unknowns] * n_out
    if isinstance(ensure_out_inst, bool):
        ensure_out_inst = [ensure_out_inst] * n_out
    env: dict[Var, tuple[bool, bool]] = {}  # var -> (unknown, instantiated)
    residuals: dict[Var, None] = {}  # an ordered set

    def read(x: Atom) -> tuple[bool, bool]:
        return env[x] if isinstance(x, Var) else (False, True)  # a literal is everywhere

    def write(v: Var, unknown: bool, inst: bool) -> None:
        # unknown values exist only on the staged side, so they are always instantiated there
        assert inst or not unknown, f"a rule made {v!r} unknown but not instantiated"
        env[v] = (unknown, inst)

    for i, (v, unknown, inst) in enumerate(zip(jaxpr.invars, in_unknowns, in_inst, strict=True)):
        if unknown and not inst:
            raise ValueError(f"input {i} ({v.aval.str_short()}) is unknown, so the staged side "
                             f"must receive it: in_inst[{i}] must be True")
        write(v, unknown, inst)
    for v in jaxpr.constvars:
        write(v, False, True)
    known_eqns, staged_eqns = [], []
    for eqn in jaxpr.eqns:
        reads = [read(x) for x in eqn.invars]
        unks_in = [unknown for unknown, _ in reads]
        inst_in = [inst for _, inst in reads]
        rule = partial_eval_jaxpr_custom_rules.get(eqn.primitive,
                                                   default_partial_eval_custom_rule)
        eqn_known, eqn_staged, unks_out, inst_out, res = rule(saveable, unks_in, inst_in, eqn)
        if eqn_known is not None:
            known_eqns.append(eqn_known)
        if eqn_staged is not None:
            staged_eqns.append(eqn_staged)
        residuals.update(dict.fromkeys(res))
        for v, unknown, inst in zip(eqn.outvars, unks_out, inst_out, strict=True):
            write(v, unknown, inst)

    out_unknowns, out_inst = [], []
    for x, ensure_unknown, ensure_inst in zip(jaxpr.outvars, ensure_out_unknowns,
                                              ensure_out_inst, strict=True):
        unknown, inst = read(x)
        if ensure_inst and not inst:
            residuals[x] = None  # the staged side returns it, so it must cross
        out_unknowns.append(unknown or ensure_unknown)
        out_inst.append(inst or ensure_inst)

    ins_known = [v for v, uk in zip(jaxpr.invars, in_unknowns, strict=True) if not uk]
    outs_known = [v for v, uk in zip(jaxpr.outvars, out_unknowns, strict=True) if not uk]
    jaxpr_known = jaxpr.replace(invars=ins_known, outvars=[*outs_known, *residuals],
                                eqns=known_eqns)
    ins_staged = [v for v, inst in zip(jaxpr.invars, in_inst, strict=True) if inst]
    outs_staged = [v for v, inst in zip(jaxpr.outvars, out_inst, strict=True) if inst]
    jaxpr_staged = jaxpr.replace(invars=[*residuals, *ins_staged], outvars=outs_staged,
                                 eqns=staged_eqns)
    return jaxpr_known, jaxpr_staged, out_unknowns, out_inst, len(residuals)
# --8<-- [end:partial_eval_jaxpr_custom]


# A params updater: (unks_in, inst_in, kept_outs_known, inst_out, num_res, params_known,
# params_staged) -> (params_known, params_staged), for what a primitive's params say beyond
# its jaxpr (remat marks its staged half `differentiated`).
ParamsUpdater = Callable[[Sequence[bool], Sequence[bool], Sequence[bool], Sequence[bool], int,
                          dict, dict], tuple[dict, dict]]


# --8<-- [start:call_rule]
def call_partial_eval_custom_rule(jaxpr_param_name: str, params_updater: ParamsUpdater,
                                  saveable: Callable[..., Any], unks_in: Sequence[bool],
                                  inst_in: Sequence[bool], eqn: JaxprEqn
                                  ) -> tuple[JaxprEqn, JaxprEqn, list[bool], list[bool],
                                             list[Var]]:
    """The rule of a primitive that holds a jaxpr (remat): split the inner jaxpr with the same
    policy, and bind the primitive twice, once on each half.

    The known equation returns the known outputs, then the residuals (fresh Vars); the staged
    one takes the residuals, then the inputs the staged side has. Without this rule the whole
    equation would be staged as soon as one input is unknown, known outputs included.
    """
    jaxpr = eqn.params[jaxpr_param_name]
    jaxpr_known, jaxpr_staged, unks_out, inst_out, num_res = partial_eval_jaxpr_custom(
        jaxpr, unks_in, inst_in, False, False, saveable)
    ins_known = [x for x, uk in zip(eqn.invars, unks_in, strict=True) if not uk]
    outs_known = [v for v, uk in zip(eqn.outvars, unks_out, strict=True) if not uk]
    ins_staged = [x for x, inst in zip(eqn.invars, inst_in, strict=True) if inst]
    outs_staged = [v for v, inst in zip(eqn.outvars, inst_out, strict=True) if inst]
    params_known = {**eqn.params, jaxpr_param_name: jaxpr_known}
    params_staged = {**eqn.params, jaxpr_param_name: jaxpr_staged}
    params_known, params_staged = params_updater(
        unks_in, inst_in, [not uk for uk in unks_out], inst_out, num_res, params_known,
        params_staged)
    residuals = [Var(v.aval) for v in jaxpr_staged.invars[:num_res]]
    eqn_known = core.new_jaxpr_eqn(ins_known, [*outs_known, *residuals], eqn.primitive,
                                   params_known)
    eqn_staged = core.new_jaxpr_eqn([*residuals, *ins_staged], outs_staged, eqn.primitive,
                                    params_staged)
    # the staged side reads the residuals, and the inputs it does not have yet
    needs = [x for x, inst in zip(eqn.invars, inst_in, strict=True)
             if isinstance(x, Var) and not inst]
    return eqn_known, eqn_staged, unks_out, inst_out, needs + residuals
# --8<-- [end:call_rule]
