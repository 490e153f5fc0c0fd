"""The composition matrix: every base function under every stack of transformations, ours vs JAX.

Each base function is written once against a namespace `ns` (ours: stages 2, 4, 5 and 6; theirs:
jax) and each transform stack is written once against the same namespace, so a cell is
`STACKS[s](ns, FUNCTIONS[f](ns), INPUTS)` run twice. A cell passes when both give the same
values (shape, dtype and numbers within float32 tolerances), or when both refuse with the same
error class and message (JAX refuses reverse mode through while_loop and forward mode through
custom_vjp). Bugs of composition live here: each rule is tested alone in its stage, but a stack
of three transformations runs rules on tracers of other transformations.

jit (stage 7) is one more transformation here: stacked on the others, under them, and inside.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, NamedTuple

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s04_autodiff as s04
import stages.s05_vmap as s05
import stages.s06_control_flow as s06
import stages.s07_caches as s07
from shared.testing import RTOL_REDUCTION
from stages.s04_autodiff import ad_checkpoint as s04_policies
from stages.s04_autodiff.ad_util import SymbolicZero

OURS = SimpleNamespace(
    name="ours", lax=s02.lax, cf=s06, jnp=s02.numpy, make_jaxpr=s02.make_jaxpr,
    eval_jaxpr=s02.eval_jaxpr, grad=s04.grad, jvp=s04.jvp, vjp=s04.vjp, linearize=s04.linearize,
    custom_jvp=s04.custom_jvp, custom_vjp=s04.custom_vjp, checkpoint=s04.checkpoint,
    policies=s04_policies, vmap=s05.vmap, jacfwd=s05.jacfwd, jacrev=s05.jacrev,
    hessian=s05.hessian, jit=s07.jit, par=s05, symbolic_zero=SymbolicZero)
THEIRS = SimpleNamespace(
    name="jax", lax=jax.lax, cf=jax.lax, jnp=jjnp, make_jaxpr=jax.make_jaxpr,
    eval_jaxpr=jax.core.eval_jaxpr, grad=jax.grad, jvp=jax.jvp, vjp=jax.vjp,
    linearize=jax.linearize, custom_jvp=jax.custom_jvp, custom_vjp=jax.custom_vjp,
    checkpoint=jax.checkpoint, policies=jax.checkpoint_policies, vmap=jax.vmap,
    jacfwd=jax.jacfwd, jacrev=jax.jacrev, hessian=jax.hessian, jit=jax.jit, par=jax.lax,
    symbolic_zero=jax.custom_derivatives.SymbolicZero)

# Every cell holds dots, sums or loops, so the reduction tolerance applies throughout. atol: the
# values are O(1) (inputs in [-1, 1], |M| < 1), so after the few dozen float32 roundings of a
# second-order stack an entry that cancels to ~0 carries an absolute error of ~1e-6, where rtol
# is meaningless; 1e-5 is ten times that and still far below any real wrong derivative.
ATOL = 1e-5

F32 = np.float32
_rng = np.random.default_rng(0)
M = (_rng.uniform(-0.5, 0.5, (3, 3))).astype(F32)  # a closed-over weight matrix


class Inputs(NamedTuple):
    """What the stacks feed the base functions."""

    w: np.ndarray  # "parameters": what the derivatives are taken in
    x: np.ndarray  # one example
    xs: np.ndarray  # a batch of examples, mixed signs so cond and switch take every branch
    ws: np.ndarray  # a batch of parameters
    tw: np.ndarray  # a tangent for w
    tx: np.ndarray  # a tangent for x
    ct: np.ndarray  # a cotangent for f's output


INPUTS = Inputs(
    w=_rng.uniform(-1.0, 1.0, 3).astype(F32),
    x=np.array([0.3, -0.2, 0.6], F32),
    xs=np.array([[0.3, -0.2, 0.6], [-0.4, -0.5, 0.1], [0.9, 0.2, -0.3], [-0.1, 0.2, -0.6]], F32),
    ws=_rng.uniform(-1.0, 1.0, (2, 3)).astype(F32),
    tw=_rng.uniform(-1.0, 1.0, 3).astype(F32),
    tx=_rng.uniform(-1.0, 1.0, 3).astype(F32),
    ct=_rng.uniform(-1.0, 1.0, 3).astype(F32),
)

# ------------------------------------------------------------------ base functions f(w, x) -> (3,)
# Each builder takes the namespace and returns f(w, x) with a (3,)-vector output.


def mlp(ns):
    """Elementwise ops and a dot against a closed-over matrix."""
    def f(w, x):
        h = ns.jnp.tanh(ns.jnp.dot(M, w * x) + 0.1)
        return h * ns.jnp.sin(w) + ns.jnp.sum(h * h)
    return f


def cond(ns):
    """A branch chosen by the data: batched by vmap over x, so vmap turns it into a select."""
    def f(w, x):
        return ns.cf.cond(ns.jnp.sum(x) > 0.0,
                          lambda w, x: ns.jnp.sin(w * x) + ns.jnp.dot(M, w),
                          lambda w, x: ns.jnp.cos(w) * x,
                          w, x)
    return f


def scan(ns):
    """An RNN: the carry h runs over the entries of x; the stacked ys are summed into h."""
    def f(w, x):
        def step(h, xi):
            h = ns.jnp.tanh(ns.jnp.dot(M, h) * xi + w)
            return h, ns.jnp.sum(h)
        h, ys = ns.cf.scan(step, w * 0.5, x)
        return h + ns.jnp.sum(ys)
    return f


def fori(ns):
    """fori_loop with concrete bounds: a scan underneath, so reverse mode works."""
    def f(w, x):
        return ns.cf.fori_loop(0, 3, lambda i, h: ns.jnp.tanh(ns.jnp.dot(M, h) + w * x) + 0.1 * i,
                               w)
    return f


def while_(ns):
    """while_loop with a data-dependent exit: forward mode only (JAX refuses reverse mode)."""
    def f(w, x):
        def keep_going(c):
            return (c[0] < 4) & (ns.jnp.sum(c[1] * c[1]) < 3.0)

        def body(c):
            return c[0] + 1, ns.jnp.sin(c[1]) * w + x + 0.5
        return ns.cf.while_loop(keep_going, body, (0, w * x))[1]
    return f


def custom_jvp(ns):
    """A custom_jvp whose rule is deliberately not the true derivative (proves the rule is used)."""
    @ns.custom_jvp
    def g(w, x):
        return ns.jnp.sin(w) * x

    @g.defjvp
    def g_jvp(primals, tangents):
        (w, x), (tw, tx) = primals, tangents
        return g(w, x), 2.0 * ns.jnp.cos(w) * x * tw + ns.jnp.sin(w) * tx

    def f(w, x):
        return g(ns.jnp.tanh(w), x) + w
    return f


def custom_vjp(ns):
    """A custom_vjp whose bwd is deliberately not the true derivative (proves bwd is used)."""
    @ns.custom_vjp
    def g(w, x):
        return ns.jnp.sin(w) * x

    def g_fwd(w, x):
        return g(w, x), (ns.jnp.cos(w), w, x)

    def g_bwd(res, ct):
        cos_w, w, x = res
        return 3.0 * ct * cos_w * x, ct * ns.jnp.sin(w)

    g.defvjp(g_fwd, g_bwd)

    def f(w, x):
        return g(ns.jnp.tanh(w), x) + w
    return f


def switch(ns):
    """Three branches, the index computed from the data (vmap over x batches it)."""
    def f(w, x):
        def as_int(b):
            return ns.lax.convert_element_type(b, np.int32)
        index = as_int(ns.jnp.sum(x) > 0.0) + as_int(ns.jnp.sum(x * x) > 0.5)
        return ns.cf.switch(index, [lambda w, x: ns.jnp.sin(w) * x,
                                    lambda w, x: ns.jnp.dot(M, w) * x,
                                    lambda w, x: ns.jnp.tanh(w * x) + w], w, x)
    return f


def scan_cond(ns):
    """A reverse scan with a cond in its body on the scanned value: nested control flow."""
    def f(w, x):
        def step(h, xi):
            h = ns.cf.cond(xi > 0.0, lambda h: ns.jnp.sin(h) * w, lambda h: h * xi + w, h)
            return h, h * xi
        h, ys = ns.cf.scan(step, w, x, reverse=True)
        return h + ns.jnp.sum(ys, axis=0)
    return f


def scan_custom_vjp(ns):
    """grad∘scan∘custom_vjp: a custom_vjp called inside a scan body."""
    inner = custom_vjp(ns)

    def f(w, x):
        def step(h, xi):
            return inner(h, xi * x) * 0.5 + w, None
        h, _ = ns.cf.scan(step, w, x)
        return h
    return f


def checkpoint(ns):
    """checkpoint, policy dots_saveable: sin and tanh are recomputed in the backward pass."""
    def g(w, x):
        h = ns.jnp.sin(ns.jnp.dot(M, w * x))
        return ns.jnp.tanh(ns.jnp.dot(M, h) + w)

    def f(w, x):
        return ns.checkpoint(g, policy=ns.policies.dots_saveable)(w, x) * w
    return f


def checkpoint_scan(ns):
    """checkpoint(nothing_saveable) around a scan: the whole loop is recomputed for the backward."""
    def g(w, x):
        def step(h, xi):
            h = ns.jnp.tanh(ns.jnp.dot(M, h) + xi * w)
            return h, None
        return ns.cf.scan(step, w, x)[0]

    def f(w, x):
        return ns.checkpoint(g, policy=ns.policies.nothing_saveable)(w, x) * x
    return f


IDX = np.array([2, 0, 2, 1], np.int32)  # repeated rows: their cotangents add up


def gather_scatter(ns):
    """Rows of a table picked by an index array (a gather) and a scatter-add into zeros."""
    def f(w, x):
        table = ns.jnp.stack([w, x, w * x])
        y = ns.jnp.tanh(table[IDX]).sum(0)
        z = ns.jnp.zeros(3, F32).at[np.array([0, 2, 0])].add(x * w)
        return y + z * x
    return f


def collective(ns):
    """A vmap with a named axis inside: psum, pmean and all_gather over it."""
    def f(w, x):
        rows = ns.jnp.stack([w * x, w + x, ns.jnp.tanh(w) * x])

        def per_row(r):
            return r * ns.par.psum(r, "k") - ns.par.pmean(r * r, "k") + \
                ns.par.all_gather(r, "k")[0] * ns.par.axis_index("k")
        return ns.vmap(per_row, axis_name="k")(rows).sum(0)
    return f


def assoc_scan(ns):
    """Two parallel prefix scans: running sums, then running products of them."""
    def f(w, x):
        sums = ns.lax.associative_scan(ns.lax.add, ns.jnp.tanh(w * x))
        return ns.lax.associative_scan(ns.lax.mul, sums * 0.5 + 1.0, reverse=True) * x
    return f


def custom_jvp_symbolic_zeros(ns):
    """A custom_jvp rule with symbolic_zeros=True: it skips the term of a zero tangent (staged
    first under jit and eval_jaxpr, where the rule is traced per pattern of zeros)."""
    @ns.custom_jvp
    def g(w, x):
        return ns.jnp.sin(w) * x

    def g_jvp(primals, tangents):
        (w, x), (tw, tx) = primals, tangents
        t = ns.jnp.zeros_like(x)
        if not isinstance(tw, ns.symbolic_zero):
            t = t + 2.0 * ns.jnp.cos(w) * x * tw
        if not isinstance(tx, ns.symbolic_zero):
            t = t + ns.jnp.sin(w) * tx
        return g(w, x), t

    g.defjvp(g_jvp, symbolic_zeros=True)

    def f(w, x):
        return g(ns.jnp.tanh(w), x) + w
    return f


def custom_vjp_symbolic_zeros(ns):
    """A custom_vjp with symbolic_zeros=True: fwd keeps x only when w is perturbed; bwd answers
    None for x (deliberately not the true derivative) and for a zero cotangent."""
    @ns.custom_vjp
    def g(w, x):
        return ns.jnp.sin(w) * x

    def g_fwd(w, x):
        kept = x.value if w.perturbed else ns.jnp.zeros_like(x.value)
        return g(w.value, x.value), (ns.jnp.cos(w.value), kept)

    def g_bwd(res, ct):
        cos_w, x = res
        if isinstance(ct, ns.symbolic_zero):
            return None, None
        return 3.0 * ct * cos_w * x, None

    g.defvjp(g_fwd, g_bwd, symbolic_zeros=True)

    def f(w, x):
        return g(ns.jnp.tanh(w), x) + w * x
    return f


def sort_einsum(ns):
    """A descending sort, a gather by a descending argsort, and a three-operand einsum whose
    contraction order comes from opt_einsum."""
    def f(w, x):
        ranked = ns.jnp.take_along_axis(w, ns.jnp.argsort(x, descending=True), axis=0)
        return ns.jnp.sort(w * x, descending=True) * ranked + \
            ns.jnp.einsum("ij,j,i->i", M, ns.jnp.tanh(w), x)
    return f


FUNCTIONS: dict[str, Callable[[SimpleNamespace], Callable]] = {
    "mlp": mlp, "cond": cond, "scan": scan, "fori": fori, "while": while_,
    "switch": switch, "scan_cond": scan_cond, "custom_jvp": custom_jvp,
    "custom_vjp": custom_vjp, "scan_custom_vjp": scan_custom_vjp, "checkpoint": checkpoint,
    "checkpoint_scan": checkpoint_scan, "gather_scatter": gather_scatter,
    "collective": collective, "assoc_scan": assoc_scan,
    "custom_jvp_symbolic_zeros": custom_jvp_symbolic_zeros,
    "custom_vjp_symbolic_zeros": custom_vjp_symbolic_zeros, "sort_einsum": sort_einsum,
}

# ------------------------------------------------------------------ transform stacks


def _loss(ns, f):
    """The scalar the gradient stacks differentiate: a sum of squares of f's output."""
    def loss(w, x):
        y = f(w, x)
        return ns.jnp.sum(y * y)
    return loss


def _eval_closed(ns, closed, *args):
    return ns.eval_jaxpr(closed.jaxpr, closed.consts, *args)


STACKS: dict[str, Callable[[SimpleNamespace, Callable, Inputs], Any]] = {
    "jvp": lambda ns, f, d: ns.jvp(f, (d.w, d.x), (d.tw, d.tx)),
    "vjp": lambda ns, f, d: (lambda y, pb: (y, pb(d.ct)))(*ns.vjp(f, d.w, d.x)),
    "linearize": lambda ns, f, d: (lambda y, lin: (y, lin(d.tw)))(
        *ns.linearize(lambda w: f(w, d.x), d.w)),
    "grad": lambda ns, f, d: ns.grad(_loss(ns, f), argnums=(0, 1))(d.w, d.x),
    "vmap∘grad": lambda ns, f, d: ns.vmap(ns.grad(_loss(ns, f)), in_axes=(None, 0))(d.w, d.xs),
    "grad∘vmap+sum": lambda ns, f, d: ns.grad(
        lambda w: ns.jnp.sum(ns.vmap(_loss(ns, f), in_axes=(None, 0))(w, d.xs)))(d.w),
    "jvp∘grad": lambda ns, f, d: ns.jvp(
        lambda w: ns.grad(_loss(ns, f))(w, d.x), (d.w,), (d.tw,)),
    "grad∘grad": lambda ns, f, d: ns.grad(
        lambda w: ns.jnp.sum(ns.grad(_loss(ns, f))(w, d.x) * d.tw))(d.w),
    "vmap∘jvp": lambda ns, f, d: ns.vmap(
        lambda x: ns.jvp(lambda w: f(w, x), (d.w,), (d.tw,)))(d.xs),
    "jacfwd": lambda ns, f, d: ns.jacfwd(f, argnums=(0, 1))(d.w, d.x),
    "jacrev": lambda ns, f, d: ns.jacrev(f, argnums=(0, 1))(d.w, d.x),
    "hessian": lambda ns, f, d: ns.hessian(_loss(ns, f))(d.w, d.x),
    "vmap∘hessian": lambda ns, f, d: ns.vmap(ns.hessian(_loss(ns, f)), in_axes=(None, 0))(
        d.w, d.xs),
    "jacfwd∘vmap": lambda ns, f, d: ns.jacfwd(
        lambda w: ns.vmap(f, in_axes=(None, 0))(w, d.xs))(d.w),
    "vmap∘vmap": lambda ns, f, d: ns.vmap(
        ns.vmap(f, in_axes=(None, 0)), in_axes=(0, None))(d.ws, d.xs),
    "eval_jaxpr": lambda ns, f, d: _eval_closed(ns, ns.make_jaxpr(f)(d.w, d.x), d.w, d.x),
    "grad∘eval_jaxpr": lambda ns, f, d: ns.grad(
        lambda w: _eval_closed(ns, ns.make_jaxpr(_loss(ns, f))(d.w, d.x), w, d.x)[0])(d.w),
    "jit": lambda ns, f, d: ns.jit(f)(d.w, d.x),
    "grad∘jit": lambda ns, f, d: ns.grad(_loss(ns, ns.jit(f)), argnums=(0, 1))(d.w, d.x),
    "jit∘grad": lambda ns, f, d: ns.jit(ns.grad(_loss(ns, f), argnums=(0, 1)))(d.w, d.x),
    "vmap∘jit": lambda ns, f, d: ns.vmap(ns.jit(f), in_axes=(None, 0))(d.w, d.xs),
    "jit∘vmap": lambda ns, f, d: ns.jit(lambda w: ns.vmap(f, in_axes=(None, 0))(w, d.xs))(d.w),
}

# ------------------------------------------------------------------ the matrix

# Where JAX itself refuses: the cell asserts ours refuses with the same class and message.
REFUSED_BY_JAX = {
    ("while", stack) for stack in
    ("vjp", "grad", "vmap∘grad", "grad∘vmap+sum", "jvp∘grad", "grad∘grad", "jacrev", "hessian",
     "vmap∘hessian", "grad∘eval_jaxpr", "grad∘jit", "jit∘grad")
} | {
    (fname, stack) for fname in ("custom_vjp", "scan_custom_vjp", "custom_vjp_symbolic_zeros")
    for stack in
    ("jvp", "linearize", "vmap∘jvp", "jacfwd", "jvp∘grad", "hessian", "vmap∘hessian",
     "jacfwd∘vmap")
}

# Known bugs the matrix has found in ours, if any: strict, so a fix turns them red.
KNOWN_BUGS: dict[tuple[str, str], str] = {}


def _cells() -> list[Any]:
    cells = []
    for fname in FUNCTIONS:
        for sname in STACKS:
            if (fname, sname) in REFUSED_BY_JAX:
                continue
            marks = []
            if (fname, sname) in KNOWN_BUGS:
                marks.append(pytest.mark.xfail(strict=True,
                                               reason=f"bug: {KNOWN_BUGS[fname, sname]}"))
            cells.append(pytest.param(fname, sname, marks=marks, id=f"{fname}-{sname}"))
    return cells


def _run(ns: SimpleNamespace, fname: str, sname: str, inputs: Inputs = INPUTS) -> Any:
    return STACKS[sname](ns, FUNCTIONS[fname](ns), inputs)


def _run_jax_reference(fname: str, sname: str) -> Any:
    """JAX's values, computed with jit disabled: JAX then runs scan, fori_loop and while_loop (and
    a cond on a concrete predicate) as Python loops of cached eager ops instead of compiling one
    XLA program per control-flow equation, which halves the time of the file (~55 s to ~27 s). The
    numbers are the same function's; the refusal cells below run JAX unchanged."""
    with jax.disable_jit():
        return _run(THEIRS, fname, sname)


def _assert_same_values(ours: Any, theirs: Any) -> None:
    ours_leaves, ours_tree = jax.tree_util.tree_flatten(ours)
    theirs_leaves, theirs_tree = jax.tree_util.tree_flatten(theirs)
    assert ours_tree == theirs_tree
    for o, t in zip(ours_leaves, theirs_leaves, strict=True):
        o, t = np.asarray(o), np.asarray(t)
        assert (o.shape, o.dtype) == (t.shape, t.dtype)
        np.testing.assert_allclose(o, t, rtol=RTOL_REDUCTION, atol=ATOL)


@pytest.mark.oracle
@pytest.mark.parametrize(("fname", "sname"), _cells())
def test_stack_of_transformations_matches_jax(fname: str, sname: str) -> None:
    _assert_same_values(_run(OURS, fname, sname), _run_jax_reference(fname, sname))


@pytest.mark.oracle
@pytest.mark.parametrize(("fname", "sname"), sorted(REFUSED_BY_JAX))
def test_both_refuse_the_same_combination(fname: str, sname: str) -> None:
    with pytest.raises(Exception) as theirs:
        _run(THEIRS, fname, sname)
    with pytest.raises(theirs.type) as ours:
        _run(OURS, fname, sname)
    assert str(ours.value) == str(theirs.value)


def test_the_refusal_list_names_real_cells() -> None:
    assert {f for f, _ in REFUSED_BY_JAX | KNOWN_BUGS.keys()} <= FUNCTIONS.keys()
    assert {s for _, s in REFUSED_BY_JAX | KNOWN_BUGS.keys()} <= STACKS.keys()
