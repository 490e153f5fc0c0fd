"""Autodiff of control flow: jvp rules for cond, scan, while; transpose rules for cond, scan.

JAX: `_cond_jvp`, `_cond_transpose` (conditionals.py), `_scan_jvp`, `_scan_transpose`,
`_while_loop_jvp`, `_while_transpose_error` (loops.py). Forward mode differentiates the body
jaxpr (stage 4's `jvp_jaxpr`) and binds the same primitive on the bigger body. Reverse mode is
jvp, then partial eval (loops_pe.py, conditionals_pe.py) splits off a *linear* scan or cond,
which the rules here transpose: a linear cond transposes each branch; a linear scan transposes
its body and runs backwards (`reverse=not reverse`) over the stacked residuals, carrying the
cotangents. A while loop cannot be transposed: it stored no per-iteration residuals, because
its trip count is unknown until it runs.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from stages.s02_tracing import core
from stages.s02_tracing import linear_util as lu
from stages.s02_tracing.core import ClosedJaxpr, ShapedArray
from stages.s02_tracing.partial_eval import trace_to_jaxpr_dynamic
from stages.s04_autodiff.ad import (
    UndefinedPrimal,
    backward_pass,
    instantiate_zeros,
    is_undefined_primal,
    jvp_jaxpr,
    primitive_jvps,
    primitive_transposes,
)
from stages.s04_autodiff.ad_util import Zero, add_jaxvals, tangent_aval, zeros_like_aval

from .common import (
    _move_binders_to_back,
    _move_binders_to_front,
    merge_lists,
    partition_list,
    split_list,
)
from .conditionals import cond_p
from .loops import scan_p, while_p


def _nonzero(tangents: Sequence[Any]) -> list[bool]:
    return [type(t) is not Zero for t in tangents]


def _prune_zeros(tangents: Sequence[Any]) -> list[Any]:
    return [t for t in tangents if type(t) is not Zero]


def _fill_zeros(primals: Sequence[Any], nonzeros: Sequence[bool], tangents: Sequence[Any]
                ) -> list[Any]:
    """The nonzero tangents back in place, a symbolic Zero everywhere else."""
    it = iter(tangents)
    return [next(it) if nz else Zero.from_primal_value(p)
            for p, nz in zip(primals, nonzeros, strict=True)]


def _trace(fun: Any, avals: Sequence[ShapedArray]) -> ClosedJaxpr:
    jaxpr, _, consts = trace_to_jaxpr_dynamic(lu.wrap_init(fun), avals)
    return ClosedJaxpr(jaxpr, consts)


def _rearrange_binders(jaxpr: ClosedJaxpr, primals_in: list[int], tangents_in: list[int],
                       primals_out: list[int], tangents_out: list[int]) -> ClosedJaxpr:
    """[p1, p2, t1, t2] -> [p1, t1, p2, t2], for invars and outvars (JAX: ad.rearrange_binders).

    jvp_jaxpr puts all primals before all tangents; scan wants consts, carries and xs each
    with their tangents beside them.
    """
    def interleave(xs: list[Any], p_sizes: list[int], t_sizes: list[int]) -> list[Any]:
        ps, ts = split_list(xs, [sum(p_sizes)])
        p_groups, t_groups = split_list(ps, p_sizes[:-1]), split_list(ts, t_sizes[:-1])
        return [x for pg, tg in zip(p_groups, t_groups, strict=True) for x in (*pg, *tg)]

    new = jaxpr.jaxpr.replace(
        invars=interleave(jaxpr.jaxpr.invars, primals_in, tangents_in),
        outvars=interleave(jaxpr.jaxpr.outvars, primals_out, tangents_out))
    return ClosedJaxpr(new, jaxpr.consts)


# ================================================================== cond


def _cond_jvp(primals: Sequence[Any], tangents: Sequence[Any], *,
              branches: tuple[ClosedJaxpr, ...]) -> tuple[list[Any], list[Any]]:
    """Differentiate every branch; an output tangent is nonzero if it is in any branch."""
    _, *ops_nz = _nonzero(tangents)
    outs_nz = [jvp_jaxpr(b, ops_nz, instantiate=False)[1] for b in branches]
    out_nz = [any(nz) for nz in zip(*outs_nz, strict=True)]
    branches_jvp = tuple(jvp_jaxpr(b, ops_nz, instantiate=out_nz)[0] for b in branches)
    index, *ops = primals
    out = cond_p.bind(index, *ops, *_prune_zeros(tangents[1:]), branches=branches_jvp)
    out_primals, out_tangents = split_list(out, [len(out_nz)])
    return out_primals, _fill_zeros(out_primals, out_nz, out_tangents)


# --8<-- [start:cond_transpose]
def _cond_transpose(cts: Sequence[Any], index: Any, *args: Any,
                    branches: tuple[ClosedJaxpr, ...]) -> list[Any]:
    """Transpose each branch on its own; one cond picks the transposed branch to run."""
    linear = [is_undefined_primal(x) for x in args]
    res = [x for x, lin in zip(args, linear, strict=True) if not lin]
    cts = [instantiate_zeros(ct) for ct in cts]
    ct_avals = [tangent_aval(a) for a in branches[0].out_avals]

    def transpose_branch(branch: ClosedJaxpr) -> ClosedJaxpr:
        def transposed(*res_and_cts: Any) -> list[Any]:
            res_vals, cts_out = split_list(res_and_cts, [len(res)])
            res_iter = iter(res_vals)
            primals = [UndefinedPrimal(a) if lin else next(res_iter)
                       for a, lin in zip(branch.in_avals, linear, strict=True)]
            cts_in = backward_pass(branch.jaxpr, branch.consts, primals, cts_out)
            return [instantiate_zeros(ct) for ct, lin in zip(cts_in, linear, strict=True)
                    if lin]

        return _trace(transposed, [*[core.get_aval(r) for r in res], *ct_avals])

    cts_out = iter(cond_p.bind(index, *res, *cts,
                               branches=tuple(transpose_branch(b) for b in branches)))
    return [None, *[next(cts_out) if lin else None for lin in linear]]
# --8<-- [end:cond_transpose]


# ================================================================== scan


def _scan_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, reverse: bool, length: int,
              jaxpr: ClosedJaxpr, num_consts: int, num_carry: int, unroll: int
              ) -> tuple[list[Any], list[Any]]:
    """One scan over (primal, tangent) pairs; which carry tangents are nonzero is a fixpoint."""
    num_xs = len(jaxpr.in_avals) - num_consts - num_carry
    num_ys = len(jaxpr.out_avals) - num_carry
    const_nz, init_nz, xs_nz = split_list(_nonzero(tangents), [num_consts, num_carry])
    carry_nz = init_nz
    for _ in range(1 + num_carry):
        nonzeros = [*const_nz, *carry_nz, *xs_nz]
        jaxpr_jvp, nz_out = jvp_jaxpr(jaxpr, nonzeros, instantiate=carry_nz + [False] * num_ys)
        if nz_out[:num_carry] == carry_nz:
            break
        carry_nz = list(map(operator.or_, carry_nz, nz_out[:num_carry]))
    tangents = [instantiate_zeros(t) if nz else t
                for t, nz in zip(tangents, nonzeros, strict=True)]
    consts, init, xs = split_list(primals, [num_consts, num_carry])
    consts_dot, init_dot, xs_dot = (_prune_zeros(t) for t in
                                    split_list(tangents, [num_consts, num_carry]))
    jaxpr_jvp = _rearrange_binders(
        jaxpr_jvp, [num_consts, num_carry, num_xs], [len(consts_dot), len(init_dot), len(xs_dot)],
        [num_carry, num_ys], [len(init_dot), sum(nz_out) - len(init_dot)])
    out = scan_p.bind(*consts, *consts_dot, *init, *init_dot, *xs, *xs_dot, reverse=reverse,
                      length=length, jaxpr=jaxpr_jvp, num_consts=num_consts + len(consts_dot),
                      num_carry=num_carry + len(init_dot), unroll=unroll)
    carry, carry_dot, ys, ys_dot = split_list(out, [num_carry, len(init_dot), num_ys])
    primals_out = [*carry, *ys]
    return primals_out, _fill_zeros(primals_out, nz_out, [*carry_dot, *ys_dot])


# --8<-- [start:scan_transpose]
def _scan_transpose(cts: Sequence[Any], *args: Any, reverse: bool, length: int,
                    jaxpr: ClosedJaxpr, num_consts: int, num_carry: int, unroll: int
                    ) -> list[Any]:
    """A linear scan, run backwards. Its operands are taken in the order
    [ires, d | c | a, eres]: loop-invariant residuals, linear consts d, linear carries c,
    linear xs a, stacked residuals. The transposed scan carries the cotangents of d and c,
    reads the stacked cotangents of the ys and the residuals, and emits those of a."""
    consts, init, xs = split_list(args, [num_consts, num_carry])
    # our partial eval emits that order; a scan the user wrote (linear_transpose of it) may
    # interleave linear and residual operands: move the residuals out to the ends
    const_res = [not is_undefined_primal(x) for x in consts]
    xs_res = [not is_undefined_primal(x) for x in xs]
    jaxpr = _move_binders_to_front(jaxpr, const_res + [False] * (num_carry + len(xs)))
    jaxpr = _move_binders_to_back(jaxpr, [False] * (num_consts + num_carry) + xs_res)
    d, ires = partition_list(const_res, consts)
    a, eres = partition_list(xs_res, xs)
    num_ires, num_d, num_a, num_eres = len(ires), len(d), len(a), len(eres)
    ct_carry, ct_ys = split_list(cts, [num_carry])
    ct_carry = [instantiate_zeros(ct) for ct in ct_carry]
    ys_zero = [type(ct) is Zero for ct in ct_ys]  # a y nobody used gets no stacked cotangent
    ct_ys = _prune_zeros(ct_ys)
    # EXERCISE 6.6 (scan-transpose): build the transposed body, run it with reverse flipped
    d_avals = jaxpr.in_avals[num_ires:num_consts]
    c_avals, a_avals = split_list(jaxpr.in_avals[num_consts:], [num_carry])
    a_avals = a_avals[:num_a]
    y_avals = [tangent_aval(a) for a in jaxpr.out_avals[num_carry:]]

    def transposed(*args: Any) -> list[Any]:
        # one iteration backwards: ct_d and ct_c come in as carries, ct_b and eres as xs
        ires_, ct_d, ct_c, ct_b, eres_ = split_list(args, [num_ires, num_d, num_carry,
                                                           len(ct_ys)])
        primals = [*ires_, *[UndefinedPrimal(a) for a in [*d_avals, *c_avals, *a_avals]],
                   *eres_]
        ct_b_iter = iter(ct_b)
        ct_b = [Zero(a) if zero else next(ct_b_iter) for a, zero in zip(y_avals, ys_zero,
                                                                       strict=True)]
        cts_in = backward_pass(jaxpr.jaxpr, jaxpr.consts, primals, [*ct_c, *ct_b])
        _, new_ct_d, new_ct_c, ct_a, _ = split_list(cts_in, [num_ires, num_d, num_carry, num_a])
        ct_d = [add_jaxvals(old, new) for old, new in zip(ct_d, new_ct_d, strict=True)]
        return [instantiate_zeros(ct) for ct in [*ct_d, *new_ct_c, *ct_a]]

    y_nz_avals = [a for a, zero in zip(y_avals, ys_zero, strict=True) if not zero]
    tangent = [tangent_aval(a) for a in [*d_avals, *c_avals, *y_nz_avals]]
    jaxpr_trans = _trace(transposed, [*jaxpr.in_avals[:num_ires], *tangent,
                                      *jaxpr.in_avals[num_consts + num_carry + num_a:]])
    ct_consts = [zeros_like_aval(tangent_aval(a)) for a in d_avals]
    outs = scan_p.bind(*ires, *ct_consts, *ct_carry, *ct_ys, *eres, reverse=not reverse,
                       length=length, jaxpr=jaxpr_trans, num_consts=num_ires,
                       num_carry=num_d + num_carry, unroll=unroll)
    ct_d, ct_init, ct_a = split_list(outs, [num_d, num_carry])
    # END EXERCISE
    # back in the operands' own order: None for every residual
    # every carry is transposed as linear (as JAX does); a constant init (a zero) gets None
    ct_init = [ct if is_undefined_primal(x) else None for x, ct in zip(init, ct_init,
                                                                       strict=True)]
    return [*merge_lists(const_res, ct_d, [None] * num_ires), *ct_init,
            *merge_lists(xs_res, ct_a, [None] * num_eres)]
# --8<-- [end:scan_transpose]


# ================================================================== while


def _while_loop_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, cond_nconsts: int,
                    cond_jaxpr: ClosedJaxpr, body_nconsts: int, body_jaxpr: ClosedJaxpr
                    ) -> tuple[list[Any], list[Any]]:
    """Carry (value, tangent) pairs round the loop; the predicate ignores the tangents."""
    cconst_nz, bconst_nz, init_nz = split_list(_nonzero(tangents), [cond_nconsts, body_nconsts])
    carry_nz = init_nz
    for _ in range(1 + len(carry_nz)):
        body_jvp, nz_out = jvp_jaxpr(body_jaxpr, [*bconst_nz, *carry_nz], instantiate=carry_nz)
        if nz_out == carry_nz:
            break
        carry_nz = list(map(operator.or_, carry_nz, nz_out))
    nonzeros = [*cconst_nz, *bconst_nz, *carry_nz]
    tangents = [instantiate_zeros(t) if nz else t
                for t, nz in zip(tangents, nonzeros, strict=True)]
    cconsts, bconsts, init = split_list(primals, [cond_nconsts, body_nconsts])
    _, bconst_dot, init_dot = (_prune_zeros(t) for t in
                               split_list(tangents, [cond_nconsts, body_nconsts]))
    num_carry = len(init)
    body_jvp = _rearrange_binders(body_jvp, [body_nconsts, num_carry],
                                  [len(bconst_dot), len(init_dot)], [num_carry], [len(init_dot)])
    # the predicate takes the tangent carries too, and never reads them
    extra = [core.Var(core.get_aval(t)) for t in init_dot]
    cond_aug = ClosedJaxpr(cond_jaxpr.jaxpr.replace(invars=[*cond_jaxpr.jaxpr.invars, *extra]),
                           cond_jaxpr.consts)
    out = while_p.bind(*cconsts, *bconsts, *bconst_dot, *init, *init_dot,
                       cond_nconsts=cond_nconsts, cond_jaxpr=cond_aug,
                       body_nconsts=body_nconsts + len(bconst_dot), body_jaxpr=body_jvp)
    out_carry, out_dot = split_list(out, [num_carry])
    return out_carry, _fill_zeros(out_carry, nz_out, out_dot)


# --8<-- [start:while_transpose]
def _while_transpose_error(*args: Any, **params: Any) -> Any:
    raise ValueError("Reverse-mode differentiation does not work for lax.while_loop or "
                     "lax.fori_loop with dynamic start/stop values. Try using lax.scan, or "
                     "using fori_loop with static start/stop.")
# --8<-- [end:while_transpose]


primitive_jvps[cond_p] = _cond_jvp
primitive_jvps[scan_p] = _scan_jvp
primitive_jvps[while_p] = _while_loop_jvp
primitive_transposes[cond_p] = _cond_transpose
primitive_transposes[scan_p] = _scan_transpose
primitive_transposes[while_p] = _while_transpose_error
