"""The corpora of stages 2 and 6 under jit, and jit composed with grad, vmap and control flow,
give JAX's values (shapes, dtypes, numbers within float32 tolerance)."""

from __future__ import annotations

from types import SimpleNamespace

import jax
import jax.numpy as jjnp
import jax.tree_util as jtu
import numpy as np
import pytest

import stages.s02_tracing as s02
import stages.s05_vmap as s05
import stages.s07_caches as s07
from shared.corpus_s02 import CASES as CORPUS_S02
from shared.testing import RTOL_REDUCTION
from stages.s01_pytrees import tree_flatten

pytestmark = pytest.mark.oracle


def assert_close(got, want, rtol=RTOL_REDUCTION, atol=1e-5):
    got_leaves, got_tree = tree_flatten(got)
    want_leaves, want_tree = jtu.tree_flatten(want)
    assert got_tree.num_leaves == want_tree.num_leaves
    for a, b in zip(got_leaves, want_leaves, strict=True):
        assert np.shape(a) == np.shape(b)
        assert np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


@pytest.mark.parametrize("case", CORPUS_S02, ids=lambda c: c.name)
def test_stage_2_corpus_under_jit(case):
    got = s07.jit(case.bind(s02.lax, s02.numpy), static_argnums=case.static_argnums)(*case.args)
    want = jax.jit(case.bind(jax.lax, jjnp), static_argnums=case.static_argnums)(*case.args)
    assert_close(got, want)


@pytest.mark.parametrize("order", ["vmap(jit)", "jit(vmap)"])
@pytest.mark.parametrize("case", CORPUS_S02, ids=lambda c: c.name)
def test_stage_2_corpus_batched_under_jit(case, order):
    """Stage 5's corpus (the stage-2 cases under vmap along axis 0), with a jit inside or out.
    JAX's values are computed with jit disabled: the same function's numbers, without an XLA
    compile per case."""
    from tests.s05_vmap.conftest import stack_along
    from tests.s05_vmap.test_corpus import _batched_args, _dynamic, _function

    def run(vmap, jit, lib):
        g = _function(case, lib)
        if order == "vmap(jit)":
            return vmap(jit(g))(*_batched_args(case, 0, stack_along))
        return jit(vmap(g))(*_batched_args(case, 0, stack_along))

    ours_lib = SimpleNamespace(lax=s02.lax, jnp=s02.numpy)
    got = run(s05.vmap, s07.jit, ours_lib)
    with jax.disable_jit():
        want = run(jax.vmap, jax.jit, SimpleNamespace(lax=jax.lax, jnp=jjnp))
    assert_close(got, want)
    assert _dynamic(case)  # every case has an argument to map


def _s06_corpus():
    from tests.s06_control_flow.conftest import CASES, OURS, THEIRS  # one corpus, two stages

    return CASES, OURS, THEIRS


@pytest.mark.parametrize("case", _s06_corpus()[0], ids=lambda c: c.name)
def test_stage_6_corpus_under_jit_and_its_gradient(case):
    _, ours, theirs = _s06_corpus()
    assert_close(s07.jit(case.build(ours))(*case.args), jax.jit(case.build(theirs))(*case.args))
    if case.grad:
        def loss(ns, fn):
            return lambda *a: sum(ns.jnp.sum(leaf) for leaf in ns.tree_leaves(fn(*a)))
        got = s07.jit(ours.grad(loss(ours, s07.jit(case.build(ours)))))(*case.args)
        want = jax.jit(theirs.grad(loss(theirs, jax.jit(case.build(theirs)))))(*case.args)
        assert_close(got, want)


def mlp(ns):
    w = np.arange(12, dtype=np.float32).reshape(3, 4) / 10.0

    def f(x, b):
        return ns.jnp.tanh(ns.jnp.dot(x, w) + b)
    return f


X = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
B = np.linspace(0, 1, 4, dtype=np.float32)

STACKS = {
    "grad(jit)": lambda ns, jit: ns.grad(lambda x, b: jit(mlp(ns))(x, b).sum(), (0, 1))(X, B),
    "jit(grad)": lambda ns, jit: jit(ns.grad(lambda x, b: mlp(ns)(x, b).sum(), (0, 1)))(X, B),
    "vmap(jit)": lambda ns, jit: ns.vmap(jit(mlp(ns)), in_axes=(0, None))(X, B),
    "jit(vmap)": lambda ns, jit: jit(ns.vmap(mlp(ns), in_axes=(0, None)))(X, B),
    "vmap(grad(jit))": lambda ns, jit: ns.vmap(
        ns.grad(lambda x, b: jit(mlp(ns))(x, b).sum()), in_axes=(0, None))(X, B),
    "jvp(jit)": lambda ns, jit: ns.jvp(jit(mlp(ns)), (X, B), (X, B)),
    "vjp(jit)": lambda ns, jit: ns.vjp(jit(mlp(ns)), X, B)[1](np.ones((2, 4), np.float32)),
    "jit(jit)": lambda ns, jit: jit(jit(mlp(ns)))(X, B),
    "grad(jit closing over a tracer)": lambda ns, jit: ns.grad(lambda b: ns.jnp.sum(
        jit(lambda x: ns.jnp.tanh(ns.jnp.sum(x) * b))(X)))(B),
    "vmap(jit closing over a tracer)": lambda ns, jit: ns.vmap(
        lambda x: jit(lambda b: ns.jnp.sin(b) * x.sum())(B))(X),
    "scan(jit)": lambda ns, jit: ns.cf.scan(
        lambda c, x: (jit(mlp(ns))(x, c), c.sum()), B, X),
    "grad(scan(jit))": lambda ns, jit: ns.grad(lambda b: ns.cf.scan(
        lambda c, x: (jit(mlp(ns))(x, c), c.sum()), b, X)[0].sum())(B),
    "cond(jit)": lambda ns, jit: ns.cf.cond(
        X.sum() > 0, jit(mlp(ns)), lambda x, b: ns.jnp.tanh(x.sum() + b), X[0], B),
    "jit(cond(jit))": lambda ns, jit: jit(lambda x: ns.cf.cond(
        x.sum() > 0, jit(mlp(ns)), lambda x, b: ns.jnp.sin(x.sum() * b), x, B))(X[1]),
    "while(jit)": lambda ns, jit: ns.cf.while_loop(
        lambda c: c.sum() < 20.0, lambda c: jit(lambda c: c * 2.0 + 1.0)(c), B),
}


@pytest.mark.parametrize("name", list(STACKS))
def test_jit_composed_with_transformations_equals_jax(name, ours, theirs):
    assert_close(STACKS[name](ours, s07.jit), STACKS[name](theirs, jax.jit))


@pytest.mark.parametrize("policy", ["nothing_saveable", "dots_saveable", "everything_saveable"])
def test_grad_of_a_checkpoint_around_a_jit_splits_the_jit_by_the_policy(policy, ours, theirs,
                                                                        monkeypatch):
    """remat's partial eval splits the inner jit equation by equation (its
    partial_eval_jaxpr_custom rule) and prunes it (its DCE rule)."""
    import stages.s04_autodiff as s04
    from stages.s03_partial_eval import partial_eval as pe

    used = []
    for table in (pe.partial_eval_jaxpr_custom_rules, pe.dce_rules):
        rule = table[s07.jit_p]
        monkeypatch.setitem(table, s07.jit_p, lambda *a, _rule=rule, **k: (
            used.append(_rule.__name__), _rule(*a, **k))[1])

    def run(ns, checkpoint, policies):
        def f(x):
            inner = ns.jit(lambda y: ns.jnp.sin(ns.jnp.dot(y, y)) * y)
            return inner(ns.jnp.cos(x)) * x
        g = checkpoint(f, policy=getattr(policies, policy))
        return ns.grad(lambda x: ns.jnp.sum(g(x)))(X[0])

    assert_close(run(ours, s04.checkpoint, s04.ad_checkpoint),
                 run(theirs, jax.checkpoint, jax.checkpoint_policies))
    assert {"_pjit_partial_eval_custom", "_pjit_dce_rule"} <= set(used)
