"""Sharding annotations in the module: Shardy's (`sdy.mesh`, `#sdy.sharding`) or GSPMD's
(`mhlo.sharding` strings), chosen by `jax_use_shardy_partitioner`, Shardy by default as in JAX.

JAX: jax/_src/interpreters/mlir.py (`lower_jaxpr_to_module` writes `mhlo.num_partitions`, the
`sdy.mesh` symbols and the argument and result attributes; `wrap_with_sharding_op` writes a
sharding constraint). Stage 8 builds the module; this stage annotates `@main`'s arguments and
results and lets rules inside the body write constraints. The compiler (XLA's SPMD
partitioner: Shardy or GSPMD) then propagates shardings to every value and splits the program.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence

from stages.s02_tracing import config
from stages.s08_lowering import ir
from stages.s08_lowering.hlo import symbol

from .mesh import Mesh
from .sharding_impls import NamedSharding, Sharding

use_shardy_partitioner = config.bool_state(
    "jax_use_shardy_partitioner", True,
    "Annotate shardings for the Shardy partitioner (sdy dialect); False: GSPMD's "
    "mhlo.sharding strings.")

_state = threading.local()


@contextlib.contextmanager
def lowering_meshes() -> Iterator[list[Mesh]]:
    """Collect the meshes the rules of one module refer to (each becomes an `sdy.mesh`)."""
    prev = getattr(_state, "meshes", None)
    _state.meshes = []
    try:
        yield _state.meshes
    finally:
        _state.meshes = prev


def mesh_symbol(mesh: Mesh) -> str:
    """The name a Shardy annotation uses for `mesh` (JAX names the one mesh `@mesh`)."""
    meshes = getattr(_state, "meshes", None)
    shapes = [m.shape for m in meshes] if meshes is not None else [mesh.shape]
    if meshes is not None and mesh.shape not in shapes:
        meshes.append(mesh)
        shapes.append(mesh.shape)
    k = shapes.index(mesh.shape)
    return "mesh" if k == 0 else f"mesh_{k}"


# --8<-- [start:sdy_mesh]
def sdy_mesh_op(mesh: Mesh, name: str = "mesh") -> str:
    """`sdy.mesh @mesh = <["data"=2, "model"=2]>`, and the axes again as JAX 0.10 writes them
    for StableHLO. A mesh speaks of logical ids (positions), so it lists no device ids: which
    real device each position is, is the executable's device assignment."""
    axes = ", ".join(f'"{n}"={s}' for n, s in mesh.shape.items())
    described = ", ".join(f'{{name = "{n}", size = {s} : i64}}' for n, s in mesh.shape.items())
    return (f"sdy.mesh {symbol(name)} = <[{axes}]> "
            f"{{stablehlo.mesh = {{axes = [{described}]}}}}")
# --8<-- [end:sdy_mesh]


def sharding_attr(sharding: Sharding, ndim: int) -> tuple[str, str]:
    """The attribute name and value an argument or result is annotated with."""
    if use_shardy_partitioner.value:
        mesh = sharding.mesh if isinstance(sharding, NamedSharding) else None
        if mesh is None:
            return "sdy.sharding", f"#sdy.sharding<@mesh, [{', '.join(['{}'] * ndim)}]>"
        return "sdy.sharding", "#sdy.sharding" + sharding._to_sdy_sharding(ndim,
                                                                          mesh_symbol(mesh))
    return "mhlo.sharding", f'"{sharding._to_xla_hlo_sharding(ndim)}"'


def custom_call(target: str, x: ir.Value, result_type: str, attrs: dict[str, str]
                ) -> ir.Value:
    """`stablehlo.custom_call @Sharding(%0) {backend_config = "", mhlo.sharding = "..."}`."""
    def asm(p, op):
        body = ", ".join(f"{k} = {v}" for k, v in sorted({"backend_config": '""',
                                                          **attrs}.items()))
        return (f"{p.op_name(op)} @{target}({p.v(x)}) {{{body}}} : ({x.type}) -> "
                f"{op.result.type}")
    return ir.Operation("stablehlo.custom_call", [x], [result_type], asm).result


# --8<-- [start:constraint]
def wrap_with_sharding_op(x: ir.Value, sharding: Sharding, ndim: int) -> ir.Value:
    """A constraint on one value inside the program: the partitioner must give it this
    sharding (JAX: mlir.wrap_with_sharding_op)."""
    if use_shardy_partitioner.value:
        text = sharding._to_sdy_sharding(ndim, mesh_symbol(sharding.mesh))

        def asm(p, op):
            return f"{p.op_name(op)} {p.v(x)} {text} : {x.type}"
        return ir.Operation("sdy.sharding_constraint", [x], [x.type], asm).result
    return custom_call("Sharding", x, x.type,
                       {"mhlo.sharding": f'"{sharding._to_xla_hlo_sharding(ndim)}"'})
# --8<-- [end:constraint]


# --8<-- [start:annotate]
def annotate_main(module: ir.Module, arg_shardings: Sequence[tuple[Sharding | None, int]],
                  result_shardings: Sequence[tuple[Sharding | None, int]],
                  num_partitions: int) -> None:
    """Write each kept argument's and each result's sharding (None: the compiler chooses) on
    @main, and the partition count on the module."""
    # EXERCISE 11.3 (annotate): the partition count, then one attribute per sharding given
    module.attributes["mhlo.num_partitions"] = f"{num_partitions} : i32"
    main = module.functions[0]
    for attrs, (sharding, ndim) in [*zip(main.arg_attrs, arg_shardings, strict=True),
                                    *zip(main.result_attrs, result_shardings, strict=True)]:
        if sharding is not None:
            name, value = sharding_attr(sharding, ndim)
            attrs[name] = value
    # END EXERCISE
# --8<-- [end:annotate]


def module_text(module: ir.Module, meshes: Sequence[Mesh]) -> str:
    """The module's text with one `sdy.mesh` per mesh, before the functions (Shardy only)."""
    text = module.as_text()
    if not meshes or not use_shardy_partitioner.value:
        return text
    first, rest = text.split("\n", 1)
    ops = [f"  {sdy_mesh_op(m, 'mesh' if k == 0 else f'mesh_{k}')}"
           for k, m in enumerate(meshes)]
    return "\n".join([first, *ops, rest])
