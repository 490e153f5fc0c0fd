"""The module around the program: `module @jit_f`, a public `@main`, donation, result names.

JAX: jax/_src/interpreters/mlir.py (`lower_jaxpr_to_module`, `lower_jaxpr_to_fun` with
main_function=True, `_set_up_aliases`, `sanitize_name`) and pxla.py (`_dce_jaxpr`, which drops
the unused arguments first). `lower_jaxpr` is the whole of this stage as jit will call it.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from stages.s01_pytrees import PyTreeDef
from stages.s02_tracing import api_util, core
from stages.s02_tracing import partial_eval as pe
from stages.s02_tracing.api_util import result_paths
from stages.s03_partial_eval import dce_jaxpr

from . import hlo, ir
from .mlir import ModuleContext, aval_to_ir_type, ir_consts, jaxpr_subcomp

_PLATFORMS_WITH_DONATION = ("cpu", "cuda", "rocm", "tpu")


def sanitize_name(name: str) -> str:
    """Replace what XLA would alter in a module name: `jit_<lambda>` -> `jit__lambda_`."""
    return re.sub(r"[^\w.-]", "_", name)


def dce_jaxpr_consts(jaxpr: core.Jaxpr) -> tuple[core.Jaxpr, list[bool], list[bool]]:
    """DCE that also drops unused constvars: (jaxpr, used consts, used inputs)."""
    # JAX: pe.dce_jaxpr_consts; ours runs stage 3's dce_jaxpr with the constvars as inputs
    n = len(jaxpr.constvars)
    new_jaxpr, used = dce_jaxpr(pe.convert_constvars_jaxpr(jaxpr), True)
    used_consts, used_inputs = used[:n], used[n:]
    new_jaxpr = new_jaxpr.replace(constvars=new_jaxpr.invars[:sum(used_consts)],
                                  invars=new_jaxpr.invars[sum(used_consts):])
    return new_jaxpr, used_consts, used_inputs


# --8<-- [start:aliases]
def _set_up_aliases(avals_in: Sequence[core.ShapedArray], avals_out: Sequence[core.ShapedArray],
                    donated: Sequence[bool]) -> tuple[list[int | None], list[bool], list[bool]]:
    """Match donated inputs to outputs: (output each input aliases, buffer donors, unused).

    A donated input aliases the first unclaimed output of its shape and dtype; one left over
    goes to XLA (`jax.buffer_donor`) if a free output has as many elements, whatever its dtype.
    """
    # EXERCISE 8.3 (donation): pair each donated input with an output of its shape and dtype
    def strip(a: core.ShapedArray) -> tuple:
        return a.shape, a.dtype  # weak types do not matter to a buffer

    waiting: dict[tuple, list[int]] = {}
    for i, (aval, d) in enumerate(zip(avals_in, donated, strict=True)):
        if d:
            waiting.setdefault(strip(aval), []).append(i)
    aliases: list[int | None] = [None] * len(avals_in)
    unused = list(donated)
    for j, aval in enumerate(avals_out):
        if waiting.get(strip(aval)):
            i = waiting[strip(aval)].pop(0)
            aliases[i], unused[i] = j, False
    free_sizes = [a.size for j, a in enumerate(avals_out) if j not in aliases]
    donors = [False] * len(avals_in)
    for i, aval in enumerate(avals_in):
        if unused[i] and aval.size in free_sizes:
            free_sizes.remove(aval.size)
            unused[i], donors[i] = False, True
    return aliases, donors, unused
    # END EXERCISE
# --8<-- [end:aliases]
set_up_aliases = _set_up_aliases  # stage 11 runs it on each device's blocks


def warn_unused_donations(avals: Sequence[Any], unused: Sequence[bool], platform: str) -> None:
    """JAX's warning for the donated buffers no output could take (named by `avals`)."""
    if any(unused):
        msg = "See an explanation at https://docs.jax.dev/en/latest/faq.html#buffer-donation."
        if platform not in _PLATFORMS_WITH_DONATION:
            msg = f"Donation is not implemented for ('{platform}',).\n{msg}"
        not_usable = ", ".join(str(a) for a, u in zip(avals, unused, strict=True) if u)
        warnings.warn(f"Some donated buffers were not usable: {not_usable}.\n{msg}",
                      stacklevel=3)


# --8<-- [start:lower_jaxpr]
def lower_jaxpr(closed_jaxpr: core.ClosedJaxpr, name: str = "fun", *,
                donated: Sequence[bool] | None = None, keep_unused: bool = False,
                platform: str = "cpu", out_tree: PyTreeDef | None = None,
                result_names: Sequence[str] | None = None,
                set_up_aliases: Callable = _set_up_aliases) -> ir.Module:
    """The StableHLO module `jax.jit(f).lower(...)` would build for f's closed jaxpr.

    `donated[i]` donates input i's buffer; `out_tree` (or `result_names`) names the results;
    unless `keep_unused`, inputs and constants the outputs do not need are dropped first.
    Stage 11 passes its own `set_up_aliases`, which pairs buffers by their shards' shapes."""
    jaxpr, consts = closed_jaxpr.jaxpr, list(closed_jaxpr.consts)
    donated = [False] * len(jaxpr.invars) if donated is None else list(donated)
    if len(donated) != len(jaxpr.invars):
        raise ValueError(f"donated has {len(donated)} entries for {len(jaxpr.invars)} inputs")
    if not keep_unused:  # JAX: pxla._dce_jaxpr
        jaxpr, used_consts, used_inputs = dce_jaxpr_consts(jaxpr)
        consts = [c for c, u in zip(consts, used_consts, strict=True) if u]
        donated = [d for d, u in zip(donated, used_inputs, strict=True) if u]
    in_avals, out_avals = [v.aval for v in jaxpr.invars], [v.aval for v in jaxpr.outvars]
    aliases, donors, unused = [None] * len(in_avals), [False] * len(in_avals), donated
    if platform in _PLATFORMS_WITH_DONATION:
        aliases, donors, unused = set_up_aliases(in_avals, out_avals, donated)
    warn_unused_donations(in_avals, unused, platform)

    module = ir.Module(sanitize_name(f"jit_{name}").rstrip("_"),
                       {"mhlo.num_partitions": "1 : i32", "mhlo.num_replicas": "1 : i32"})
    ctx = ModuleContext(module, platform)
    main = ir.FuncOp("main", [aval_to_ir_type(a) for a in in_avals],
                     [aval_to_ir_type(a) for a in out_avals], "public")
    for attrs, alias, donor in zip(main.arg_attrs, aliases, donors, strict=True):
        if alias is not None:
            attrs["tf.aliasing_output"] = f"{alias} : i32"
        if donor:
            attrs["jax.buffer_donor"] = "true"
    # JAX too writes no jax.result_info when it does not know the outputs
    names = result_names if result_names is not None or out_tree is None else \
        result_paths(out_tree)
    if names is not None:
        for attrs, result_name in zip(main.result_attrs, names, strict=True):
            attrs["jax.result_info"] = hlo.string(result_name)
    module.add_function(main)
    with ir.InsertionPoint(main.body.block):
        const_values = ir_consts(consts, [v.aval for v in jaxpr.constvars])
        outs = jaxpr_subcomp(ctx, jaxpr, const_values, *main.arguments)
        hlo.return_(outs, "func.return")
    return module
# --8<-- [end:lower_jaxpr]


def lower(fun: Any, *args: Any, static_argnums: Sequence[int] = (), **kwargs: Any
          ) -> ir.Module:
    """Trace `fun` on example arguments (stage 2) and lower it: `jax.jit(fun).lower(*args)`."""
    dbg = api_util.debug_info("jit", fun, args, kwargs, static_argnums)
    closed, _, out_tree = pe.trace_to_jaxpr(fun, args, kwargs, dbg, static_argnums)
    return lower_jaxpr(closed, getattr(fun, "__name__", "fun"), out_tree=out_tree)
