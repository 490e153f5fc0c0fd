"""The ahead-of-time stations of a jit call, each a plain object you can hold and question.

JAX: jax/_src/stages.py. `jit(f).trace(x)` is a `Traced` (the jaxpr and what it returns);
`.lower()` is a `Lowered` (the backend's program: its text, a cost estimate); `.compile()` is a
`Compiled`, a callable that runs the executable for exactly the types it was compiled for. Each
station goes through the same caches as a plain call: tracing, lowering and compiling the same
thing twice does the work once.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

from stages.s01_pytrees import (
    equality_errors_pytreedef,
    keystr,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_unflatten,
)
from stages.s02_tracing import config, core

from . import xla_bridge
from .api_util import ShapeDtypeStruct
from .sharding_impls import SingleDeviceSharding


@dataclasses.dataclass(frozen=True)
class ArgInfo:
    """What a station knows about one argument leaf: its aval, weak type included, and whether
    it is donated (JAX: stages.ArgInfo; a pytree leaf)."""

    _aval: Any
    donated: bool

    shape = property(lambda self: self._aval.shape)
    dtype = property(lambda self: self._aval.dtype)


def _out_info(out_tree: Any, out_avals: Any, weak: bool = True) -> Any:
    """The outputs' shapes and dtypes; weak types are a tracing fact, gone once lowered."""
    return tree_unflatten(out_tree, [
        ShapeDtypeStruct(a.shape, a.dtype, weak_type=weak and a.weak_type) for a in out_avals])


class _Stage:
    """What every station says of its arguments, read off `args_info` (JAX: stages.Stage)."""

    args_info: Any

    @property
    def in_avals(self) -> Any:
        """The arguments' avals, as a tree of the arguments' structure."""
        return tree_map(lambda info: info._aval, self.args_info)

    @property
    def donate_argnums(self) -> tuple[int, ...]:
        """The flat indices of the donated argument leaves."""
        return tuple(i for i, info in enumerate(tree_leaves(self.args_info)) if info.donated)


class Traced(_Stage):
    """A function traced for argument types: `.jaxpr`, `.out_info`, `.lower()`."""

    def __init__(self, p: Any, lower: Callable[[dict], Any]):
        self._p, self._lower = p, lower
        self.jaxpr = p.params["jaxpr"]
        self.fun_name = p.params["name"]
        self.in_tree, self.out_tree = p.in_tree, p.out_tree

    @property
    def args_info(self) -> Any:
        donated = self._p.params["donated_invars"][len(self._p.consts):]
        infos = [ArgInfo(a, d) for a, d in zip(self._p.in_avals, donated, strict=True)]
        return tree_unflatten(self.in_tree, infos)

    @property
    def out_info(self) -> Any:
        return _out_info(self.out_tree, self.jaxpr.out_avals)

    @property
    def out_avals(self) -> Any:
        return tree_unflatten(self.out_tree, self.jaxpr.out_avals)

    def lower(self) -> Lowered:
        return Lowered(self._lower(self._p.params), self)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Evaluate the jaxpr (eagerly, no compilation)."""
        leaves, _ = tree_flatten((args, kwargs))
        outs = core.jaxpr_as_fun(self.jaxpr)(*self._p.consts, *leaves)
        return tree_unflatten(self.out_tree, outs)


class Lowered(_Stage):
    """A lowered program: `.as_text()`, `.cost_analysis()`, `.compile()`."""

    def __init__(self, computation: Any, traced: Traced):
        self._computation, self._traced = computation, traced
        self.in_tree, self.out_tree = traced.in_tree, traced.out_tree
        self.args_info = traced.args_info
        self.out_info = _out_info(traced.out_tree, traced.jaxpr.out_avals, weak=False)

    def as_text(self, dialect: str | None = None, *, debug_info: bool = False) -> str:
        return self._computation.as_text(dialect, debug_info)

    def compiler_ir(self, dialect: str | None = None) -> Any:
        """The backend's program object (JAX: an MLIR module); a dialect the backend cannot
        print is refused, as `as_text` refuses it."""
        self.as_text(dialect)
        return self._computation.program

    def cost_analysis(self) -> Any:
        """An estimate from the program before compiling, or None if the backend has none."""
        return self._computation.cost_analysis()

    def compile(self, compiler_options: dict[str, Any] | None = None) -> Compiled:
        """Compile (through the executable cache); `compiler_options` add to jit's own, a
        new entry of the cache: the same program, other flags."""
        computation = self._computation
        if compiler_options:
            computation = copy.copy(computation)
            options = {**dict(computation.compile_options.env_option_overrides),
                       **compiler_options}
            computation.compile_options = dataclasses.replace(
                computation.compile_options, env_option_overrides=tuple(sorted(options.items())))
        return Compiled(computation.compile(), self._traced)


class Compiled(_Stage):
    """An executable for one signature: call it like the function, with the same types."""

    def __init__(self, executable: Any, traced: Traced):
        self._executable, self._traced = executable, traced
        self.in_tree, self.out_tree = traced.in_tree, traced.out_tree
        self.args_info = traced.args_info
        self.out_info = _out_info(traced.out_tree, traced.jaxpr.out_avals, weak=False)

    def as_text(self) -> str:
        return self._executable.xla_executable.as_text()

    def cost_analysis(self) -> Any:
        return self._executable.xla_executable.cost_analysis()

    def runtime_executable(self) -> Any:
        return self._executable.xla_executable

    @property
    def input_shardings(self) -> Any:
        """Each argument's sharding, in the (args, kwargs) tree: the backend's default device,
        or None for an argument the program does not read (JAX: same)."""
        kept = set(self._executable.xla_executable.program.kept_var_idx)
        skip = len(self._traced._p.consts)
        return tree_unflatten(self.in_tree, [_default_sharding() if skip + i in kept else None
                                             for i in range(self.in_tree.num_leaves)])

    @property
    def output_shardings(self) -> Any:
        """Each output's sharding, in the output tree."""
        return tree_unflatten(self.out_tree, [_default_sharding()] * self.out_tree.num_leaves)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if config.disable_jit.value:  # only the program is kept, not the function to run
            raise ValueError("Disable jit is not supported in the AOT path since the function is "
                             f"not available for (jit({self._traced._p.params['name']}))")
        leaves, in_tree = tree_flatten((args, kwargs))
        if in_tree != self.in_tree:
            errs = list(equality_errors_pytreedef(in_tree, self.in_tree))
            msg = ["Function compiled with input pytree does not match the input pytree it was "
                   f"called with. There are {len(errs)} mismatches, including:"]
            for path, thing1, thing2, explanation in errs:
                base, rest = ["args", "kwargs"][path[0].idx], tuple(path[1:])
                msg.append(f"    * at {base}{keystr(rest)}, seen {thing2} but now given "
                           f"{thing1}, so {explanation}")
            raise TypeError("\n".join(msg))
        for x in leaves:
            if isinstance(x, core.Tracer):
                raise TypeError(
                    "Cannot apply JAX transformations to a function lowered and compiled for a "
                    f"particular signature. Detected argument of Tracer type {type(x)}.")
        outs = self._executable.call(*self._traced._p.consts, *leaves)
        return tree_unflatten(self.out_tree, outs)



def _default_sharding() -> SingleDeviceSharding:
    return SingleDeviceSharding(xla_bridge.get_backend().devices()[0])


# --8<-- [start:device_mismatch]
class DeviceAssignmentMismatchError(ValueError):
    """A backend's refusal to run one program on arguments committed to two devices.

    `fails` holds the two arguments found, each (index, aval, device ids, platform): the
    backend knows devices, and jit, which catches this, knows the function's name and its
    arguments' names (JAX: stages.DeviceAssignmentMismatchError, raised in pxla, worded in
    pjit). Raised outside a jit (an eager op), it says what it can without them.
    """

    def __init__(self, fails: list[tuple[int, Any, list[int], str]], fun_name: str = ""):
        self.fails = fails
        super().__init__(device_assignment_mismatch_error(fun_name, fails, None))


def device_mismatch(e: DeviceAssignmentMismatchError, jitted: Any, args: tuple,
                    kwargs: dict) -> ValueError:
    """The backend's refusal, worded with the jitted function's name and its arguments' names
    (read from a trace of the call: a trace-cache hit)."""
    fun = jitted.__wrapped__
    name = getattr(fun, "__qualname__", getattr(fun, "__name__", str(fun)))
    return ValueError(device_assignment_mismatch_error(name, e.fails,
                                                       jitted.trace(*args, **kwargs)._p.arg_names))


def device_assignment_mismatch_error(fun_name: str, fails: list[tuple[int, Any, list[int], str]],
                                     arg_names: Any) -> str:
    """JAX's words for two arguments committed to different devices."""
    got = [f"argument {'' if arg_names is None else arg_names[i]} of {fun_name} with shape "
           f"{aval.str_short()} and with device ids {ids} on platform {platform}"
           for i, aval, ids, platform in fails]
    return f"Received incompatible devices for jitted computation. Got {got[0]} and {got[1]}"
# --8<-- [end:device_mismatch]
