"""Varying manual axes: the types a shard_map body gives its values (used from stage 11 on).

JAX: `core.standard_vma_rule`, `core.auto_insert_reshard`, `core.pvary` and `pvary_p` in
jax/_src/core.py. Inside a shard_map with check_vma=True a value's type records the mesh axes it
may differ along between devices (ours: `ShapedArray.vma`; JAX 0.10.2's:
`ShapedArray.manual_axis_type.varying`, read as `aval.mat.varying`). `Primitive.bind` and
`abstract_eval` (core.py) come here only then, when the axis environment's `vma_axes` is set:
bind casts the less varying operands up with `pvary`, abstract_eval gives the outputs their
axes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .axis_env import vma_order
from .core import ClosedJaxpr, Jaxpr, Primitive, ShapedArray, get_aval

# primitive -> rule(in_vmas, **params) -> the outputs' vmas (a list). Without a rule a first-order
# equation's outputs vary along its inputs' axes, and a higher-order one (a jaxpr in its params)
# keeps the types its inner jaxpr gave them. Collectives register theirs (stages 5 and 11).
vma_rules: dict[Primitive, Callable[..., list[frozenset]]] = {}


def has_jaxpr(params: dict) -> bool:
    for v in params.values():
        if isinstance(v, (Jaxpr, ClosedJaxpr)) or (
                isinstance(v, tuple) and v and isinstance(v[0], (Jaxpr, ClosedJaxpr))):
            return True
    return False


def with_out_vma(prim: Primitive, avals: Sequence[Any], out: Any, params: dict) -> Any:
    rule = vma_rules.get(prim)
    if rule is None and has_jaxpr(params):
        return out
    in_vmas = [getattr(a, "vma", frozenset()) for a in avals]
    outs = out if prim.multiple_results else [out]
    vmas = rule(in_vmas, **params) if rule is not None else \
        [frozenset().union(*in_vmas)] * len(outs)
    typed = [o.update(vma=v) if isinstance(o, ShapedArray) and o.vma != v else o
             for o, v in zip(outs, vmas, strict=True)]
    return typed if prim.multiple_results else typed[0]


def auto_insert_pvary(prim: Primitive, args: Sequence[Any], params: dict) -> Sequence[Any]:
    """Operands that vary along fewer axes than the others are cast up with `pvary` first, so
    every operand of an equation has the same type (JAX does this in each lax function)."""
    if prim is pvary_p or has_jaxpr(params):
        return args
    vmas = [get_aval(a).vma for a in args]
    union = frozenset().union(*vmas)
    if all(v == union for v in vmas):
        return args
    return [pvary(a, tuple(union - v)) if union - v else a
            for a, v in zip(args, vmas, strict=True)]


pvary_p = Primitive("pvary")


def pvary(x: Any, axis_name: Any) -> Any:
    """x, typed as varying along `axis_name` too: the same value on every device, now allowed
    to differ (invariant -> varying; a no-op when run). Its transpose is a psum (stage 5)."""
    axes = axis_name if isinstance(axis_name, tuple) else (axis_name,)
    return pvary_p.bind(x, axes=vma_order(axes)) if axes else x


def _pvary_abstract_eval(aval: ShapedArray, *, axes: tuple) -> ShapedArray:
    if set(axes) & aval.vma:
        raise ValueError(
            "pvary is a invariant->variant collective. This means that the axis names "
            "mentioned in `axes` passed to `pvary` must not be present in "
            f"`jax.typeof(inp).vma`. Got axes={axes} and jax.typeof(inp)={aval}")
    return aval.update(vma=aval.vma | frozenset(axes))


def _pvary_impl(x: Any, *, axes: tuple) -> Any:
    raise ValueError("pvary should be called under jax.shard_map.")


pvary_p.def_impl(_pvary_impl)
pvary_p.def_abstract_eval(_pvary_abstract_eval)
vma_rules[pvary_p] = lambda in_vmas, *, axes: [in_vmas[0] | frozenset(axes)]
