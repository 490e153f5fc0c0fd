"""Lazy IR: nodes that hash themselves as they are built, and the post order a graph runs in.

torch_xla: torch_xla/csrc/ir.{h,cpp} (`XlaNode`, `GetOperandHashes`, `GetOpHash`),
ops/device_data.cpp, ops/scalar.cpp; PyTorch: torch/csrc/lazy/core/ir.cpp (`Value::hash`,
`OpKind::hash`) and ir_util.cpp (`ComputePostOrder`). A node is an op name, its operands (values
of earlier nodes), the shapes and dtypes of its outputs and its scalar parameters. Its hash is
fixed at construction: the op, its outputs' dtypes and the parameters make `node_hash`; the
operands' hashes, folded in order, make `dag_hash`, the hash of the whole graph below it. Only
leaves hash a shape.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from stages.s02_tracing.core import ShapedArray

from .hash import NULL_OPT, hash_combine, hash_value, mhash, string_hash

DEFAULT_HASH_SEED = 0x5A2D296E9 & 0xFFFFFFFF  # C++: (uint32_t)0x5a2d296e9, truncated
DEVICE_DATA_SEED = 101

_XLA_TYPES = {"bool": "pred", "int8": "s8", "int16": "s16", "int32": "s32", "int64": "s64",
              "uint8": "u8", "float16": "f16", "bfloat16": "bf16", "float32": "f32",
              "float64": "f64"}


def shape_string(aval: ShapedArray) -> str:
    """`f32[64,784]`, as `xla::Shape::ToString()` prints a shape without its layout."""
    return f"{_XLA_TYPES[np.dtype(aval.dtype).name]}[{','.join(str(d) for d in aval.shape)}]"


class Value:
    """Output `index` of `node` (C++: torch::lazy::Value): what a lazy tensor points at."""

    __slots__ = ("node", "index")

    def __init__(self, node: Node, index: int = 0):
        self.node, self.index = node, index

    @property
    def aval(self) -> ShapedArray:
        return self.node.avals[self.index]

    def hash(self) -> int:
        """C++: Value::hash = HashCombine(node->hash(), Hash(index))."""
        return hash_combine(self.node.hash(), hash_value(self.index))


# --8<-- [start:node]
class Node:
    """One operation of the lazy graph (C++: XlaNode). Built once; only SPMD adds shardings."""

    output_shardings: list[Any] | None = None  # C++: output_shardings_, one per output
    sharding_hash = 0  # C++: sharding_hash_, 0 while the node has no sharding

    def __init__(self, op: str, operands: Sequence[Value], avals: Sequence[ShapedArray],
                 params: Sequence[tuple[str, Any]] = ()):
        self.op, self.operands = op, list(operands)
        self.avals, self.params = list(avals), tuple(params)
        # the op's scalar parameters enter through the seed (C++: MHash(dims, keepdim, ...))
        seed = mhash(*(v for _, v in self.params)) if self.params else DEFAULT_HASH_SEED
        self.node_hash = hash_combine(_op_hash(op, tuple(a.dtype for a in self.avals)), seed)
        self.dag_hash = self.operand_hashes(self.node_hash)

    def operand_hashes(self, node_hash: int) -> int:
        """Fold each operand's hash into `node_hash`, in order (C++: GetOperandHashes)."""
        # EXERCISE 10.2 (operand-hashes): fold the operands in order; a missing one is kNullOpt
        h = node_hash
        for operand in self.operands:
            h = hash_combine(h, NULL_OPT if operand is None else operand.hash())
        return h
        # END EXERCISE

    def hash(self) -> int:
        """The hash of the graph rooted here (C++: XlaNode::hash), its shardings' folded in."""
        if self.sharding_hash:
            return hash_combine(self.dag_hash, self.sharding_hash)
        return self.dag_hash

    @property
    def num_outputs(self) -> int:
        return len(self.avals)

    def __repr__(self) -> str:
        return f"{self.op}({', '.join(shape_string(a) for a in self.avals)})"
# --8<-- [end:node]


@functools.lru_cache(maxsize=4096)
def _op_hash(op: str, dtypes: tuple) -> int:
    """The op, and the outputs' dtypes, which torch_xla's operands imply but ours do not: an
    int64 is 32 bits on our device, so a number (which does not promote uint8) and an int32
    tensor (which does) are the same leaf, and `u8 + (-3)` would reuse `u8 + int32`'s program."""
    return hash_combine(string_hash(op), string_hash(",".join(d.name for d in dtypes)))


class LeafNode(Node):
    """A node without operands: its shape is hashed, since no operand implies it."""

    def __init__(self, op: str, aval: ShapedArray, seed: int, params=()):
        self.op, self.operands, self.avals, self.params = op, [], [aval], tuple(params)
        self.node_hash = self.dag_hash = _leaf_hash(op, aval.shape, aval.dtype, seed)


@functools.lru_cache(maxsize=4096)  # pure, and the same leaves come back every step
def _leaf_hash(op: str, shape: tuple, dtype: Any, seed: int) -> int:
    """C++: GetOpHash = HashCombine(HashCombine(op.hash(), Hash(shape.ToString())), seed)."""
    text = shape_string(ShapedArray(shape, dtype))
    return hash_combine(hash_combine(string_hash(op), hash_value(text)), seed)


class DeviceData(LeafNode):
    """A graph input: a buffer already on the device (C++: ops/device_data.cpp). Hashed by
    its shape, never its values, so the same program on new data is the same graph."""

    def __init__(self, data: Any, aval: ShapedArray):
        super().__init__("xla::device_data", aval, DEVICE_DATA_SEED)
        self.data = data  # the buffer's owner is written on it (`tensor_id`), for donation
        if getattr(data, "sharding", None) is not None:  # SPMD data carries its layout
            data.sharding.attach(self)  # stage 11: output 0 has it, and its hash changes


class Scalar(LeafNode):
    """A constant baked into the program (C++: ops/scalar.cpp, prim::Constant), hashed by its
    value: only for the special scalars 0, 1 and -1 (others become device data, graph_executor)."""

    def __init__(self, value: float | int | bool, aval: ShapedArray):
        super().__init__("prim::Constant", aval, mhash(value), (("value", value),))
        self.value = value


# --8<-- [start:post_order]
def compute_post_order(roots: Iterable[Node]) -> list[Node]:
    """Every node the roots need, each after its operands (C++: Util::ComputePostOrder).

    A stack, as in C++: a node is pushed, its operands pushed above it (so the last operand is
    visited first), and it is emitted when it comes back to the top with its operands done.
    """
    # EXERCISE 10.4 (post-order): C++'s stack walk; operands first, the last operand first
    emitted: dict[int, bool] = {}  # id(node) -> done? (False while its operands are pending)
    post_order: list[Node] = []
    for root in roots:
        stack = [root]
        while stack:
            node = stack[-1]
            state = emitted.get(id(node))
            if state is None:
                emitted[id(node)] = False
                stack.extend(v.node for v in node.operands
                             if v is not None and id(v.node) not in emitted)
            else:
                if state is False:
                    emitted[id(node)] = True
                    post_order.append(node)
                stack.pop()
    return post_order
    # END EXERCISE
# --8<-- [end:post_order]

