"""Control flow as plain Python, under `disable_jit`: what cond, switch, scan and while_loop run
instead of tracing their functions into a primitive.

JAX: the early exits at the top of `lax.cond`, `lax.switch` (`_switch_internal`), `lax.scan` and
`lax.while_loop` in jax/_src/lax/control_flow/, and `lax.fori_loop`'s return of `init_val` for
an empty range of known bounds (otherwise it hands off to scan or while_loop). Nothing is traced, so
nothing is checked: only the branch taken runs, a branch may return anything, and a carry may
change its type from one step to the next. A value that is only known when a program runs (a
tracer of vmap, or of a staging trace) cannot steer Python, so those keep the primitive.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from stages.s01_pytrees import PyTreeDef, tree_map, tree_unflatten
from stages.s02_tracing import config, core, lax
from stages.s02_tracing import numpy as jnp
from stages.s02_tracing.errors import ConcretizationTypeError


def is_concrete(x: Any) -> bool:
    """A Python or numpy value, or a tracer that knows its value (JAX: core.is_concrete)."""
    return not isinstance(x, core.Tracer) or x.to_concrete_value() is not None


def active(*steering: Any) -> bool:
    """Whether to run as Python: jit is disabled and every value that decides a path is known."""
    return config.disable_jit.value and all(is_concrete(x) for x in steering)


def empty_range(lower: Any, upper: Any) -> bool:
    """Whether a fori_loop over these known bounds runs no step (a Python scan needs one)."""
    return int(core.concrete_or_error(None, upper)) <= int(core.concrete_or_error(None, lower))


def cond(pred: Any, true_fun: Callable, false_fun: Callable, operands: Sequence[Any]) -> Any:
    return true_fun(*operands) if pred else false_fun(*operands)


def switch(index: Any, branches: Sequence[Callable], operands: Sequence[Any]) -> Any:
    return branches[int(index)](*operands)


def scan(f: Callable, init: Any, xs_flat: list[Any], xs_tree: PyTreeDef, length: int,
         reverse: bool) -> tuple[Any, Any]:
    """One call of `f` per step, the ys stacked at the end."""
    if length == 0:  # no step ran, so nothing says what a y would be
        raise ValueError("zero-length scan is not supported in disable_jit() mode because the "
                         "output type is unknown.")
    carry, ys = init, []
    steps = range(length)
    for i in reversed(steps) if reverse else steps:
        x = tree_unflatten(xs_tree, [lax.index_in_dim(v, i, keepdims=False) for v in xs_flat])
        carry, y = f(carry, x)
        ys.append(y)
    if reverse:
        ys.reverse()
    return carry, tree_map(lambda *y: lax.concatenate([lax.expand_dims(v, (0,)) for v in y], 0),
                           *ys)


def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any) -> tuple[bool, Any]:
    """The loop in Python: (True, the last value); (False, None) if a predicate is only known
    when the program runs (under vmap, say), and the primitive must run it."""
    try:
        val = tree_map(jnp.asarray, init_val)
        while cond_fun(val):
            val = tree_map(jnp.asarray, body_fun(val))
        return True, val
    except ConcretizationTypeError:
        return False, None
