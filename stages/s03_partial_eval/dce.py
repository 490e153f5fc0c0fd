"""Dead-code elimination: keep only the equations some used output depends on.

JAX: `dce_jaxpr`, `dce_rules` and `has_effects` in jax/_src/interpreters/partial_eval.py
(re-exported from our partial_eval.py under the same names). One backward walk: an output is
live if it is used; an equation is kept if any of its outputs is live or it has an effect; the
inputs of a kept equation are live.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from stages.s02_tracing import core
from stages.s02_tracing.core import Jaxpr, JaxprEqn, Var

# rule(used_outputs, eqn) -> (used_inputs, new eqn or None). Empty here: later stages register
# rules for primitives holding jaxprs (cond, scan, jit) that can prune inside themselves.
DCERule = Callable[[list[bool], JaxprEqn], tuple[list[bool], JaxprEqn | None]]
dce_rules: dict[core.Primitive, DCERule] = {}


def has_effects(eqn: JaxprEqn) -> bool:
    """An equation with an effect (a print, a write) is kept even when its outputs are unused."""
    return bool(eqn.effects)


def _default_dce_rule(used_outs: list[bool], eqn: JaxprEqn) -> tuple[list[bool], JaxprEqn | None]:
    if not any(used_outs) and not has_effects(eqn):
        return [False] * len(eqn.invars), None
    return [True] * len(eqn.invars), eqn


# --8<-- [start:dce_jaxpr]
def dce_jaxpr(jaxpr: Jaxpr, used_outputs: bool | Sequence[bool],
              instantiate: bool | Sequence[bool] = False) -> tuple[Jaxpr, list[bool]]:
    """Prune `jaxpr` to the outputs in `used_outputs`; return it and which inputs it still reads.

    The new jaxpr keeps only the used inputs, plus those in `instantiate` (kept even if unread).
    Its constvars are unchanged.
    """
    # JAX caches this on (jaxpr, used_outputs, instantiate); we recompute.
    if isinstance(used_outputs, bool):
        used_outputs = [used_outputs] * len(jaxpr.outvars)
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * len(jaxpr.invars)
    live: set[Var] = set()
    # EXERCISE 3.3 (dce): walk the equations backwards, keeping those a live value depends on
    for v, used in zip(jaxpr.outvars, used_outputs, strict=True):
        if used and isinstance(v, Var):
            live.add(v)
    new_eqns: list[JaxprEqn] = []
    for eqn in reversed(jaxpr.eqns):
        used_outs = [v in live for v in eqn.outvars]
        rule = dce_rules.get(eqn.primitive, _default_dce_rule)
        used_ins, new_eqn = rule(used_outs, eqn)
        if new_eqn is not None:
            new_eqns.append(new_eqn)
        for x, used in zip(eqn.invars, used_ins, strict=True):
            if used and isinstance(x, Var):
                live.add(x)
    new_eqns.reverse()
    # END EXERCISE
    used_inputs = [v in live or inst for v, inst in zip(jaxpr.invars, instantiate, strict=True)]
    new_jaxpr = jaxpr.replace(
        invars=[v for v, used in zip(jaxpr.invars, used_inputs, strict=True) if used],
        outvars=[v for v, used in zip(jaxpr.outvars, used_outputs, strict=True) if used],
        eqns=new_eqns,
    )
    return new_jaxpr, used_inputs
# --8<-- [end:dce_jaxpr]
