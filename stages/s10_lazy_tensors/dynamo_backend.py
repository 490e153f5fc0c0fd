"""The torch.compile backend: Dynamo hands a captured graph here, and the bridge takes over.

PyTorch: torch/_dynamo/backends/torchxla.py (`openxla_eval`, `xla_backend_helper`, and
`openxla = aot_autograd(fw_compiler=openxla_eval_boxed)`, registered as "openxla"; that name
belongs to torch_xla, so ours is passed by value: `torch.compile(model, backend=openxla)`).
Dynamo calls a backend with fake tensors; the bridge needs the real lazy ones, so it is built
on the first real call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from .dynamo_bridge import extract_compiled_graph


def openxla_eval(model: torch.fx.GraphModule, example_inputs: Sequence[Any]
                 ) -> Callable[..., Any]:
    """A torch.compile backend: the bridge is built on the first real call, with the real
    lazy tensors (PyTorch: torch/_dynamo/backends/torchxla.py, `xla_backend_helper`)."""
    compiled: list[Callable[..., Any]] = []

    def fwd(*args: Any) -> Any:
        if not compiled:
            compiled.append(extract_compiled_graph(model, args))
        return compiled[0](*args)
    return fwd


def openxla(model: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
    """`torch.compile(fn, backend=openxla)`: AOTAutograd splits the captured graph into a
    forward and a backward graph and hands each to a boxed `openxla_eval` (PyTorch: the
    "openxla" backend of torch/_dynamo/backends/torchxla.py, `openxla_eval_boxed`)."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    def boxed(gm: torch.fx.GraphModule, inputs: Sequence[Any]) -> Callable[..., Any]:
        return make_boxed_func(openxla_eval(gm, inputs))
    return aot_autograd(fw_compiler=boxed)(model, example_inputs)


__all__ = ["openxla", "openxla_eval"]
