"""StableHLO operations: one builder per op, each appending to the current insertion point.

JAX: jax._src.lib.mlir.dialects.hlo (the `stablehlo` dialect's Python bindings: `hlo.add(x, y)`,
`hlo.constant(attr)`, `hlo.WhileOp(...)`), and `func_dialect` for calls and returns. Each builder
also knows how MLIR prints its op (`stablehlo.add %0, %1 : tensor<3xf32>`): the op's assembly
format, written as a small function of the printer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from .attributes import dense_elements
from .ir import Operation, Region, Value


def _ints(xs: Sequence[int]) -> str:
    return "[" + ", ".join(str(int(x)) for x in xs) + "]"


def _same_or_functional_type(p, op: Operation) -> str:
    """`: T` when every operand and result has type T, else `: (T1, T2) -> R`."""
    types = {x.type for x in (*op.operands, *op.results)}
    if len(types) == 1:
        return types.pop()
    return f"({p.types(op.operands)}) -> {p.types(op.results)}"


def _functional_type(p, op: Operation, operands: Sequence[Value] | None = None) -> str:
    operands = op.operands if operands is None else operands
    results = p.types(op.results)
    results = results if len(op.results) == 1 else f"({results})"
    return f"({p.types(operands)}) -> {results}"


def _op(name: str, operands: Sequence[Value], result_types: Sequence[str], asm, **kw
        ) -> Operation:
    return Operation(name, operands, result_types, asm, **kw)


def generic_op(name: str, operands: Sequence[Value], result_types: Sequence[str], asm, **kw
               ) -> Operation:
    """An op built outside this module (gather, scatter, sort), printed by its own `asm`."""
    return _op(name, operands, result_types, asm, **kw)


# ------------------------------------------------------------------ constants and elementwise


def constant(value: np.ndarray, type: str) -> Value:
    """`stablehlo.constant dense<...> : tensor<...>`, named %c for integers and bools."""
    name = "c" if value.dtype.kind in "biu" else "cst"
    return _op("stablehlo.constant", [], [type],
               lambda p, op: f"{p.op_name(op)} {dense_elements(value)} : {op.result.type}",
               result_name=name).result


def elementwise(name: str, *operands: Value, result_type: str | None = None,
                functional: bool = False) -> Value:
    """A unary or n-ary elementwise op: `stablehlo.negate %x : T`, `stablehlo.add %x, %y : T`;
    `functional`: always `(T) -> R`, as MLIR prints a bitcast_convert even from T to T."""
    out = operands[0].type if result_type is None else result_type
    return _op(f"stablehlo.{name}", operands, [out],
               lambda p, op: f"{p.op_name(op)} {p.vs(op.operands)} : " + (
                   _functional_type(p, op) if functional else
                   _same_or_functional_type(p, op))).result


def complex(re: Value, im: Value, result_type: str) -> Value:
    """`stablehlo.complex %re, %im : tensor<...xcomplex<f32>>` (the operand types follow)."""
    return _op("stablehlo.complex", [re, im], [result_type],
               lambda p, op: f"{p.op_name(op)} {p.vs(op.operands)} : {result_type}").result


def convert(x: Value, result_type: str) -> Value:
    return elementwise("convert", x, result_type=result_type)


def compare(x: Value, y: Value, direction: str, compare_type: str, result_type: str) -> Value:
    """`stablehlo.compare LT, %x, %y, SIGNED : (T, T) -> tensor<...xi1>`."""
    return _op("stablehlo.compare", [x, y], [result_type],
               lambda p, op: f"{p.op_name(op)} {direction}, {p.vs(op.operands)}, "
                             f"{compare_type} : {_functional_type(p, op)}").result


def select(pred: Value, on_true: Value, on_false: Value) -> Value:
    def asm(p, op):
        if on_true.type == on_false.type == op.result.type:
            return f"{p.op_name(op)} {p.vs(op.operands)} : {pred.type}, {op.result.type}"
        return f"{p.op_name(op)} {p.vs(op.operands)} : {_functional_type(p, op)}"
    return _op("stablehlo.select", [pred, on_true, on_false], [on_true.type], asm).result


def chlo(name: str, x: Value) -> Value:
    """A CHLO op (decomposed by XLA): `chlo.erf %x : T -> T`."""
    return _op(f"chlo.{name}", [x], [x.type],
               lambda p, op: f"{p.op_name(op)} {p.v(x)} : {x.type} -> {op.result.type}").result


# ------------------------------------------------------------------ shapes


def broadcast_in_dim(x: Value, dims: Sequence[int], result_type: str) -> Value:
    return _op("stablehlo.broadcast_in_dim", [x], [result_type],
               lambda p, op: f"{p.op_name(op)} {p.v(x)}, dims = {_ints(dims)} : "
                             f"{_functional_type(p, op)}").result


def reshape(x: Value, result_type: str) -> Value:
    return _op("stablehlo.reshape", [x], [result_type],
               lambda p, op: f"{p.op_name(op)} {p.v(x)} : {_functional_type(p, op)}").result


def transpose(x: Value, permutation: Sequence[int], result_type: str) -> Value:
    return _op("stablehlo.transpose", [x], [result_type],
               lambda p, op: f"{p.op_name(op)} {p.v(x)}, dims = {_ints(permutation)} : "
                             f"{_functional_type(p, op)}").result


def slice(x: Value, start: Sequence[int], limit: Sequence[int], strides: Sequence[int],
          result_type: str) -> Value:
    ranges = ", ".join(f"{a}:{b}" + (f":{s}" if s != 1 else "")
                       for a, b, s in zip(start, limit, strides, strict=True))
    return _op("stablehlo.slice", [x], [result_type],
               lambda p, op: f"{p.op_name(op)} {p.v(x)} [{ranges}] : "
                             f"{_functional_type(p, op)}").result


def dynamic_slice(x: Value, starts: Sequence[Value], sizes: Sequence[int],
                  result_type: str) -> Value:
    return _op("stablehlo.dynamic_slice", [x, *starts], [result_type],
               lambda p, op: f"{p.op_name(op)} {p.vs(op.operands)}, sizes = {_ints(sizes)} : "
                             f"{_functional_type(p, op)}").result


def dynamic_update_slice(x: Value, update: Value, starts: Sequence[Value]) -> Value:
    return _op("stablehlo.dynamic_update_slice", [x, update, *starts], [x.type],
               lambda p, op: f"{p.op_name(op)} {p.vs(op.operands)} : "
                             f"{_functional_type(p, op)}").result


def pad(x: Value, padding_value: Value, low: Sequence[int], high: Sequence[int],
        interior: Sequence[int], result_type: str) -> Value:
    return _op("stablehlo.pad", [x, padding_value], [result_type],
               lambda p, op: f"{p.op_name(op)} {p.vs(op.operands)}, low = {_ints(low)}, "
                             f"high = {_ints(high)}, interior = {_ints(interior)} : "
                             f"{_functional_type(p, op)}").result


def concatenate(xs: Sequence[Value], dimension: int, result_type: str) -> Value:
    return _op("stablehlo.concatenate", xs, [result_type],
               lambda p, op: f"{p.op_name(op)} {p.vs(op.operands)}, dim = {dimension} : "
                             f"{_functional_type(p, op)}").result


def iota(dimension: int, result_type: str) -> Value:
    return _op("stablehlo.iota", [], [result_type],
               lambda p, op: f"{p.op_name(op)} dim = {dimension} : {result_type}").result


def dot_general(lhs: Value, rhs: Value, dimension_numbers, precision: Sequence[str],
                result_type: str) -> Value:
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    batching = (f"batching_dims = {_ints(lhs_batch)} x {_ints(rhs_batch)}, "
                if len(lhs_batch) else "")
    dims = f"{batching}contracting_dims = {_ints(lhs_contract)} x {_ints(rhs_contract)}"
    return _op("stablehlo.dot_general", [lhs, rhs], [result_type],
               lambda p, op: f"{p.op_name(op)} {p.vs(op.operands)}, {dims}, precision = "
                             f"[{', '.join(precision)}] : {_functional_type(p, op)}").result


# ------------------------------------------------------------------ ops with regions


def reduce(operands: Sequence[Value], inits: Sequence[Value], dimensions: Sequence[int],
           result_types: Sequence[str], scalar_types: Sequence[str]) -> Operation:
    """`stablehlo.reduce`; the caller fills `op.regions[0]` (args: accumulators, then values)."""
    n = len(operands)
    body = Region([*scalar_types, *scalar_types])

    def asm(p, op):
        pairs = ", ".join(f"({p.v(x)} init: {p.v(i)})" for x, i in zip(operands, inits,
                                                                        strict=True))
        types = f"({p.types(op.operands)}) -> " + (
            op.results[0].type if n == 1 else f"({p.types(op.results)})")
        inner = body.block.operations
        args = body.block.arguments
        if n == 1 and len(inner) == 2 and inner[0].operands == args and \
                inner[1].operands == inner[0].results:
            # MLIR's compact form for a body that is one binary op of the two arguments
            return (f"{p.op_name(op)}{pairs} applies {inner[0].name} across dimensions = "
                    f"{_ints(dimensions)} : {types}")
        groups = " ".join(f"({p.v(args[i])}: {args[i].type}, {p.v(args[n + i])}: "
                          f"{args[n + i].type})" for i in range(n))
        return (f"{p.op_name(op)}{pairs} across dimensions = {_ints(dimensions)} : {types}\n"
                f"{' ' * (p.indent + 1)}reducer{groups}  {p.region(body)}")
    return _op("stablehlo.reduce", [*operands, *inits], result_types, asm, regions=[body])


def reduce_window(x: Value, init: Value, window: Sequence[int], strides: Sequence[int],
                  padding: Sequence[tuple[int, int]], scalar_type: str) -> Operation:
    """`stablehlo.reduce_window`, printed in MLIR's generic form; the caller fills the body."""
    body = Region([scalar_type, scalar_type])

    props = {  # MLIR prints an op's properties sorted by name
        "base_dilations": i64_array([1] * len(window)),
        "padding": f"dense<[{', '.join(_ints(p) for p in padding)}]> : "
                   f"tensor<{len(padding)}x2xi64>",
        "window_dilations": i64_array([1] * len(window)),
        "window_dimensions": i64_array(window),
        "window_strides": i64_array(strides),
    }
    props_text = ", ".join(f"{k} = {props[k]}" for k in sorted(props))
    return _op("stablehlo.reduce_window", [x, init], [x.type],
               lambda p, op: f'"{op.name}"({p.vs(op.operands)}) <{{{props_text}}}> '
                             f"({p.region(body, entry_args=True)}) : "
                             f"{_functional_type(p, op)}", regions=[body])


def while_(operands: Sequence[Value]) -> Operation:
    """`stablehlo.while`: regions[0] is `cond`, regions[1] is `do`, both over the loop state."""
    types = [x.type for x in operands]
    cond, body = Region(types, "iterArg"), Region(types, "iterArg")

    def asm(p, op):
        binds = ", ".join(f"{p.v(a)} = {p.v(x)}" for a, x in zip(cond.block.arguments,
                                                                   operands, strict=True))
        newline = "\n" + " " * p.indent
        return (f"{p.op_name(op)}({binds}) : {', '.join(types)}{newline}cond "
                f"{p.region(cond)} do {p.region(body)}")
    return _op("stablehlo.while", operands, types, asm, regions=[cond, body])


def case(index: Value, num_branches: int, result_types: Sequence[str]) -> Operation:
    """`stablehlo.case` (printed in generic form): one region per branch, no arguments."""
    regions = [Region() for _ in range(num_branches)]

    def asm(p, op):
        branches = ", ".join(p.region(r) for r in regions)
        return f'"{op.name}"({p.v(index)}) ({branches}) : {_functional_type(p, op)}'
    return _op("stablehlo.case", [index], result_types, asm, regions=regions)


def optimization_barrier(xs: Sequence[Value]) -> list[Value]:
    return _op("stablehlo.optimization_barrier", xs, [x.type for x in xs],
               lambda p, op: f"{p.op_name(op)} {p.vs(op.operands)} : "
                             f"{p.types(op.results)}").results


def return_(xs: Sequence[Value], name: str = "stablehlo.return") -> None:
    """The terminator of a region (`stablehlo.return`) or of a function (`func.return`)."""
    def asm(p, op):
        if not xs:
            return p.op_name(op)
        return f"{p.op_name(op)} {p.vs(op.operands)} : {p.types(op.operands)}"
    _op(name, xs, [], asm)


def call(callee: str, args: Sequence[Value], result_types: Sequence[str]) -> list[Value]:
    """`func.call @callee(%a, %b) : (A, B) -> R` (`call` directly inside a function)."""
    def asm(p, op):
        results = p.types(op.results)
        results = results if len(op.results) == 1 else f"({results})"
        return f"{p.op_name(op)} {symbol(callee)}({p.vs(op.operands)}) : " \
               f"({p.types(op.operands)}) -> {results}"
    return _op("func.call", args, result_types, asm).results


def symbol(name: str) -> str:
    """`@name`, quoted when it is not a bare ASCII identifier (`@"jit_a.b-c"`)."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$.]*", name):
        return f"@{name}"
    return "@" + string(name)


def string(text: str) -> str:
    """A quoted MLIR string, escaped as MLIR prints one: a backslash doubled, and a backslash and
    two upper-case hex digits for each UTF-8 byte of a quote or of anything not printable ASCII
    (a tab is `\\09`, `ü` is `\\C3\\BC`)."""
    out = []
    for byte in text.encode("utf-8"):
        if byte == ord("\\"):
            out.append("\\\\")
        elif 0x20 <= byte < 0x7F and byte != ord('"'):
            out.append(chr(byte))
        else:
            out.append(f"\\{byte:02X}")
    return '"' + "".join(out) + '"'


def i64_array(xs: Sequence[int]) -> str:
    """`array<i64: 1, 2>`; `array<i64>` when empty."""
    return "array<i64: " + ", ".join(str(int(x)) for x in xs) + ">" if len(xs) else "array<i64>"


def convolution(lhs: Value, rhs: Value, dimension_numbers: tuple[str, str, str],
                window_strides: Sequence[int], padding: Sequence[tuple[int, int]],
                lhs_dilation: Sequence[int], rhs_dilation: Sequence[int], result_type: str,
                feature_group_count: int = 1, batch_group_count: int = 1) -> Value:
    """`stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1],
    window = {...}`: each dimension-numbers string names what every axis of lhs, rhs and the
    result is (b batch, f feature, i/o kernel input/output feature, 0 and 1 spatial)."""
    lhs_dims, rhs_dims, out_dims = dimension_numbers
    pads = ", ".join(_ints(p) for p in padding)
    reverse = ", ".join("false" for _ in window_strides)
    window = (f"window = {{stride = {_ints(window_strides)}, pad = [{pads}], "
              f"lhs_dilate = {_ints(lhs_dilation)}, rhs_dilate = {_ints(rhs_dilation)}, "
              f"reverse = [{reverse}]}}")
    attrs = (f"{{batch_group_count = {batch_group_count} : i64, feature_group_count = "
             f"{feature_group_count} : i64, precision_config = [#stablehlo<precision DEFAULT>, "
             f"#stablehlo<precision DEFAULT>]}}")
    return _op("stablehlo.convolution", [lhs, rhs], [result_type],
               lambda p, op: f"{p.op_name(op)}({p.vs(op.operands)}) dim_numbers = {lhs_dims}x"
                             f"{rhs_dims}->{out_dims}, {window} {attrs} : "
                             f"{_functional_type(p, op)}").result


def reverse(x: Value, dimensions: Sequence[int]) -> Value:
    """`stablehlo.reverse %x, dims = [2, 3] : T`: the elements in reverse order along dims."""
    return _op("stablehlo.reverse", [x], [x.type],
               lambda p, op: f"{p.op_name(op)} {p.v(x)}, dims = {_ints(dimensions)} : "
                             f"{x.type}").result
