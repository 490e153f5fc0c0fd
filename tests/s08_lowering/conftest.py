"""Stage 8's test helpers: the programs every test lowers, ours and JAX's side by side.

A `Program` is one function written twice, on our stages and on JAX, with its example
arguments. `CORPUS` is the stage 2, 3 and 6 corpora (what the fidelity test counts);
`COMPOSITIONS` adds grad, vmap, jvp, custom rules and checkpoint over them; `RULE_PROGRAMS`
are single primitives on the values their rules single out. `lower_ours` traces with stage 2
and lowers with stage 8; `run_ours` compiles and runs that text with jaxlib
(shared/xla_runner.py), which is the oracle for what the text computes.
"""

from __future__ import annotations

import collections
import functools
import importlib.util
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jjnp
import numpy as np

import shared.corpus_s03 as c3
import stages.s02_tracing as s02
import stages.s04_autodiff as s04
import stages.s05_vmap as s05
import stages.s08_lowering as s08
from shared.corpus_s02 import CASES as CASES_S02
from shared.xla_runner import run_text
from stages.s02_tracing import partial_eval as pe


def _stage6_module() -> Any:
    """tests/s06_control_flow/conftest.py, where the stage-6 corpus lives, by its path."""
    path = Path(__file__).resolve().parent.parent / "s06_control_flow" / "conftest.py"
    if "s06_corpus_for_s08" not in sys.modules:
        spec = importlib.util.spec_from_file_location("s06_corpus_for_s08", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return sys.modules["s06_corpus_for_s08"]


S06 = _stage6_module()


@dataclass(frozen=True, eq=False)  # hashed by identity: the lowering caches are per program
class Program:
    name: str
    ours: Callable[..., Any]
    theirs: Callable[..., Any]
    args: tuple[Any, ...]
    static_argnums: tuple[int, ...] = ()


def _named(f: Callable, name: str) -> Callable:
    f.__name__ = name
    return f


def _corpus() -> list[Program]:
    out = [Program(c.name, c.bind(s02.lax, s02.numpy), c.bind(jax.lax, jjnp), c.args,
                   c.static_argnums) for c in CASES_S02]
    w = (c3.W1, c3.W2, c3.X)
    out.append(Program("mlp", _named(lambda *a: c3.mlp(s02.lax, *a), "mlp"),
                       _named(lambda *a: c3.mlp(jax.lax, *a), "mlp"), w))
    out.append(Program("mlp_jvp", _named(lambda *a: c3.mlp_jvp(s02.lax, *a), "mlp_jvp"),
                       _named(lambda *a: c3.mlp_jvp(jax.lax, *a), "mlp_jvp"), (*w, c3.DX)))
    out += [Program(c.name, c.build(S06.OURS), c.build(S06.THEIRS), c.args) for c in S06.CASES]
    return out


def _custom_programs(ns: Any) -> dict[str, Callable]:
    """custom_jvp, custom_vjp and checkpoint, alone and under grad (their call primitives)."""
    @ns.custom_jvp
    def soft(x):
        return ns.jnp.log(1.0 + ns.jnp.exp(x))

    soft.defjvp(lambda p, t: (soft(p[0]), t[0] / (1.0 + ns.jnp.exp(-p[0]))))

    @ns.custom_vjp
    def clip_grad(x):
        return ns.jnp.sin(x) * 2.0

    clip_grad.defvjp(lambda x: (clip_grad(x), ns.jnp.cos(x)),
                     lambda c, g: (ns.jnp.minimum(2.0 * c * g, 1.0),))
    remat = ns.checkpoint(lambda x: ns.jnp.sin(ns.jnp.sin(x)) * x)
    loss = lambda x: ns.jnp.sum(soft(x) + clip_grad(x) + remat(x))
    return {"custom_rules": lambda x: (soft(x), clip_grad(x), remat(x)),
            "grad_custom_rules": ns.grad(loss),
            "jvp_checkpoint": lambda x, t: ns.jvp(remat, (x,), (t,))}


def _jvp(jvp: Callable, f: Callable) -> Callable:
    return lambda *args: jvp(f, args, args)  # the arguments as their own tangents


def _compositions() -> list[Program]:
    out = []
    for c in S06.CASES:
        batched = tuple(np.stack([a, a * 1.5 + 0.25, a * 0.5 - 0.1]) for a in c.args)
        out.append(Program(f"vmap_{c.name}", s05.vmap(c.build(S06.OURS)),
                           jax.vmap(c.build(S06.THEIRS)), batched))
        if c.name != "while_pytree":  # its int counter's tangent is a float0: not an output
            out.append(Program(f"jvp_{c.name}", _jvp(s04.jvp, c.build(S06.OURS)),
                               _jvp(jax.jvp, c.build(S06.THEIRS)), c.args))
        if c.grad:
            argnums = tuple(range(len(c.args)))
            ours = S06.scalarize(S06.OURS, c.build(S06.OURS))
            theirs = S06.scalarize(S06.THEIRS, c.build(S06.THEIRS))
            out.append(Program(f"grad_{c.name}", s04.grad(ours, argnums),
                               jax.grad(theirs, argnums), c.args))
            per_example = tuple(np.stack([a, a * -1.5 + 0.25]) for a in c.args)
            out.append(Program(f"vmap_grad_{c.name}", s05.vmap(s04.grad(ours)),
                               jax.vmap(jax.grad(theirs)), per_example))
    mlp_ours = _named(lambda *a: c3.mlp(s02.lax, *a), "mlp")
    mlp_theirs = _named(lambda *a: c3.mlp(jax.lax, *a), "mlp")
    w = (c3.W1, c3.W2, c3.X)
    out.append(Program("grad_mlp", s04.grad(mlp_ours, (0, 1)), jax.grad(mlp_theirs, (0, 1)), w))
    out.append(Program("hessian_mlp_x", s05.hessian(mlp_ours, 2), jax.hessian(mlp_theirs, 2), w))
    ours_ns = S06.OURS.__class__(**vars(S06.OURS), custom_jvp=s04.custom_jvp,
                                 custom_vjp=s04.custom_vjp, checkpoint=s04.checkpoint)
    theirs_ns = S06.THEIRS.__class__(**vars(S06.THEIRS), custom_jvp=jax.custom_jvp,
                                     custom_vjp=jax.custom_vjp, checkpoint=jax.checkpoint)
    x = np.linspace(-1.5, 1.5, 4, dtype=np.float32)
    ours_fns, theirs_fns = _custom_programs(ours_ns), _custom_programs(theirs_ns)
    for name in ours_fns:
        args = (x, x * 0.5) if name.startswith("jvp") else (x,)
        out.append(Program(name, ours_fns[name], theirs_fns[name], args))
    return out


def _rule_programs() -> list[Program]:
    """One primitive each, on the values where its rule has cases: complex comparisons, sorts
    of -0.0, NaN and -NaN (of every key kind, several keys), the running reductions."""
    f32 = np.array([3.0, np.nan, -0.0, 0.0, -np.nan, -np.inf, 1.0, np.inf, -0.0], np.float32)
    c64 = np.array([1 + 2j, 1 - 1j, complex(np.nan, 0), complex(-0.0, -0.0), 0j, 1 + 2j],
                   np.complex64)
    ints = np.array([1, 0, 1, 0], np.int32)
    inf = np.array([-np.inf, -np.inf, np.inf, np.inf, 1.0, np.nan, 2.0], np.float32)
    cases: dict[str, tuple[Callable, tuple[Any, ...]]] = {
        "eq_ne_complex": (lambda lax: lambda a: (a == a, a != 1j), (c64,)),
        "eq_complex_scalar": (lambda lax: lambda a: a == a, (np.complex64(1j),)),
        "sort_f32": (lambda lax: lambda a: lax.sort(a), (f32,)),
        "sort_f16": (lambda lax: lambda a: lax.sort(a), (f32.astype(np.float16),)),
        "sort_c64": (lambda lax: lambda a: lax.sort(a), (c64,)),
        "sort_i32_unstable": (lambda lax: lambda a: lax.sort(a, is_stable=False),
                              (np.array([5, -3, 0, 7, -3], np.int32),)),
        "sort_bool_2d": (lambda lax: lambda a: lax.sort(a, dimension=0),
                         (np.array([[True, False], [False, True]]),)),
        "sort_u8": (lambda lax: lambda a: lax.sort(a), (np.array([3, 1, 255, 0], np.uint8),)),
        "sort_f32_with_i32": (lambda lax: lambda a, b: lax.sort((a, b), num_keys=1),
                              (f32, np.arange(9, dtype=np.int32))),
        "sort_two_keys_i32_f32": (lambda lax: lambda a, b: lax.sort((a, b), num_keys=2),
                                  (ints, np.array([np.nan, 2.0, -0.0, 0.0], np.float32))),
        "sort_three_ops_two_keys": (
            lambda lax: lambda a, b, c: lax.sort((a, b, c), num_keys=2),
            (f32[:4], np.array([True, False, False, True]), np.arange(4, dtype=np.uint8))),
        "cumsum_f32": (lambda lax: lambda a: lax.cumsum(a), (inf,)),
        "cumprod_f32": (lambda lax: lambda a: lax.cumprod(a, reverse=True), (inf,)),
        "cummax_f32": (lambda lax: lambda a: lax.cummax(a), (inf,)),
        "cummin_i32_2d": (lambda lax: lambda a: lax.cummin(a, axis=1, reverse=True),
                          (np.array([[3, 1, 2], [0, 5, -4]], np.int32),)),
        "cummax_c64": (lambda lax: lambda a: lax.cummax(a), (c64,)),
        "cumlogsumexp_inf": (lambda lax: lambda a: lax.cumlogsumexp(a), (inf,)),
        "cumlogsumexp_f16_2d": (lambda lax: lambda a: lax.cumlogsumexp(a, axis=1, reverse=True),
                                (inf[:6].reshape(2, 3).astype(np.float16),)),
    }
    return [Program(name, _named(build(s02.lax), name), _named(build(jax.lax), name), args)
            for name, (build, args) in cases.items()]


CORPUS = _corpus()
COMPOSITIONS = _compositions()
RULE_PROGRAMS = _rule_programs()


def lower_with_args(closed: Any, flat_args: list[Any], name: str = "fun", out_tree: Any = None
                    ) -> tuple[str, list[np.ndarray]]:
    """Our module's text, and the arguments its @main takes (unused ones are dropped)."""
    text = s08.lower_jaxpr(closed, name, out_tree=out_tree).as_text()
    _, _, used = s08.module.dce_jaxpr_consts(closed.jaxpr)
    kept = [np.asarray(x, v.aval.dtype) for x, v, u in zip(flat_args, closed.jaxpr.invars, used,
                                                            strict=True) if u]
    return text, kept


@functools.cache
def _lowered(program: Program) -> tuple[str, list[Any]]:
    closed, flat, out_tree = pe.trace_to_jaxpr(program.ours, program.args, {}, None,
                                               program.static_argnums)
    return lower_with_args(closed, flat, getattr(program.theirs, "__name__", "fun"), out_tree)


def lower_ours(program: Program) -> str:
    """Our module for the program, as text."""
    return _lowered(program)[0]


def run_ours(program: Program) -> list[np.ndarray]:
    """Compile our module with jaxlib and run it on the program's (kept) arguments."""
    text, kept = _lowered(program)
    return run_text(text, kept)


@functools.cache
def jax_text(program: Program) -> str:
    return jax.jit(program.theirs, static_argnums=program.static_argnums).lower(
        *program.args).as_text()


def jax_values(program: Program) -> list[np.ndarray]:
    out = jax.jit(program.theirs, static_argnums=program.static_argnums)(*program.args)
    return [np.asarray(x) for x in jax.tree.leaves(out)]


def assert_jaxpr_text_and_values_are_jaxs(program: Program, **tolerance: float) -> None:
    """Our jaxpr prints as JAX's, our module's text is jax.jit's, and it computes JAX's values:
    bit for bit unless a tolerance (assert_allclose's rtol/atol) is given."""
    assert str(s02.make_jaxpr(program.ours)(*program.args)) == \
        str(jax.make_jaxpr(program.theirs)(*program.args))
    assert lower_ours(program) == jax_text(program)
    for o, t in zip(run_ours(program), jax_values(program), strict=True):
        if tolerance:
            np.testing.assert_allclose(o, t, **tolerance)
        else:
            np.testing.assert_array_equal(o, t)


def op_names(text: str) -> collections.Counter:
    """The multiset of operation names in a module's text (`call` counts as `func.call`)."""
    found = collections.Counter()
    for line in text.splitlines():
        m = _OP.match(line)
        if m and not line.lstrip().startswith(("module", "func.func")):
            name = m.group(1)
            found[name if "." in name else f"func.{name}"] += 1
    return found


_OP = re.compile(r'^\s*(?:%[\w#:]+(?:, %[\w#:]+)* = )?"?([a-z_]+\.[a-z_]+|call|return)\b')
