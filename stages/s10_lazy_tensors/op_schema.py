"""An aten op's schema, read once: which arguments become operands, what it returns.

PyTorch: the op's FunctionSchema (`func._schema`), which torch_xla's code generator reads when
torch_xla is built, to write one C++ function per op (aten_xla_type.cpp, RegisterXLA.cpp). Ours
reads it at an op's first call and keeps the answer: a training step calls the same few dozen
ops every step, and reading a schema costs more than building the op's IR node.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import torch


class OpSchema(NamedTuple):
    name: str  # "aten::add.Tensor", as the IR node is named
    arguments: tuple[tuple[str, str, Any], ...]  # (name, kind, default) per argument
    returns: str  # "tensor" (one Tensor), "list" (one Tensor[]), or "tuple" (several)
    functional: Any  # an in-place op's functional op (`add_.Tensor`: `add.Tensor`), else None
    is_view: bool  # its result aliases its input in torch (`t`, `slice`: `Tensor(a)`)


def _kind(type_name: str) -> str:
    """tensor, tensors, scalar (a number: an operand), or param (hashed into the node)."""
    if type_name.startswith(("Tensor[]", "List[Tensor]", "Tensor?[]")):
        return "tensors"
    if type_name.startswith("Tensor") or type_name == "Optional[Tensor]":
        return "tensor"
    return "scalar" if type_name in ("number", "Scalar") else "param"


@functools.cache
def op_schema(func: Any) -> OpSchema:
    schema = func._schema
    arguments = tuple((a.name, _kind(str(a.type)), a.default_value if a.has_default_value()
                       else None) for a in schema.arguments)
    returns = schema.returns
    kind = ("tensor" if len(returns) == 1 and str(returns[0].type) == "Tensor" else
            "list" if len(returns) == 1 else "tuple")
    alias = returns[0].alias_info if len(returns) == 1 else None
    return OpSchema(func.name(), arguments, kind, _functional(func) if is_inplace(func) else None,
                    alias is not None and not alias.is_write)


def is_inplace(func: Any) -> bool:
    """`add_`: it writes its first argument (and is named for it)."""
    args = func._schema.arguments
    return bool(args) and args[0].alias_info is not None and args[0].alias_info.is_write \
        and func._schema.name.endswith("_")


def _functional(func: Any) -> Any:
    """`add_.Tensor` -> `add.Tensor`: an in-place op is its functional op, then an update.
    The overload is the one taking the same arguments, whatever its name (`pow_.Scalar` ->
    `pow.Tensor_Scalar`, not `pow.Scalar`, which takes a number and a tensor)."""
    packet = getattr(torch.ops.aten, func._schema.name.split("::")[1].rstrip("_"), None)
    signature = [(a.name, str(a.type)) for a in func._schema.arguments]
    for name in packet.overloads() if packet is not None else ():
        overload = getattr(packet, name)
        if [(a.name, str(a.type)) for a in overload._schema.arguments] == signature:
            return overload
    return None
