"""Lowering: walk a jaxpr and, for each equation, call the rule its primitive has in a table.

JAX: jax/_src/interpreters/mlir.py (`_lowerings`, `register_lowering`, `jaxpr_subcomp`,
`lower_jaxpr_to_fun`, `ir_constant`, `lower_fun`, `call_lowering`). A rule is
`rule(ctx, *operands, **params) -> [results]`: it gets the operands as IR values and the
equation's avals in `ctx`, emits StableHLO ops at the current insertion point, and returns one
value per output. The module around `@main` (its name, donation, result names) is module.py's.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from stages.s02_tracing import core, dtypes
from stages.s02_tracing import linear_util as lu
from stages.s02_tracing import partial_eval as pe

from . import hlo, ir
from .sharding_in_types import lower_with_sharding_in_types, pinned, sharding_in_types_lowering

LoweringRule = Callable[..., Sequence[ir.Value]]

# --8<-- [start:tables]
lowering_rules: dict[core.Primitive, LoweringRule] = {}  # JAX: mlir._lowerings
# platform -> primitive -> rule, preferred to the generic rule (JAX: _platform_specific_lowerings)
platform_specific_lowerings: dict[str, dict[core.Primitive, LoweringRule]] = \
    collections.defaultdict(dict)
_outlined: set[core.Primitive] = set()  # rules emitted as a private function, then called
_KNOWN_PLATFORMS = ("cpu", "cuda", "gpu", "oneapi", "rocm", "tpu")


def register_lowering(prim: core.Primitive, rule: LoweringRule, platform: str | None = None,
                      inline: bool = True) -> None:
    """Give `prim` a lowering rule, for every platform or for one ("gpu" means cuda and rocm)."""
    if not inline:
        _outlined.add(prim)
    if platform is None:
        lowering_rules[prim] = rule
        return
    if platform not in _KNOWN_PLATFORMS:
        raise NotImplementedError(
            f"Registering an MLIR lowering rule for primitive {prim} for an unknown "
            f"platform {platform}. Known platforms are: {', '.join(_KNOWN_PLATFORMS)}.")
    for p in ("cuda", "rocm") if platform == "gpu" else (platform,):
        platform_specific_lowerings[p][prim] = rule
# --8<-- [end:tables]


# ------------------------------------------------------------------ types and constants

_IR_DTYPES = {"bool": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
              "uint8": "ui8", "uint16": "ui16", "uint32": "ui32", "uint64": "ui64",
              "bfloat16": "bf16", "float16": "f16", "float32": "f32", "float64": "f64",
              "complex64": "complex<f32>", "complex128": "complex<f64>"}


# --8<-- [start:aval_to_ir_type]
@functools.cache
def dtype_to_ir_type(dtype: Any) -> str:
    """`f32` for float32, `ui8` for uint8, `i1` for bool (JAX: mlir.dtype_to_ir_type); a float0
    tangent, which holds nothing, travels as `i1` zeros."""
    if np.dtype(dtype) == dtypes.float0:
        return "i1"
    try:
        return _IR_DTYPES[np.dtype(dtype).name]
    except KeyError:
        raise TypeError(f"No dtype_to_ir_type handler for dtype: {np.dtype(dtype)}") from None


def aval_to_ir_type(aval: core.ShapedArray) -> str:
    """`tensor<2x3xf32>`; a weak type is only a tracing-time fact and leaves no trace here."""
    # EXERCISE 8.1 (ir-types): the tensor type of an aval
    dims = "".join(f"{d}x" for d in aval.shape)
    return f"tensor<{dims}{dtype_to_ir_type(aval.dtype)}>"
    # END EXERCISE
# --8<-- [end:aval_to_ir_type]


def ir_constant(val: Any, aval: core.ShapedArray | None = None) -> ir.Value:
    """A `stablehlo.constant` holding `val` (a Python scalar, numpy scalar or array)."""
    dtype = np.result_type(val) if aval is None else aval.dtype
    if dtype == dtypes.float0:  # as its type says: false
        val, dtype = np.zeros(np.shape(val), np.bool_), np.dtype(np.bool_)
    x = np.asarray(val, dtype=dtype)
    if x.ndim and 0 in x.strides and x.size:
        # a broadcast numpy array (np.broadcast_to) is stored once and broadcast in the IR
        kept = [ax for ax, s in enumerate(x.strides) if s != 0]
        small = x[tuple(slice(None) if ax in kept else 0 for ax in range(x.ndim))]
        const = hlo.constant(np.ascontiguousarray(small), _type(small.shape, dtype))
        return hlo.broadcast_in_dim(const, kept, _type(x.shape, dtype))
    return hlo.constant(x, _type(x.shape, dtype))


def _type(shape: Sequence[int], dtype: Any) -> str:
    return aval_to_ir_type(core.ShapedArray(shape, dtype))


# ------------------------------------------------------------------ contexts


@dataclasses.dataclass
class ModuleContext:
    """What the whole module shares: the module, its platform, functions already emitted."""

    module: ir.Module
    platform: str = "cpu"
    cached_functions: dict[Any, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class LoweringRuleContext:
    """What a rule sees besides its operands (JAX: mlir.LoweringRuleContext)."""

    module_context: ModuleContext
    primitive: core.Primitive | None
    avals_in: Sequence[core.ShapedArray]
    avals_out: Sequence[core.ShapedArray]

    def replace(self, **kwargs: Any) -> LoweringRuleContext:
        return dataclasses.replace(self, **kwargs)


# ------------------------------------------------------------------ the interpreter


def _get_rule(ctx: ModuleContext, prim: core.Primitive) -> LoweringRule:
    rule = platform_specific_lowerings[ctx.platform].get(prim, lowering_rules.get(prim))
    if rule is None:
        raise NotImplementedError(
            f"MLIR translation rule for primitive '{prim.name}' not found for platform "
            f"{ctx.platform}")
    return pinned(rule) if sharding_in_types_lowering else rule


# --8<-- [start:jaxpr_subcomp]
def jaxpr_subcomp(ctx: ModuleContext, jaxpr: core.Jaxpr, consts: Sequence[ir.Value],
                  *args: ir.Value) -> list[ir.Value]:
    """Lower `jaxpr` inline at the current insertion point; return its outputs' values."""
    # EXERCISE 8.2 (jaxpr-subcomp): an environment from vars to IR values, one rule per eqn
    env: dict[core.Var, ir.Value] = {}

    def read(atom: Any) -> ir.Value:
        if isinstance(atom, core.Literal):
            return ir_constant(atom.val, atom.aval)  # a new constant at each use, as JAX's
        return env[atom]

    for var, val in zip([*jaxpr.constvars, *jaxpr.invars], [*consts, *args], strict=True):
        env[var] = val
    for eqn in jaxpr.eqns:
        in_nodes = [read(x) for x in eqn.invars]
        rule_ctx = LoweringRuleContext(ctx, eqn.primitive, [x.aval for x in eqn.invars],
                                       [v.aval for v in eqn.outvars])
        if eqn.primitive in _outlined:
            outs = _outlined_call(rule_ctx, in_nodes, eqn.params)
        else:
            outs = _get_rule(ctx, eqn.primitive)(rule_ctx, *in_nodes, **eqn.params)
        for var, val in zip(eqn.outvars, outs, strict=True):
            env[var] = val
    return [read(x) for x in jaxpr.outvars]
    # END EXERCISE
# --8<-- [end:jaxpr_subcomp]


def _outlined_call(ctx: LoweringRuleContext, args: Sequence[ir.Value], params: dict
                   ) -> list[ir.Value]:
    """Emit the rule once as `func.func private @<primitive>` per operand types and params,
    and call it (JAX: register_lowering(..., inline=False), e.g. argmax, cumsum)."""
    prim = ctx.primitive
    key = (prim, tuple(ctx.avals_in), tuple(sorted(params.items(), key=lambda kv: kv[0])))
    name = ctx.module_context.cached_functions.get(key)
    out_types = [aval_to_ir_type(a) for a in ctx.avals_out]
    if name is None:
        func = ir.FuncOp(prim.name, [aval_to_ir_type(a) for a in ctx.avals_in], out_types)
        name = ctx.module_context.module.add_function(func)
        ctx.module_context.cached_functions[key] = name
        with ir.InsertionPoint(func.body.block):
            outs = _get_rule(ctx.module_context, prim)(ctx, *func.arguments, **params)
            hlo.return_(outs, "func.return")
    return hlo.call(name, args, out_types)


def ir_consts(consts: Sequence[Any], avals: Sequence[core.ShapedArray]) -> list[ir.Value]:
    """One constant per distinct constant object (JAX: mlir.ir_consts)."""
    unique = {id(c): ir_constant(c, a) for c, a in zip(consts, avals, strict=True)}
    return [unique[id(c)] for c in consts]


def lower_jaxpr_to_fun(ctx: ModuleContext, name: str, closed_jaxpr: core.ClosedJaxpr,
                       visibility: str = "private") -> ir.FuncOp:
    """A function computing `closed_jaxpr`; its constants are materialized in its body."""
    func = ir.FuncOp(name, [aval_to_ir_type(a) for a in closed_jaxpr.in_avals],
                     [aval_to_ir_type(a) for a in closed_jaxpr.out_avals], visibility)
    ctx.module.add_function(func)  # in the module before its body, as JAX's symbol table
    with ir.InsertionPoint(func.body.block):
        consts = ir_consts(closed_jaxpr.consts, [v.aval for v in closed_jaxpr.jaxpr.constvars])
        outs = jaxpr_subcomp(ctx, closed_jaxpr.jaxpr, consts, *func.arguments)
        hlo.return_(outs, "func.return")
    return func


# --8<-- [start:call_lowering]
def call_lowering(ctx: LoweringRuleContext, name: str, closed_jaxpr: core.ClosedJaxpr,
                  *args: ir.Value) -> list[ir.Value]:
    """`func.call @name(args)` of a private function computing `closed_jaxpr`, emitted once
    per jaxpr (JAX: mlir.call_lowering and _lower_jaxpr_to_fun_cached)."""
    cache = ctx.module_context.cached_functions
    key = ("call", name, id(closed_jaxpr.jaxpr))
    if key not in cache:
        # keep the jaxpr alive so its id is not reused while the module is built
        cache[key] = (lower_jaxpr_to_fun(ctx.module_context, name, closed_jaxpr).name,
                      closed_jaxpr.jaxpr)
    out_types = [aval_to_ir_type(a) for a in closed_jaxpr.out_avals]
    return hlo.call(cache[key][0], args, out_types)


def call_primitive_lowering(ctx: LoweringRuleContext, *args: ir.Value, jaxpr: Any,
                            name: str = "closed_call", **_: Any) -> list[ir.Value]:
    """The rule of any primitive whose `jaxpr` param is the program it calls, such as jit's:
    a call of a private function `@<name>`."""
    if isinstance(jaxpr, core.Jaxpr):
        jaxpr = core.ClosedJaxpr(jaxpr, [])
    return call_lowering(ctx, name, jaxpr, *args)
# --8<-- [end:call_lowering]


def lower_fun(fun: Callable, multiple_results: bool = True) -> LoweringRule:
    """A rule from a function written with lax: trace it on the rule's avals, lower the jaxpr
    inline (JAX: mlir.lower_fun). The traced jaxpr is what the rule emits."""

    def rule(ctx: LoweringRuleContext, *args: ir.Value, **params: Any) -> list[ir.Value]:
        def flat(*xs: Any) -> list[Any]:
            out = fun(*xs, **params)
            return list(out) if multiple_results else [out]

        closed = pe.trace_to_closed_jaxpr(lu.wrap_init(flat), ctx.avals_in)
        consts = ir_consts(closed.consts, [v.aval for v in closed.jaxpr.constvars])
        return jaxpr_subcomp(ctx.module_context, closed.jaxpr, consts, *args)

    rule.__name__ = f"lower_fun({fun.__name__})"
    rule.__wrapped__ = fun  # inspect.unwrap finds the function the rule traces
    return rule


# ------------------------------------------------------------------ helpers rules share


def broadcast_in_dim(x: ir.Value, aval_out: core.ShapedArray, broadcast_dimensions: Sequence[int]
                     ) -> ir.Value:
    return hlo.broadcast_in_dim(x, broadcast_dimensions, aval_to_ir_type(aval_out))


def multi_broadcast_in_dim(ops: Sequence[ir.Value], avals: Sequence[core.ShapedArray],
                           out_shape: Sequence[int], out_sharding: Any = None) -> list[ir.Value]:
    """Broadcast each operand of lower rank to `out_shape` (a rank-0 operand of `x * 2.0`),
    split as the result is where shardings are types (stage 11)."""
    out = []
    for op, aval in zip(ops, avals, strict=True):
        if aval.shape == tuple(out_shape):
            out.append(op)
        else:
            dims = list(range(len(out_shape) - aval.ndim, len(out_shape)))
            b_aval = aval.update(shape=out_shape, sharding=out_sharding)
            out.append(lower_with_sharding_in_types(broadcast_in_dim(op, b_aval, dims), b_aval))
    return out


def full_like_aval(value: Any, aval: core.ShapedArray) -> ir.Value:
    """`value` broadcast to `aval`'s shape: a scalar constant, then a broadcast_in_dim."""
    zero = ir_constant(np.array(value, aval.dtype))
    return broadcast_in_dim(zero, aval, ())


def compare_type(dtype: Any) -> str:
    """How XLA compares elements of `dtype`: FLOAT, SIGNED or UNSIGNED (bool is unsigned)."""
    kind = np.dtype(dtype).kind
    return "FLOAT" if kind in "fc" or np.dtype(dtype).name == "bfloat16" else \
        "SIGNED" if kind == "i" else "UNSIGNED"


def compare_hlo(x: ir.Value, y: ir.Value, direction: str, dtype: Any,
                comparison_type: str | None = None) -> ir.Value:
    out_type = f"tensor<{tensor_dims(x.type)}i1>"
    return hlo.compare(x, y, direction, comparison_type or compare_type(dtype), out_type)


def tensor_dims(ir_type: str) -> str:
    """`2x3x` of tensor<2x3xf32>, `` of tensor<complex<f32>>: the leading sizes, each with its
    `x` (the element type may hold an `x` itself, as `complex` does)."""
    return re.match(r"tensor<((?:\d+x)*)", ir_type).group(1)


# --8<-- [start:convert_hlo]
def convert_hlo(x: ir.Value, aval_in: core.ShapedArray, aval_out: core.ShapedArray
                ) -> ir.Value:
    """convert with XLA's meaning for bool: a conversion to bool is `x != 0`, not truncation."""
    # EXERCISE 8.5 (convert-to-bool): compare with zero first when the target is bool
    if aval_out.dtype == np.dtype(bool):
        x = compare_hlo(x, full_like_aval(0, aval_in), "NE", aval_in.dtype)
    return hlo.convert(x, aval_to_ir_type(aval_out))
    # END EXERCISE
# --8<-- [end:convert_hlo]
