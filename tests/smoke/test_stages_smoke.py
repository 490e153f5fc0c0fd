"""Smoke test: a few programs through every built stage's public API, values only.

The stage tests pin JAX 0.10.2's exact behaviour (printed jaxprs, error texts). This module asks
less, so that it holds on whatever JAX is installed: the same programs give the same numbers through
our stages and through `jax`. `make gpu-check` runs it first, on a machine whose environment (for
example jax/jaxlib 0.11.x and torch 2.11) differs from the course's pinned one.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from stages import s01_pytrees as s01
from stages import s02_tracing as s02
from stages import s03_partial_eval as s03
from stages import s04_autodiff as s04
from stages import s05_vmap as s05
from stages import s06_control_flow as s06
from stages import s07_caches as s07

onp = s02.numpy
X = np.array([0.5, -1.25, 2.0], np.float32)
W = np.arange(12, dtype=np.float32).reshape(3, 4) / 10


def close(ours, theirs, rtol=1e-5):
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=rtol, atol=1e-6)


def test_pytrees_flatten_and_rebuild():
    tree = {"b": (1, [2, None]), "a": 3}
    leaves, treedef = s01.tree_flatten(tree)
    assert leaves == jax.tree_util.tree_leaves(tree) == [3, 1, 2]
    assert s01.tree_unflatten(treedef, [x * 10 for x in leaves]) == {"b": (10, [20, None]), "a": 30}


def _mlp(lib, w, x):
    return lib.sum(lib.tanh(x @ w) ** 2)


def test_tracing_make_jaxpr_then_eval_jaxpr():
    closed = s02.make_jaxpr(lambda w, x: _mlp(onp, w, x))(W, X)
    (out,) = s02.eval_jaxpr(closed.jaxpr, closed.consts, W, X)
    close(out, _mlp(jnp, W, X))


def test_partial_eval_splits_known_from_unknown():
    closed = s02.make_jaxpr(lambda a, b: onp.sin(a) * b)(X, X)
    known, unknown, out_unknowns, res_avals = s03.partial_eval_jaxpr_nounits(
        closed, [False, True], instantiate=False
    )
    assert out_unknowns == [True]
    residuals = s02.eval_jaxpr(known.jaxpr, known.consts, X)
    (out,) = s02.eval_jaxpr(unknown.jaxpr, unknown.consts, *residuals[-len(res_avals):], X)
    close(out, np.sin(X) * X)


@pytest.mark.parametrize("argnums", [0, 1])
def test_autodiff_grad(argnums):
    ours = s04.grad(lambda w, x: _mlp(onp, w, x), argnums=argnums)(W, X)
    close(ours, jax.grad(lambda w, x: _mlp(jnp, w, x), argnums=argnums)(W, X), rtol=1e-4)


def test_autodiff_jvp_and_vjp():
    f_ours, f_jax = (lambda x: onp.sin(x) * x), (lambda x: jnp.sin(x) * x)
    close(s04.jvp(f_ours, (X,), (X,))[1], jax.jvp(f_jax, (X,), (X,))[1])
    close(s04.vjp(f_ours, X)[1](X)[0], jax.vjp(f_jax, X)[1](X)[0])


def test_vmap_of_grad_gives_per_example_gradients():
    batch = np.stack([X, X * 2, -X])
    ours = s05.vmap(s04.grad(lambda w, x: _mlp(onp, w, x)), in_axes=(None, 0))(W, batch)
    theirs = jax.vmap(jax.grad(lambda w, x: _mlp(jnp, w, x)), in_axes=(None, 0))(W, batch)
    close(ours, theirs, rtol=1e-4)
    close(s05.jacfwd(onp.sin)(X), jax.jacfwd(jnp.sin)(X))


def test_control_flow_scan_cond_while_and_their_gradients():
    def cumulative(lax_mod, lib, xs):
        return lax_mod.scan(lambda c, x: (c * 0.9 + lib.sin(x), c), 0.0, xs)

    ours_c, ours_ys = cumulative(s06, onp, X)
    jax_c, jax_ys = cumulative(jax.lax, jnp, X)
    close(ours_c, jax_c)
    close(ours_ys, jax_ys)

    pick = lambda m, lib: (lambda x: m.cond(x.sum() > 0, lib.sin, lib.cos, x))
    close(pick(s06, onp)(X), pick(jax.lax, jnp)(X))
    close(s04.grad(lambda x: pick(s06, onp)(x).sum())(X),
          jax.grad(lambda x: pick(jax.lax, jnp)(x).sum())(X))

    halve = lambda m: m.while_loop(lambda c: c > 1.0, lambda c: c / 2.0, 37.0)
    close(halve(s06), halve(jax.lax))
    close(s04.grad(lambda x: cumulative(s06, onp, x)[0])(X),
          jax.grad(lambda x: cumulative(jax.lax, jnp, x)[0])(X))


def test_jit_a_small_function_and_grad_of_jit():
    def f(lib):
        return lambda w, x: _mlp(lib, w, x) + lib.sum(lib.sin(x) * 2.0)

    ours, theirs = s07.jit(f(onp)), jax.jit(f(jnp))
    close(ours(W, X), theirs(W, X), rtol=1e-4)
    close(ours(W * 2, X), theirs(W * 2, X), rtol=1e-4)  # the second call hits the caches
    for argnums in (0, 1):
        close(s04.grad(ours, argnums=argnums)(W, X), jax.grad(theirs, argnums=argnums)(W, X),
              rtol=1e-4)
    close(s05.vmap(s07.jit(onp.sin))(np.stack([X, -X])), jax.vmap(jax.jit(jnp.sin))(
        np.stack([X, -X])))


def test_pjrt_client_runs_jit_a_gradient_and_a_training_step_on_the_installed_jaxlib():
    # stage 9 is the one stage that calls jaxlib itself: this is where a new jaxlib would break
    import stages.s09_pjrt as s09

    with s09.use_pjrt():
        out = s07.jit(s04.grad(lambda w, x: _mlp(onp, w, x), argnums=(0, 1)))(W, X)
        for a, e in zip(out, jax.grad(lambda w, x: _mlp(jnp, w, x), argnums=(0, 1))(W, X),
                        strict=True):
            assert type(a) is s09.ArrayImpl
            close(a, e, rtol=1e-4)
        x = s09.device_put(X)
        close(s07.jit(lambda v: s06.scan(lambda c, y: (c + y, c * y), 0.0, v))(x)[1],
              jax.lax.scan(lambda c, y: (c + y, c * y), 0.0, X)[1])
        assert np.asarray(x).tolist() == X.tolist() and (x * 2.0).tolist() == (X * 2).tolist()


def test_lazy_tensors_train_a_small_mlp_to_eager_torchs_loss():
    # stage 10 is the one stage that uses torch: this is where a new torch would break
    import torch

    import stages.s10_lazy_tensors as s10
    from shared import torch_models

    data = torch_models.batches("mlp", 3)
    _, expected = torch_models.train(torch_models.mlp(), data)
    model, loss = torch_models.train(torch_models.mlp(), data, s10.device(), sync=s10.sync)
    close(float(loss.detach().cpu()), float(expected.detach()), rtol=1e-5)
    assert torch.allclose(next(model.parameters()).detach().cpu(),
                          next(torch_models.train(torch_models.mlp(), data)[0].parameters()),
                          rtol=1e-4, atol=1e-6)


def test_spmd_runs_a_sharded_jit_and_a_shard_map_with_psum_on_four_cpu_devices():
    # stage 11 compiles for several partitions through jaxlib (Shardy annotations, the output
    # shardings read back): a new jaxlib could change any of these
    import stages.s09_pjrt as s09
    import stages.s11_spmd as s11
    from stages.s05_vmap.parallel import psum
    from stages.s09_pjrt import runtime

    previous = runtime.set_computation_client(s11.cpu_client(4))
    try:
        with s09.use_pjrt():
            # Auto axes: on Explicit ones shard_map refuses a numpy argument split by its spec
            mesh = s11.make_mesh((2, 2), ("data", "model"), (s11.AxisType.Auto,) * 2)
            x = np.arange(32, dtype=np.float32).reshape(8, 4) / 10
            w = np.arange(24, dtype=np.float32).reshape(4, 6) / 10
            f = s11.jit(lambda a, b: onp.tanh(onp.dot(a, b)),
                        in_shardings=(s11.NamedSharding(mesh, s11.P("data")),
                                      s11.NamedSharding(mesh, s11.P(None, "model"))))
            close(f(x, w), np.tanh(x @ w), rtol=1e-4)
            total = s11.shard_map(lambda a: psum(onp.sum(a), ("data", "model")), mesh=mesh,
                                  in_specs=s11.P("data", "model"), out_specs=s11.P())
            close(total(x), x.sum(), rtol=1e-5)
    finally:
        runtime.set_computation_client(previous)
