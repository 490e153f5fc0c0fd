"""What this stage does only so that its printed text matches JAX 0.10.2's exactly.

None of it is part of the mechanism: each function is named where it is used, so a reader can
skip it. The tests compare our printed jaxprs and error messages with JAX's, character for
character; these are the places where that needs JAX's spelling rather than ours.
"""

from __future__ import annotations

from typing import Any


def jit_tracer_repr(tracer: Any) -> str:
    """A jaxpr-building tracer prints as `JitTracer(f32[3])`, as JAX's DynamicJaxprTracer
    (ours has that class name too) does whatever traced it: see its `_short_repr`."""
    return f"JitTracer({tracer.aval})"


def _fun_name(f: Any) -> str:
    return getattr(f, "__name__", "<unnamed function>")


def wrapped_fun_repr(fun: Any) -> str:
    """A WrappedFun prints its stack as JAX's does: each transformation's name and, oddly,
    `<unnamed function>` for its static arguments, then the core function's name."""
    lines = [f"{i}   : {_fun_name(gen)}   {_fun_name(args)}"
             for i, (gen, args) in enumerate(fun.transforms)]
    return "Wrapped function:\n" + "\n".join(lines) + f"\nCore: {_fun_name(fun.f)}\n"
