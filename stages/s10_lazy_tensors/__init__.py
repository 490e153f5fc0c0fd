"""Stage 10: lazy tensors. A PyTorch device whose ops build a hashed IR graph, run through PJRT.

torch_xla: torch_xla/csrc/ir.cpp, tensor.cpp, aten_xla_type.cpp, xla_graph_executor.cpp,
torch_xla/torch_xla.py, torch_xla/_dynamo/dynamo_bridge.py; PyTorch: torch/csrc/lazy/core.
A tensor on `torch.device("ltc")` holds a promise: each aten op appends a node whose hash
is fixed when it is built; `sync()` folds every live tensor's pending IR into one graph hash,
compiles that graph once through stage 9's client, and replays it by hash ever after.

Reading path (the lesson, in order):
  1. hash.py              torch's 128-bit HashCombine, MHash and DataHash
  2. ir.py                nodes that hash themselves; shapes only at the leaves; post order
  3. tensor.py            the lazy tensor: buffer, pending IR or host data; the live arena
  4. aten_xla_type.py     each aten op: a node, a decomposition, or the CPU (`aten::<op>`)
  5. graph_executor.py    sync: collect, hash, cache, compile, execute, donate; reads
  6. dynamo_bridge.py     torch.compile: trace once on real tensors, replay by hash

Beside it:
  torch_xla.py            device(), sync(), mark_step(), eager mode, graph dumps
  dynamo_backend.py       the torch.compile backend `openxla`: AOTAutograd, then the bridge
  register_xla.py         our kernels and the fallback under the device's dispatch key
  op_schema.py            an op's schema read once: its operands, parameters and returns
  shape_inference.py      an op's output shapes and dtypes, from its meta kernel
  aten_cpu_fallback.py    an op without a rule or a decomposition, on the CPU
  tensor_impl.py          an in-place view op (squeeze_, t_): new sizes, the same values
  device_data.py          host tensors to buffers and back; numbers as cached device data
  tensor_util.py          host tensors as numpy arrays and back, bfloat16 by its bits
  type_cast.py            a fill, clamp or pad number must fit the tensor's dtype, or raise
  lowering.py             a rule per aten op, written with stage 2's lax
  nn_lowering.py          softmax, layer norm, gathers and scatters by one-hot, convolution
  activation_lowering.py  GELU and softshrink: float16, bfloat16 in float32, rounded once
  pool_lowering.py        max pooling, forward and backward, by windows that tile the input
  pointwise_ops.py        addcmul, addcdiv, pow by a bool, `//`: numbers as their kernels use them
  rnn_cells.py            the fused LSTM and GRU cells torch calls on our device, as gate math
  kernel_checks.py        what a CPU kernel refuses that its meta kernel lets through
  lowering_context.py     a post order to one StableHLO module with stage 8's builder
  metrics.py              the lazy core's counters in stage 9's metrics_report()
  debug_util.py           PT_XLA_DEBUG: which hash ingredient made a graph new
"""

from . import (
    activation_lowering,
    aten_cpu_fallback,
    aten_xla_type,
    debug_util,
    device_data,
    dynamo_backend,
    dynamo_bridge,
    graph_executor,
    hash,
    ir,
    kernel_checks,
    lowering,
    lowering_context,
    metrics,
    nn_lowering,
    op_schema,
    pointwise_ops,
    pool_lowering,
    register_xla,
    rnn_cells,
    shape_inference,
    tensor,
    tensor_impl,
    tensor_util,
    torch_xla,
    type_cast,
)
from .metrics import metrics_report
from .tensor import LazyTensor
from .torch_xla import (
    device,
    eager_mode,
    eager_mode_context,
    get_graph_hash,
    get_tensors_text,
    mark_step,
    sync,
    wait_device_ops,
    xla_device,
)

__all__ = [
    "LazyTensor",
    "activation_lowering",
    "aten_cpu_fallback",
    "aten_xla_type",
    "debug_util",
    "device_data",
    "dynamo_backend",
    "dynamo_bridge",
    "device",
    "eager_mode",
    "eager_mode_context",
    "get_graph_hash",
    "get_tensors_text",
    "graph_executor",
    "hash",
    "ir",
    "kernel_checks",
    "lowering",
    "lowering_context",
    "mark_step",
    "metrics",
    "metrics_report",
    "nn_lowering",
    "op_schema",
    "pointwise_ops",
    "pool_lowering",
    "register_xla",
    "rnn_cells",
    "shape_inference",
    "sync",
    "tensor",
    "tensor_impl",
    "tensor_util",
    "torch_xla",
    "type_cast",
    "wait_device_ops",
    "xla_device",
]
