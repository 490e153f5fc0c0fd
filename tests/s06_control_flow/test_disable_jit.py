"""Under disable_jit, control flow runs as plain Python, as JAX's does: only the branch taken
runs, a branch or a carry may be anything, and a value only known when a program runs (a vmap
tracer) keeps the primitive. Every case is run on both sides and compared by its repr."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import stages.s07_caches as s07
from stages.s04_autodiff import grad
from stages.s05_vmap import vmap
from stages.s06_control_flow import cond, fori_loop, scan, switch, while_loop

f32 = np.float32
XS = np.arange(3, dtype=f32)


def _ours():
    return {"cond": cond, "switch": switch, "scan": scan, "while_loop": while_loop,
            "fori_loop": fori_loop, "vmap": vmap, "grad": grad}


def _jax():
    lax = jax.lax
    return {"cond": lax.cond, "switch": lax.switch, "scan": lax.scan,
            "while_loop": lax.while_loop, "fori_loop": lax.fori_loop, "vmap": jax.vmap,
            "grad": jax.grad}


def _branch_log(c):
    seen = []
    out = c["cond"](True, lambda: seen.append("true") or 1.0, lambda: seen.append("false") or 2)
    return out, seen


CASES = {
    "cond runs the branch taken only": _branch_log,
    "cond branches of other types": lambda c: c["cond"](0, lambda: 1.0, lambda: "no"),
    "switch picks a branch, clamped": lambda c: c["switch"](7, [lambda: 1.0, lambda: "last"]),
    "scan loops in Python": lambda c: c["scan"](lambda a, x: (a + x, a * x), f32(1), XS),
    "scan in reverse": lambda c: c["scan"](lambda a, x: (a + x, {"y": a * x}), f32(1), XS,
                                           reverse=True),
    "scan's carry may change type": lambda c: c["scan"](
        lambda a, x: (a.astype(np.int32), x), f32(0), XS),
    "scan of no steps is refused": lambda c: c["scan"](lambda a, x: (a, x), f32(0),
                                                       np.zeros(0, f32)),
    "while_loop keeps a weak carry weak": lambda c: c["while_loop"](lambda v: v < 3,
                                                                    lambda v: v + 1.5, 0),
    "fori_loop returns Python's value": lambda c: c["fori_loop"](0, 3, lambda i, v: v + i, 5),
    "fori_loop of no steps": lambda c: c["fori_loop"](3, 3, lambda i, v: v + i, 5),
    "a vmapped while_loop keeps the primitive": lambda c: c["vmap"](
        lambda n: c["while_loop"](lambda v: v < n, lambda v: v + 1, 0))(np.arange(3)),
    "a vmapped cond keeps the primitive": lambda c: c["vmap"](
        lambda p: c["cond"](p > 0, lambda: 1.0, lambda: 2.0))(np.arange(-1, 2)),
    "grad through a Python scan": lambda c: c["grad"](
        lambda w: c["scan"](lambda a, x: (a * w + x, a), f32(1), XS)[0])(f32(0.5)),
}


def _run(call, funs, disable_jit):
    try:
        with disable_jit():
            return repr(call(funs))
    except Exception as err:  # the refusals are compared too
        return f"{type(err).__name__}: {err}"


@pytest.mark.parametrize("case", sorted(CASES))
def test_control_flow_under_disable_jit_runs_as_jaxs_does(case):
    ours = _run(CASES[case], _ours(), s07.disable_jit)
    theirs = _run(CASES[case], _jax(), jax.disable_jit)
    assert ours == theirs


def test_outside_disable_jit_both_branches_are_traced():
    seen = []
    cond(True, lambda: seen.append("true") or 1.0, lambda: seen.append("false") or 2.0)
    assert seen == ["true", "false"]
