"""Print a module as MLIR does: SSA names (`%0`, `%cst`, `%c_1`, `%arg0`, `%iterArg_2`) and layout.

JAX: `Lowered.as_text()` is MLIR's AsmPrinter (SSANameState and OperationPrinter in
mlir/lib/IR/AsmPrinter.cpp). Names are given region by region before anything is printed:
a region first names its block arguments (`%arg<N>`, or the name its op asks for, `iterArg`),
then the results of its operations in order (a counter `%0, %1, ...`, one number per operation,
or the name the op asks for, `cst` / `c`); only then its operations' regions, each starting
from the counters where its parent region ended and seeing its parent's names. A name already
taken in the region or around it gets `_<k>` from a counter shared the same way.
"""

from __future__ import annotations

from .hlo import symbol
from .ir import Block, FuncOp, Module, Operation, Region, Value


# --8<-- [start:ssa_names]
class _SSANames:
    """The printed name of every value of one function (JAX: MLIR's SSANameState)."""

    def __init__(self, func: FuncOp):
        self.names: dict[Value, str] = {}
        self._number_region(func.body, [0, 0, 0], [])

    def _unique(self, name: str, counters: list[int], scopes: list[set[str]]) -> str:
        # EXERCISE 8.4 (ssa-names): a taken name gets `_<k>`, k from the conflict counter
        def taken(candidate: str) -> bool:
            return any(candidate in scope for scope in scopes)

        unique = name
        while taken(unique):
            unique = f"{name}_{counters[2]}"
            counters[2] += 1
        scopes[-1].add(unique)
        return unique
        # END EXERCISE

    def _number_region(self, region: Region, counters: list[int],
                       outer_scopes: list[set[str]]) -> None:
        """Name the region's own values; then its ops' regions, from these counters."""
        # counters: [next value id, next argument id, next conflict id]
        scopes = [*outer_scopes, set()]
        block = region.block
        for arg in block.arguments:
            if block.arg_name is not None:
                name = block.arg_name
            else:  # an entry block's arguments are `arg<N>`, numbered through the function
                name = f"arg{counters[1]}"
                counters[1] += 1
            self.names[arg] = "%" + self._unique(name, counters, scopes)
        for op in block.operations:
            if not op.results:
                continue
            if op.result_name is not None:
                self.names[op.result] = "%" + self._unique(op.result_name, counters, scopes)
                continue
            number = counters[0]
            counters[0] += 1
            if len(op.results) == 1:
                self.names[op.result] = f"%{number}"
            else:
                for i, result in enumerate(op.results):
                    self.names[result] = f"%{number}#{i}"
        for op in block.operations:
            for child in op.regions:
                self._number_region(child, list(counters), scopes)
# --8<-- [end:ssa_names]


def _attr_dict(attrs: dict[str, str]) -> str:
    """`{a = 1 : i32, b = "x"}`: MLIR keeps attribute dictionaries sorted by name."""
    return "{" + ", ".join(f"{k} = {attrs[k]}" for k in sorted(attrs)) + "}"


class Printer:
    """Writes operations; the ops' `asm` functions call back for names, types and regions."""

    def __init__(self, names: dict[Value, str]):
        self.names = names
        self.indent = 4  # a function body's operations
        self.default_dialect = ["func"]  # inside func.func, `func.call` prints as `call`

    def v(self, value: Value) -> str:
        return self.names[value]

    def vs(self, values: list[Value]) -> str:
        return ", ".join(self.names[x] for x in values)

    @staticmethod
    def types(values: list[Value]) -> str:
        return ", ".join(x.type for x in values)

    def op_name(self, op: Operation) -> str:
        dialect, _, short = op.name.partition(".")
        return short if dialect == self.default_dialect[-1] else op.name

    def operation(self, op: Operation) -> str:
        """One operation, with its result names, at the current indentation."""
        prefix = ""
        if op.results:
            first = self.names[op.results[0]].split("#")[0]
            prefix = first + (f":{len(op.results)}" if len(op.results) > 1 else "") + " = "
        return " " * self.indent + prefix + op.asm(self, op)

    def block(self, block: Block) -> list[str]:
        return [self.operation(op) for op in block.operations]

    def region(self, region: Region, entry_args: bool = False) -> str:
        """`{ ... }` around the region's operations, two spaces deeper than its op."""
        self.indent += 2
        self.default_dialect.append("")
        try:
            lines = ["{"]
            if entry_args:
                args = ", ".join(f"{self.v(a)}: {a.type}" for a in region.block.arguments)
                lines.append(" " * (self.indent - 2) + f"^bb0({args}):")
            lines += self.block(region.block)
        finally:
            self.default_dialect.pop()
            self.indent -= 2
        return "\n".join(lines) + "\n" + " " * self.indent + "}"


def _signature(func: FuncOp, names: dict[Value, str]) -> str:
    args = []
    for arg, attrs in zip(func.arguments, func.arg_attrs, strict=True):
        args.append(f"{names[arg]}: {arg.type}" + (f" {_attr_dict(attrs)}" if attrs else ""))
    results = [t + (f" {_attr_dict(a)}" if a else "")
               for t, a in zip(func.result_types, func.result_attrs, strict=True)]
    if not results:
        arrow = ""
    elif len(results) == 1 and not func.result_attrs[0]:
        arrow = f" -> {results[0]}"
    else:
        arrow = f" -> ({', '.join(results)})"
    return f"func.func {func.visibility} {symbol(func.name)}({', '.join(args)}){arrow}"


def print_function(func: FuncOp) -> list[str]:
    names = _SSANames(func).names
    printer = Printer(names)
    return ["  " + _signature(func, names) + " {", *printer.block(func.body.block), "  }"]


def print_module(module: Module) -> str:
    attrs = f" attributes {_attr_dict(module.attributes)}" if module.attributes else ""
    lines = [f"module {symbol(module.name)}{attrs} {{"]
    for func in module.functions:
        lines += print_function(func)
    return "\n".join([*lines, "}"]) + "\n"
