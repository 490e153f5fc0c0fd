"""Where the residuals of a split scan body come from, and which of them need stacking.

JAX: jax/_src/lax/control_flow/loops.py (`_scan_partial_eval`: the forwarding of
`pe.partial_eval_jaxpr_nounits_fwd`, and `_scan_known_hoisting`). Splitting a scan body leaves
residuals, values the unknown body reads from the known one. A residual the known scan stacks
costs `length` copies, so three kinds are not stacked: a const of the loop (or of the body),
passed once; an xs slice, already stacked in xs; and a value computed from consts alone
(`sin(w)` in a loop that multiplies by it), which is *hoisted*: computed once, before the
loop, and passed as a const. Only what changes per iteration is stacked.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stages.s02_tracing import linear_util as lu
from stages.s02_tracing.core import ClosedJaxpr, Jaxpr, Var
from stages.s02_tracing.jaxpr import jaxpr_as_fun
from stages.s02_tracing.partial_eval import convert_constvars_jaxpr
from stages.s02_tracing.pretty_printer import jaxprs_in_params
from stages.s03_partial_eval import partial_eval as pe
from stages.s04_autodiff import custom_calls


def residual_kinds(jaxpr_known: ClosedJaxpr, num_known_outs: int, num_known_consts: int,
                   num_known_carry: int, known_ins: list[Any]) -> list[tuple[str, int | None]]:
    """Where each residual of a split scan body comes from.

    ("const", i): a known const of the loop, or a constant of the body: loop-invariant, so it
    is passed once, as a const of the unknown scan. ("xs", i): a known xs slice: the stacked
    xs already hold it (unless a numpy array: JAX forwards none, it stacks them anew).
    ("loop", None): computed per iteration, stacked by the known scan."""
    invars = jaxpr_known.jaxpr.invars
    position = {id(v): i for i, v in enumerate(invars)}
    constvars = {id(v): num_known_consts + j for j, v in enumerate(jaxpr_known.jaxpr.constvars)}
    kinds: list[tuple[str, int | None]] = []
    for v in jaxpr_known.jaxpr.outvars[num_known_outs:]:
        i = position.get(id(v)) if isinstance(v, Var) else None
        if i is not None and i < num_known_consts:
            kinds.append(("const", i))
        elif isinstance(v, Var) and id(v) in constvars:
            kinds.append(("const", constvars[id(v)]))
        elif i is not None and i >= num_known_consts + num_known_carry and \
                not isinstance(known_ins[i], np.ndarray):
            kinds.append(("xs", i))
        else:
            kinds.append(("loop", None))
    return kinds


def scan_known_hoisting(jaxpr_known: ClosedJaxpr, known_consts: list[Any],
                        kinds: list[tuple[str, int | None]]
                        ) -> tuple[ClosedJaxpr, list[Any], list[tuple[str, int | None]], list[Any]]:
    """Partially evaluate the known body once more, only its consts known: each "loop"
    residual that comes out known depends on no carry and no x, so it is computed now, once.

    Returns the known body (its consts now what that evaluation left it as leading invars),
    those consts, the kinds with the hoisted residuals marked ("hoisted", None), and their
    values in order."""
    if _calls_a_custom_rule(jaxpr_known.jaxpr):
        return jaxpr_known, known_consts, kinds, []  # nothing hoisted: the loop stacks them
    num_res = sum(kind == "loop" for kind, _ in kinds)
    num_known_outs = len(jaxpr_known.out_avals) - num_res
    pvals = [*map(pe.PartialVal.known, known_consts),
             *map(pe.PartialVal.unknown, jaxpr_known.in_avals[len(known_consts):])]
    jaxpr, pvals_out, new_consts = pe.trace_to_jaxpr_nounits(
        lu.wrap_init(jaxpr_as_fun(jaxpr_known), debug_info=jaxpr_known.jaxpr.debug_info),
        pvals, instantiate=[True] * num_known_outs + [False] * num_res)
    which = iter([p.is_known() for p in pvals_out[num_known_outs:]])
    kinds = [("hoisted", None) if kind == "loop" and next(which) else (kind, i)
             for kind, i in kinds]
    hoisted = [p.get_known() for p in pvals_out[num_known_outs:] if p.is_known()]
    return ClosedJaxpr(convert_constvars_jaxpr(jaxpr), ()), list(new_consts), kinds, hoisted


def _calls_a_custom_rule(jaxpr: Jaxpr) -> bool:
    """Whether a custom_jvp/custom_vjp function is called, here or in a sub-jaxpr: partial
    evaluation with some inputs unknown calls its function and drops its rule (stage 4's
    JaxprTrace; JAX's stages a custom_vjp whole), so the body is not split for hoisting."""
    return any(e.primitive in (custom_calls.custom_jvp_call_p, custom_calls.custom_vjp_call_p)
               or any(map(_calls_a_custom_rule, jaxprs_in_params(e.params)))
               for e in jaxpr.eqns)
