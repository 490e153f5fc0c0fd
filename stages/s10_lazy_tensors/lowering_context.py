"""From a post order of IR nodes to a StableHLO module, with stage 8's builder.

torch_xla: torch_xla/csrc/lowering_context.cpp (`LoweringContext`: one parameter per device
data buffer, `LowerNode` for each node of the post order, `AddResult` per synced tensor,
`BuildXla`), and xla_graph_executor.cpp's `SetBufferDonors`. Every node is lowered by its rule
(lowering.py, nn_lowering.py) into the `@main` of one module named `SyncTensorsGraph`; stage 8
provides the IR, the printer, and the rules of every lax primitive the rules use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stages.s08_lowering import hlo, ir, mlir

from .device_data import virtual_device
from .ir import DeviceData, LeafNode, Node, Scalar, Value
from .lowering import DIRECT, LOWERINGS, lower_full, lower_scalar

_STUB = object()  # an operand position of a rule that held None


def _rule_kwargs(node: Node, values: Sequence[Any]) -> dict[str, Any]:
    """The rule's keyword arguments: each operand (or list of operands) under its argument's
    name, then the node's parameters."""
    kwargs, it = {}, iter(values)
    for name, count in node.layout:
        if count < 0:
            kwargs[name] = next(it)
        else:
            kwargs[name] = [next(it) for _ in range(count)]
    kwargs.update(node.params)
    return kwargs


def _outputs(node: Node) -> list[Any]:
    """The avals a rule is told to produce, None for an output the op leaves out."""
    present = getattr(node, "present", [True] * node.num_outputs)
    avals, out = iter(node.avals), []
    for p in present:
        out.append(next(avals) if p else None)
    return out


# --8<-- [start:lower_node]
def lower_node(ctx: mlir.ModuleContext, node: Node, operands: list[ir.Value | None]
               ) -> list[ir.Value]:
    """Emit `node` at the current insertion point (C++: LoweringContext::LowerNode)."""
    given = [x for x in operands if x is not None]
    rule_ctx = mlir.LoweringRuleContext(ctx, None, [v.aval for v in node.operands if v],
                                        node.avals)
    if isinstance(node, Scalar):
        return mlir.lower_fun(lambda: lower_scalar(out=node.avals, value=node.value))(rule_ctx)
    if isinstance(node, LeafNode):  # aten::full
        return mlir.lower_fun(lambda: lower_full(out=node.avals, **dict(node.params)))(rule_ctx)
    rule, out = LOWERINGS[node.func], _outputs(node)
    if node.func in DIRECT:  # emits StableHLO itself, on IR values
        results = rule(rule_ctx, **_rule_kwargs(node, operands), out=out)
        return [r for r in results if r is not None]

    def traced(*xs: Any) -> list[Any]:  # the rule on stage 2 tracers, None operands kept
        it = iter(xs)
        full = [None if v is None else next(it) for v in node.operands]
        return rule(**_rule_kwargs(node, full), out=out)
    return mlir.lower_fun(traced, multiple_results=True)(rule_ctx, *given)
# --8<-- [end:lower_node]


def lower_graph(post_order: Sequence[Node], roots: Sequence[Value],
                parameters: Sequence[Any], aliases: dict[int, int],
                name: str = "SyncTensorsGraph") -> tuple[str, int]:
    """The module computing `roots` from `parameters` (one per device data buffer, in post
    order), with `tf.aliasing_output` on each donated parameter and `mhlo.sharding` on each
    sharded one (SPMD: partitioned over every device). Returns the text and the number of
    nodes emitted."""
    spmd = virtual_device()
    num_partitions = spmd.num_partitions if spmd is not None else 1
    module = ir.Module(name, {"mhlo.num_partitions": f"{num_partitions} : i32",
                              "mhlo.num_replicas": "1 : i32"})
    param_index = {id(data): i for i, data in enumerate(parameters)}
    param_avals: list[Any] = [None] * len(parameters)
    param_shardings: list[Any] = [None] * len(parameters)
    for node in post_order:
        if isinstance(node, DeviceData):
            param_avals[param_index[id(node.data)]] = node.avals[0]
            param_shardings[param_index[id(node.data)]] = getattr(node.data, "sharding", None)
    main = ir.FuncOp("main", [mlir.aval_to_ir_type(a) for a in param_avals],
                     [mlir.aval_to_ir_type(v.aval) for v in roots], "public")
    for param, output in aliases.items():
        main.arg_attrs[param]["tf.aliasing_output"] = f"{output} : i32"
    for param, sharding in enumerate(param_shardings):  # C++: ShardingUtil::SetHloSharding
        if sharding is not None:
            main.arg_attrs[param]["mhlo.sharding"] = f'"{sharding}"'
    module.add_function(main)
    ctx = mlir.ModuleContext(module, "cpu")
    emitted: dict[int, list[ir.Value]] = {}
    with ir.InsertionPoint(main.body.block):
        for node in post_order:
            if isinstance(node, DeviceData):
                emitted[id(node)] = [main.arguments[param_index[id(node.data)]]]
                continue
            operands = [None if v is None else emitted[id(v.node)][v.index]
                        for v in node.operands]
            emitted[id(node)] = lower_node(ctx, node, operands)
        hlo.return_([emitted[id(v.node)][v.index] for v in roots], "func.return")
    return module.as_text(), len(post_order)
