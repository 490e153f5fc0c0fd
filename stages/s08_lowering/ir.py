"""A small IR of our own for StableHLO text: values, operations, blocks, regions, functions.

JAX: jax._src.lib.mlir.ir, MLIR's Python bindings (`ir.Value`, `ir.Block`, `ir.InsertionPoint`,
`ir.Module`). Ours holds only what a printed module needs: an operation is a name, operands,
result types, attributes, regions and a function that writes its assembly form. Types are their
printed strings (`tensor<2x3xf32>`). asm_printer.py names the values and prints the module;
hlo.py builds the StableHLO operations with this file's `Operation`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


class Value:
    """An SSA value: result `index` of an operation, or argument `index` of a block."""

    __slots__ = ("type", "owner", "index")

    def __init__(self, type: str, owner: Operation | Block, index: int):
        self.type = type
        self.owner = owner
        self.index = index

    def __repr__(self) -> str:
        return f"Value({self.type})"


class Block:
    """A list of operations, with typed arguments (the parameters of a region or function)."""

    def __init__(self, arg_types: Sequence[str] = (), arg_name: str | None = None):
        self.arguments = [Value(t, self, i) for i, t in enumerate(arg_types)]
        self.arg_name = arg_name  # a name the owning op gives its arguments (`iterArg`)
        self.operations: list[Operation] = []

    def append(self, op: Operation) -> None:
        self.operations.append(op)


class Region:
    """The body of an operation (a while's cond, a case's branch): here always one block."""

    def __init__(self, arg_types: Sequence[str] = (), arg_name: str | None = None):
        self.blocks = [Block(arg_types, arg_name)]

    @property
    def block(self) -> Block:
        return self.blocks[0]


# (printer, op) -> the op's text after `%results = `; see asm_printer.Printer
AsmFormat = Callable[[Any, "Operation"], str]


class Operation:
    """One operation. `result_name` names its results (`cst`, `c`) instead of numbering them."""

    def __init__(self, name: str, operands: Sequence[Value], result_types: Sequence[str],
                 asm: AsmFormat, *, attributes: dict[str, Any] | None = None,
                 regions: Sequence[Region] = (), result_name: str | None = None):
        self.name = name
        self.operands = list(operands)
        self.results = [Value(t, self, i) for i, t in enumerate(result_types)]
        self.asm = asm
        self.attributes = attributes or {}
        self.regions = list(regions)
        self.result_name = result_name
        InsertionPoint.current().append(self)

    @property
    def result(self) -> Value:
        assert len(self.results) == 1, self.name
        return self.results[0]


class InsertionPoint:
    """Where new operations go: `with InsertionPoint(block): hlo.add(x, y)` appends to block."""

    _stack: list[Block] = []

    def __init__(self, block: Block):
        self.block = block

    def __enter__(self) -> Block:
        InsertionPoint._stack.append(self.block)
        return self.block

    def __exit__(self, *exc_info: Any) -> None:
        InsertionPoint._stack.pop()

    @staticmethod
    def current() -> Block:
        if not InsertionPoint._stack:
            raise RuntimeError("no insertion point: build operations inside `with InsertionPoint`")
        return InsertionPoint._stack[-1]


class FuncOp:
    """`func.func`: a named function with attributes on its arguments and results."""

    def __init__(self, name: str, arg_types: Sequence[str], result_types: Sequence[str],
                 visibility: str = "private"):
        self.name = name
        self.visibility = visibility
        self.result_types = list(result_types)
        self.arg_attrs: list[dict[str, str]] = [{} for _ in arg_types]
        self.result_attrs: list[dict[str, str]] = [{} for _ in result_types]
        self.body = Region(arg_types)

    @property
    def arguments(self) -> list[Value]:
        return self.body.block.arguments


class Module:
    """`module @name attributes {...}`: functions, `@main` first, in the order they were made."""

    def __init__(self, name: str, attributes: dict[str, str] | None = None):
        self.name = name
        self.attributes = attributes or {}
        self.functions: list[FuncOp] = []
        self._symbols: set[str] = set()
        self._uniquing_counter = 0

    def add_function(self, func: FuncOp) -> str:
        """Insert `func`, renaming it `name_N` if the name is taken; return its final name."""
        # JAX: SymbolTable.insert. One counter for the whole module, so a second `cumsum`
        # after a second `argmax` is `cumsum_1`, not `cumsum_0`.
        name = func.name
        while name in self._symbols:
            name = f"{func.name}_{self._uniquing_counter}"
            self._uniquing_counter += 1
        func.name = name
        self._symbols.add(name)
        self.functions.append(func)
        return name

    def as_text(self) -> str:
        """The module as MLIR's printer writes it (what `Lowered.as_text()` shows)."""
        from .asm_printer import print_module  # the printer reads these classes

        return print_module(self)

    __str__ = as_text
