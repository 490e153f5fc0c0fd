"""jit with shardings: one program for all the devices of a mesh, run on each with its block.

JAX: jax/_src/pjit.py (`in_shardings`, `out_shardings`), interpreters/pxla.py
(`lower_sharding_computation`, `UnloadedMeshExecutable`, `ExecuteReplicated`). Stage 7 traces
(its trace cache), stage 8 lowers, this stage annotates the module with the shardings, stage 9
compiles it with `num_partitions` = the number of devices and runs it with
`execute_replicated`: every device gets the same program and its own block of each argument.
The partitioner decides the shardings nobody asked for; they are read back from the
executable, so each output array knows its layout; donation pairs blocks (donation.py)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from stages.s01_pytrees import tree_flatten, tree_unflatten
from stages.s02_tracing import config, core
from stages.s02_tracing.api_util import fun_signature
from stages.s07_caches import dispatch
from stages.s07_caches import pjit as s07_pjit
from stages.s07_caches.api_util import resolve_argnums
from stages.s07_caches.sharding_impls import UNSPECIFIED
from stages.s08_lowering.backend import safe_result_paths
from stages.s08_lowering.module import dce_jaxpr_consts, lower_jaxpr
from stages.s09_pjrt import runtime
from stages.s09_pjrt.computation_client import CompileInstance, Computation

from . import donation, mlir, sharding_in_types
from .array import ArrayImpl, addressable, device_names, device_put, put_shards
from .hlo_sharding import HloSharding
from .partition_spec import P
from .pjit_checks import (
    check_devices,
    check_no_kwargs,
    dynamic_arguments,
    flatten_shardings,
    intermediate_shardings,
    is_sharding_leaf,
    jaxpr_meshes,
    places_nothing,
    prepare_axis_resources,
    static_positions,
)
from .sharding_constraint import with_out_constraints
from .sharding_impls import NamedSharding, Sharding, hlo_to_named_sharding
from .sharding_in_types import has_explicit_axes, pjit_check_aval_sharding
from .single_device import arg_sharding, one_device, put_on


class ShardedProgram:
    """A lowered sharded jit: the text, and what compiling and calling it needs."""

    def __init__(self, name: str, text: str, devices: Sequence[Any], closed: core.ClosedJaxpr,
                 kept: Sequence[int], in_shardings: Sequence[Sharding],
                 out_shardings: Sequence[Sharding | None], shardy: bool):
        self.name, self.text, self.devices = name, text, list(devices)
        self.closed, self.in_avals, self.out_avals = closed, closed.in_avals, closed.out_avals
        self.kept, self.in_shardings = list(kept), list(in_shardings)
        self.asked_in: list[Sharding | None] = []  # set by lower_sharded: None where unasked
        self.mesh: Any = None  # set by lower_sharded: the mesh of the shardings it was given
        self.out_shardings, self.shardy = list(out_shardings), shardy

    def as_text(self, dialect: str | None = None, debug_info: bool = False) -> str:
        return self.text

    def compile(self) -> ShardedExecutable:
        client = runtime.get_computation_client()
        names = device_names(client)
        devices = [names[d] for d in self.devices]
        instance = CompileInstance(Computation(self.name, self.text, devices), devices[0],
                                   devices, is_sharded=True,
                                   use_shardy_partitioner=self.shardy)
        (computation,) = client.compile([instance])
        return ShardedExecutable(self, computation, client)


# --8<-- [start:lower]
def lower_sharded(closed: core.ClosedJaxpr, name: str, in_shardings: Sequence[Any],
                  out_shardings: Sequence[Any], donated: Sequence[bool],
                  keep_unused: bool = False) -> ShardedProgram:
    """Stage 8's module for the jaxpr, with every argument's and result's sharding on @main."""
    given = [s for s in [*in_shardings, *out_shardings] if s is not None]
    given += [NamedSharding(m, P()) for m in jaxpr_meshes(closed.jaxpr)]
    devices = given[0]._device_assignment
    for s in given:
        if s._device_assignment != devices:
            raise ValueError("Received incompatible devices for jitted computation. Got "
                             f"{s} on {list(s._device_assignment)} and {given[0]} on "
                             f"{list(devices)}")
    kept = range(len(closed.in_avals)) if keep_unused else \
        [i for i, u in enumerate(dce_jaxpr_consts(closed.jaxpr)[2]) if u]
    with mlir.lowering_meshes() as meshes:
        if mlir.use_shardy_partitioner.value:  # the first mesh is `@mesh`
            for s in given:
                if isinstance(s, NamedSharding):
                    mlir.mesh_symbol(s.mesh)
        module = lower_jaxpr(closed, name, donated=donated, keep_unused=keep_unused,
                             platform="cpu", result_names=safe_result_paths(closed),
                             set_up_aliases=donation.aliases_by_shard(
                                 [in_shardings[i] for i in kept], out_shardings, len(devices)))
        in_avals, out_avals = closed.in_avals, closed.out_avals
        mlir.annotate_main(module, [(in_shardings[i], in_avals[i].ndim) for i in kept],
                           [(s, a.ndim) for s, a in zip(out_shardings, out_avals, strict=True)],
                           len(devices))
    # an argument nobody placed is replicated (JAX: it would be on the first device)
    mesh = next(s.mesh for s in given if isinstance(s, NamedSharding))
    in_full = [s if s is not None else NamedSharding(mesh, P()) for s in in_shardings]
    program = ShardedProgram(module.name, mlir.module_text(module, meshes), devices, closed,
                             kept, in_full, out_shardings, mlir.use_shardy_partitioner.value)
    program.asked_in = list(in_shardings)
    program.mesh = mesh  # an output or a constraint may name it where no input does
    return program
# --8<-- [end:lower]


class ShardedExecutable:
    """A compiled sharded program; `call` takes global values and returns sharded arrays."""

    def __init__(self, program: ShardedProgram, computation: Any, client: Any):
        self.program, self.computation, self.client = program, computation, client
        names = device_names(client)
        self.local = addressable(client, program.devices)
        self.local_names = [names[d] for d in self.local]
        # --8<-- [start:read_back]
        mesh = program.mesh  # from every sharding given: a call may have no arguments

        def read(chosen: Any, aval: core.ShapedArray) -> NamedSharding:
            if chosen is None:
                return NamedSharding(mesh, P())
            dims, devs, last = chosen
            hlo = HloSharding.from_devices(np.array(devs).reshape(dims), last)
            return hlo_to_named_sharding(hlo, mesh, aval.ndim)
        # what the partitioner decided where nobody said: for the arguments, their layout
        n_in, n_out = len(program.kept), len(program.out_avals)
        params = computation.parameter_shardings() or [None] * n_in  # none on one device
        outs = (computation.output_shardings() or [None] * n_out)[:n_out]  # () has one
        self.in_shardings = list(program.in_shardings)
        for k, i in enumerate(program.kept):
            if program.asked_in[i] is None:
                self.in_shardings[i] = read(params[k], program.in_avals[i])
        self.out_shardings = [asked if asked is not None else read(got, aval) for aval, asked, got
                              in zip(program.out_avals, program.out_shardings, outs,
                                     strict=True)]
        # --8<-- [end:read_back]

    # --8<-- [start:call]
    def call(self, *args: Any) -> list[ArrayImpl]:
        arguments = []
        for i in self.program.kept:
            x, sharding = args[i], self.in_shardings[i]
            if isinstance(x, ArrayImpl):  # already laid out: its buffers, if the layout fits
                arguments.append(x.shards_for(sharding))
            else:  # a host value (or a one-device array): cut into blocks and sent
                x = np.asarray(x, dtype=self.program.in_avals[i].dtype)
                arguments.append(put_shards(x, sharding, self.client))
        outs = self.client.execute_replicated(self.computation, arguments, self.local_names)
        shardings = sharding_in_types.recover_user_shardings(self, args)  # as JAX spells them
        return [ArrayImpl(aval, sharding, shards, self.client) for aval, sharding, shards
                in zip(self.program.out_avals, shardings, outs, strict=True)]
    # --8<-- [end:call]

    def as_text(self) -> str:
        return self.computation.hlo_text()


class ShardedJit:
    """`jit(f, in_shardings=..., out_shardings=...)`: traced by stage 7, compiled here."""

    def __init__(self, fun: Callable, in_shardings: Any, out_shardings: Any, **jit_kwargs: Any):
        functools.update_wrapper(self, fun)
        self._jit = s07_pjit.jit(fun, **jit_kwargs)
        self._in = prepare_axis_resources(in_shardings, "in_shardings")
        self._out = prepare_axis_resources(out_shardings, "out_shardings")
        *_, self._static_nums, self._static_names = resolve_argnums(
            fun, fun_signature(fun), None, None, jit_kwargs.get("static_argnums"),
            jit_kwargs.get("static_argnames"))
        self._executables: dict[Any, tuple[Any, ShardedExecutable]] = {}
        self._fast: dict[Any, tuple[ShardedExecutable, Any]] = {}

    def _dynamic(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        return dynamic_arguments(args, kwargs, self._static_nums, self._static_names)

    def _shardings(self, traced: Any, args: tuple, kwargs: dict) -> tuple[list, list]:
        """Per traced leaf (static arguments are none), its sharding; per output, its own."""
        leaves = tree_flatten((args, kwargs))[0]
        given = flatten_shardings(self._in, args)
        given += [None] * (len(leaves) - len(given))  # keyword arguments: none given
        # an argument already laid out keeps its layout where jit gives none; not another one
        ins = [arg_sharding(s, x) for s, x in zip(given, leaves, strict=True)]
        outs = flatten_shardings(self._out, traced.out_info, "out_shardings")
        outs = [a.sharding if s is None else s  # an output typed by its sharding: laid out so
                for s, a in zip(outs, traced.jaxpr.out_avals, strict=True)]
        p, paths = traced._p, safe_result_paths(traced.jaxpr)
        pjit_check_aval_sharding(ins, p.in_avals, p.arg_names, "pjit arguments", False)
        pjit_check_aval_sharding(outs, traced.jaxpr.out_avals, paths, "pjit outputs", False)
        fun = self.__wrapped__
        name = getattr(fun, "__qualname__", getattr(fun, "__name__", str(fun)))
        check_devices(name, p.arg_names, leaves, ins, outs, intermediate_shardings(traced.jaxpr))
        return ins, outs

    def _place(self, args: tuple) -> tuple:
        """Host arguments given an Explicit mesh's sharding are put first: types for the trace."""
        if is_sharding_leaf(self._in) and not isinstance(self._in, NamedSharding):
            return args
        dynamic = self._dynamic(args, {})[0]
        leaves, tree = tree_flatten(dynamic)
        placed = iter(tree_unflatten(tree, [
            device_put(x, s) if isinstance(s, NamedSharding) and has_explicit_axes(s.mesh)
            and not isinstance(x, (ArrayImpl, core.Tracer)) else x
            for x, s in zip(leaves, flatten_shardings(self._in, dynamic), strict=True)]))
        static = static_positions(len(args), self._static_nums)
        return tuple(a if i in static else next(placed) for i, a in enumerate(args))

    def lower(self, *args: Any, **kwargs: Any) -> Any:
        check_no_kwargs(self._in, kwargs)
        args = self._place(args)
        traced = self._jit.trace(*args, **kwargs)
        ins, outs = self._shardings(traced, *self._dynamic(args, kwargs))
        p = traced._p.params
        if one_device(ins, outs, traced.jaxpr) or places_nothing(traced.jaxpr, ins, outs,
                                                                 p["keep_unused"]):
            return traced.lower()  # a program for one device, as the call runs it
        return lower_sharded(traced.jaxpr, p["name"], ins, outs,
                             p["donated_invars"], p["keep_unused"])

    def _signature(self, leaves: list) -> tuple | None:
        """The fast path's key: each leaf's type, shape, dtype and layout (JAX: the C++
        PjitFunctionCache's signature, which holds the argument shardings too)."""
        sig = []
        for x in leaves:
            if isinstance(x, ArrayImpl):
                sig.append((x.aval, x.sharding))
            elif isinstance(x, np.ndarray):
                sig.append((x.shape, x.dtype))
            else:
                return None
        return tuple(sig)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(core.trace_ctx.trace, core.EvalTrace):
            return with_out_constraints(self._jit, self._out)(*args, **kwargs)
        check_no_kwargs(self._in, kwargs)
        args = self._place(args)
        dynamic = self._dynamic(args, kwargs)
        leaves, tree = tree_flatten(dynamic)  # what the program takes: no static argument
        static = self._static_nums or self._static_names  # their values: stage 7 keys them
        sig = None if static else self._signature(leaves)
        fast_key = (tree, sig, mlir.use_shardy_partitioner.value, config.trace_context())
        hit = self._fast.get(fast_key) if sig is not None else None
        if hit is not None:  # the same types and layouts as a call before: run at once
            executable, out_tree = hit
            return tree_unflatten(out_tree, executable.call(*leaves))
        traced = self._jit.trace(*args, **kwargs)
        ins, outs = self._shardings(traced, *dynamic)
        device = one_device(ins, outs, traced.jaxpr)
        if device or places_nothing(traced.jaxpr, ins, outs, traced._p.params["keep_unused"]):
            # one device, or nothing laid out that the program uses: stage 9's path
            args, kwargs = put_on(device, args, kwargs, self._static_nums, self._static_names)
            return self._jit(*args, **kwargs)
        key = (id(traced.jaxpr), tuple(ins), tuple(outs), mlir.use_shardy_partitioner.value)
        entry = self._executables.get(key)
        if entry is None or entry[0] is not traced.jaxpr:
            p = traced._p.params
            program = lower_sharded(traced.jaxpr, p["name"], ins, outs, p["donated_invars"],
                                    p["keep_unused"])
            entry = (traced.jaxpr, program.compile())
            self._executables[key] = entry
        if sig is not None and not traced._p.consts:
            self._fast[fast_key] = (entry[1], traced.out_tree)
        return tree_unflatten(traced.out_tree, entry[1].call(*leaves))


def jit(fun: Callable | None = None, *, in_shardings: Any = UNSPECIFIED,
        out_shardings: Any = UNSPECIFIED, **jit_kwargs: Any) -> Any:
    """Stage 7's jit, plus where each input and output lives (JAX: jax.jit)."""
    if fun is None:
        return functools.partial(jit, in_shardings=in_shardings, out_shardings=out_shardings,
                                 **jit_kwargs)
    return ShardedJit(fun, in_shardings, out_shardings, **jit_kwargs)


dispatch.typed_jit.append(jit)  # eager ops on arrays typed by a sharding

