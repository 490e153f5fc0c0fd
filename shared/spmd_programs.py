"""SPMD programs written once against an API namespace, run on our stage 11 and on JAX.

`api` has: jit, P, NamedSharding, make_mesh(shape, names), with_sharding_constraint,
device_put, np (a numpy module), value_and_grad, grad, tree_map, shard_map, collectives (a
module with psum, pmax, axis_index, all_gather, psum_scatter, ppermute), use_shardy(flag) (a
context manager), sharding_text(shape, sharding), and for Explicit axes explicit_mesh(shape,
names) (make_mesh's default axis types), set_mesh, reshard, typeof; `make_mesh` gives Auto
axes. `run_all(api, n)` runs every program on `n` devices and returns, per program, the
lowered texts (Shardy and GSPMD) and the values as nested lists: the tests compare ours with
what tests/s11_spmd/jax_oracle.py gets from JAX in a process of its own.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from shared import mlp

SIZES = (16, 32, 32, 8)


def _texts(api: Any, jitted: Any, *args: Any) -> dict[str, str]:
    out = {}
    for name, flag in (("shardy", True), ("gspmd", False)):
        with api.use_shardy(flag):
            out[name] = jitted.lower(*args).as_text()
    return out


def sharded_matmul(api: Any, n: int) -> dict[str, Any]:
    """x split by rows over "data", w by columns over "model", a constraint in between."""
    mesh = api.make_mesh((n // 2, 2), ("data", "model"))
    P, NS = api.P, api.NamedSharding

    def f(x, w):
        y = api.np.dot(x, w)
        y = api.with_sharding_constraint(y, NS(mesh, P("data", "model")))
        return api.np.tanh(y)

    x = np.linspace(-1, 1, 8 * n * 6, dtype=np.float32).reshape(4 * n, 12)
    w = np.linspace(-2, 2, 12 * 8, dtype=np.float32).reshape(12, 8)
    jitted = api.jit(f, in_shardings=(NS(mesh, P("data", None)), NS(mesh, P(None, "model"))),
                     out_shardings=NS(mesh, P(None, "model")))
    out = jitted(x, w)
    shards = [[s.device.id, [[i.start, i.stop] for i in s.index], s.replica_id]
              for s in out.addressable_shards]
    shards.append([[s.device.id, s.replica_id] for s in out.global_shards])
    replicated = api.device_put(w, NS(mesh, P()))  # every copy is the value: the first is given
    for a in (out, replicated):
        last = a.addressable_data(n - 1)
        shards.append([[d.id for d in last.devices()], np.asarray(last).tolist()])
    return dict(_texts(api, jitted, x, w), values=[np.asarray(out).tolist()],
                spec=repr(out.sharding.spec), shards=shards)


def _train(api: Any, n: int, mesh: Any, param_specs: Callable, batch_spec: Any,
           steps: int = 3) -> dict[str, Any]:
    P, NS = api.P, api.NamedSharding
    step = mlp.make_train_step(api.np, api.value_and_grad, api.tree_map, learning_rate=0.1)
    params = mlp.init_params(SIZES)
    x, y = mlp.batch(4 * n, SIZES)
    p_sh = api.tree_map(lambda spec: NS(mesh, spec), param_specs(params),
                        is_leaf=lambda s: isinstance(s, api.P))
    b_sh = NS(mesh, batch_spec)
    jitted = api.jit(step, in_shardings=(p_sh, b_sh, b_sh),
                     out_shardings=(p_sh, NS(mesh, P())))
    texts = _texts(api, jitted, params, x, y)
    params = api.device_put(params, p_sh)
    x, y = api.device_put(x, b_sh), api.device_put(y, b_sh)
    losses = []
    for _ in range(steps):
        params, loss = jitted(params, x, y)
        losses.append(float(loss))
    final = [np.asarray(leaf).tolist() for layer in params for leaf in (layer["w"], layer["b"])]
    return dict(texts, values=[losses, *final])


def data_parallel_mlp(api: Any, n: int) -> dict[str, Any]:
    """Parameters replicated, the batch split over every device: SGD steps."""
    mesh = api.make_mesh((n,), ("data",))
    P = api.P
    return _train(api, n, mesh, lambda params: [{"w": P(), "b": P()} for _ in params],
                  P("data", None))


def mlp_2d(api: Any, n: int) -> dict[str, Any]:
    """A (data, model) mesh: batch over "data", hidden units over "model" (Megatron style)."""
    mesh = api.make_mesh((n // 2, 2), ("data", "model"))
    P = api.P

    def specs(params):
        return [{"w": P(None, "model"), "b": P("model")},
                {"w": P("model", None), "b": P()},
                {"w": P(), "b": P()}]
    return _train(api, n, mesh, specs, P("data", None))


def pictures(api: Any, n: int) -> dict[str, Any]:
    """visualize_sharding's table for a few layouts (no colours)."""
    mesh = api.make_mesh((n // 2, 2), ("data", "model"))
    P, NS = api.P, api.NamedSharding
    cases = [((8, 8), P("data", "model")), ((8, 8), P(None, "model")), ((8, 8), P("model")),
             ((4 * n, 16), P(("data", "model"))), ((8 * n,), P(("data", "model"))),
             ((8, 8), P()), ((8, 16), P("model", "data"))]
    return {"values": [], "tables": [api.sharding_text(shape, NS(mesh, spec))
                                     for shape, spec in cases]}


def shard_map_program(api: Any, n: int) -> dict[str, Any]:
    """A body written for one device's blocks; its text inside a jit, values and gradient."""
    mesh = api.make_mesh((n // 2, 2), ("x", "y"))
    P, NS = api.P, api.NamedSharding

    def body(a, b, c):
        return api.np.sin(a) * b + c, api.np.cos(b)

    f = api.shard_map(body, mesh=mesh, in_specs=(P("x", "y"), P("x", "y"), P("y")),
                      out_specs=(P("x", "y"), P("x", "y")))
    a = np.linspace(-2, 2, 2 * n * 8, dtype=np.float32).reshape(2 * n, 8)
    b, c = a[::-1] * 0.5, np.linspace(0, 1, 8, dtype=np.float32)
    out = f(a, b, c)

    def loss(a, b, c):
        y, z = f(a, b, c)
        return api.np.sum(y * y) + api.np.sum(z)
    grads = api.jit(api.grad(loss, argnums=(0, 1)))(a, b, c)
    jitted = api.jit(f, in_shardings=NS(mesh, P()))
    return dict(_texts(api, jitted, a, b, c),
                values=[np.asarray(o).tolist() for o in (*out, *grads)])


def _message(thunk: Any) -> str:
    try:
        thunk()
        return "no error"
    except Exception as e:  # noqa: BLE001 (the message is the point)
        return f"{type(e).__name__}: {e}"


def shard_map_errors(api: Any, n: int) -> dict[str, Any]:
    """The message of each check shard_map makes, for one bad call each."""
    mesh = api.make_mesh((n // 2, 2), ("x", "y"))
    P = api.P
    x = np.zeros((2 * n, 6), np.float32)

    def ident(a):
        return a

    def double(a):
        return a * 2.0

    def total(a):
        return api.np.sum(a)

    def pair(a, b):
        return a

    calls = [
        (ident, P("x", "y"), P("x", "y"), (np.zeros((2 * n, 5), np.float32),)),  # uneven
        (ident, P("z"), P("x"), (x,)),  # an axis the mesh lacks
        (ident, P("x", None, None), P("x"), (x,)),  # a spec longer than the rank
        (ident, P("x", "x"), P("x"), (x,)),  # an axis twice
        (pair, (P("x"),), P("x"), (x, x)),  # not one spec per argument
        (double, P("x"), P(), (x,)),  # declared replicated, varies over x
        (double, P("x", "y"), P("y"), (x,)),  # declared replicated over x
        (ident, P("x"), P("z"), (x,)),
        (total, P("x"), P("x"), (x,)),  # an output spec longer than the rank
        (ident, P("x"), (P("x"), P("x")), (x,)),  # not one spec per output
    ]
    # each thunk runs at once, in its own iteration
    messages = [_message(lambda: api.shard_map(  # noqa: B023
        f, mesh=mesh, in_specs=ins, out_specs=outs)(*args))  # noqa: B023
        for f, ins, outs, args in calls]
    return {"values": [], "messages": messages}


def collectives_program(api: Any, n: int) -> dict[str, Any]:
    """Each collective once in a shard_map body (replica groups over one axis of two)."""
    mesh = api.make_mesh((n // 2, 2), ("x", "y"))
    P, c = api.P, api.collectives

    def body(a):
        s = c.psum(a, "y")
        m = c.pmax(a, "x")
        i = c.axis_index("y")
        g = c.all_gather(a, "y", tiled=True)
        r = c.psum_scatter(g, "y", tiled=True)
        p = c.ppermute(a, "x", perm=[(k, (k + 1) % (n // 2)) for k in range(n // 2)])
        return s + m + i + r + p

    f = api.shard_map(body, mesh=mesh, in_specs=P("x", "y"), out_specs=P("x", "y"),
                      check_vma=False)
    x = np.arange(n * 8, dtype=np.float32).reshape(n, 8)
    return dict(_texts(api, api.jit(f), x), values=[np.asarray(f(x)).tolist()])


def all_to_all_program(api: Any, n: int) -> dict[str, Any]:
    """all_to_all, untiled and tiled: each device's block cut along one axis, the pieces
    exchanged over "x", stacked along another."""
    mesh = api.make_mesh((n // 2, 2), ("x", "y"))
    P, c = api.P, api.collectives
    texts, values = {}, []
    for tiled, split in ((False, n // 2), (True, 4)):
        x = np.arange(n * split, dtype=np.float32).reshape(n, split)
        f = api.shard_map(lambda a, tiled=tiled: c.all_to_all(a, "x", 1, 0, tiled=tiled), mesh=mesh,
                          in_specs=P("x", None), out_specs=P("x", None))
        texts = _texts(api, api.jit(f), x) if not tiled else texts
        values.append(np.asarray(f(x)).tolist())
    return dict(texts, values=values)


def shard_map_psum(api: Any, n: int) -> dict[str, Any]:
    """A data-parallel gradient by hand: each device's rows, then psum of the gradients."""
    mesh = api.make_mesh((n,), ("batch",))
    P = api.P

    def loss(w, x, y):
        d = api.np.tanh(api.np.dot(x, w)) - y
        return api.np.sum(d * d)

    def step(w, x, y):
        value, g = api.value_and_grad(loss)(w, x, y)
        psum = api.collectives.psum
        return w - 0.1 * psum(g, "batch"), psum(value, "batch")

    # check_vma=False: JAX's varying-axes types would psum the gradient of the replicated w
    # by themselves (ours has no such types); without them both take the psum written here
    f = api.jit(api.shard_map(step, mesh=mesh, in_specs=(P(), P("batch"), P("batch")),
                              out_specs=(P(), P()), check_vma=False))
    rng = np.random.default_rng(0)
    w = rng.standard_normal((6, 3)).astype(np.float32)
    x = rng.standard_normal((4 * n, 6)).astype(np.float32)
    y = rng.standard_normal((4 * n, 3)).astype(np.float32)
    new_w, value = f(w, x, y)
    return dict(_texts(api, f, w, x, y), values=[np.asarray(new_w).tolist(), float(value)])


def shard_map_replicated_grads(api: Any, n: int) -> dict[str, Any]:
    """Gradients through a shard_map whose body holds a collective, for inputs replicated
    along some mesh axes (their cotangents are summed over those axes), and vmap over it."""
    mesh = api.make_mesh((n // 2, 2), ("x", "y"))
    P, psum = api.P, api.collectives.psum
    w = np.linspace(-1, 1, n, dtype=np.float32)  # split over x, replicated over y
    v = np.linspace(0.5, 2, 3, dtype=np.float32)  # replicated over both
    a = np.linspace(-2, 2, n * 6, dtype=np.float32).reshape(n, 2, 3)

    def body(w, v, a):
        t = api.np.tanh(w[:, None, None] * a * v)
        return psum(api.np.sum(t * t), ("x", "y")), psum(t, "y")

    values = []
    for check in (True, False):
        f = api.shard_map(body, mesh=mesh, in_specs=(P("x"), P(), P("x", "y")),
                          out_specs=(P(), P("x")), check_vma=check)

        def loss(w, v, a, f=f):
            total, part = f(w, v, a)
            return total + api.np.sum(part * part)
        grads = api.jit(api.grad(loss, argnums=(0, 1, 2)))(w, v, a)
        values += [np.asarray(g).tolist() for g in grads]
    inner = api.shard_map(lambda v, a: api.grad(lambda v: api.np.sum(api.np.sin(a * v)))(v),
                          mesh=mesh, in_specs=(P(), P("x", "y")), out_specs=P(("x", "y")),
                          check_vma=False)  # each device's own gradient, not summed
    f = api.shard_map(body, mesh=mesh, in_specs=(P("x"), P(), P("x", "y")),
                      out_specs=(P(), P("x")))
    batched = api.jit(api.vmap(lambda w: f(w, v, a)[0]))(np.stack([w, 2 * w]))
    values += [np.asarray(inner(v, a)).tolist(), np.asarray(batched).tolist()]
    return {"values": values}


def invariant_operands(api: Any, n: int) -> dict[str, Any]:
    """Collectives of a replicated operand under check_vma: the operand is first typed as
    varying (JAX's insert_collective_pvary), whose transpose sums the cotangent over the
    devices. Then grad and vmap of a jitted shard_map called outside any jit, and jits with
    no arguments that lay out what they make."""
    mesh = api.make_mesh((n,), ("x",))
    P, c, NS = api.P, api.collectives, api.NamedSharding
    x = np.linspace(-2, 2, n * 8, dtype=np.float32).reshape(n, 8)
    w = np.arange(1, n + 1, dtype=np.float32)[:, None]
    bodies = [(lambda b: c.psum_scatter(b, "x", tiled=True), P("x")),
              (lambda b: c.all_to_all(b, "x", 0, 1, tiled=True), P("x")),
              (lambda b: c.ppermute(b, "x", [(i, (i + 1) % n) for i in range(n)]), P("x")),
              (lambda b: c.all_gather(b, "x", tiled=True), P("x"))]
    values = []
    for body, out_spec in bodies:
        f = api.shard_map(body, mesh=mesh, in_specs=P(), out_specs=out_spec)
        grad = api.jit(api.grad(lambda a, f=f: api.np.sum(f(a)[:n] * w)))(x)
        values.append(np.asarray(grad).tolist())
    g = api.jit(api.shard_map(lambda a: api.np.sin(a) * 2.0, mesh=mesh, in_specs=P("x"),
                              out_specs=P("x")))
    values.append(np.asarray(api.grad(lambda a: api.np.sum(g(a) * w))(x)).tolist())
    values.append(np.asarray(api.vmap(g)(np.stack([x, -x]))).tolist())
    made = [api.jit(lambda: api.np.zeros((n, 4)), out_shardings=NS(mesh, P("x")))(),
            api.jit(lambda: api.with_sharding_constraint(api.np.ones((n, n)),
                                                         NS(mesh, P(None, "x"))))()]
    values += [np.asarray(a).tolist() for a in made]
    return {"values": values, "specs": [repr(a.sharding.spec) for a in made]}


def grouped_collectives(api: Any, n: int) -> dict[str, Any]:
    """Collectives over groups of one axis's indices (`axis_index_groups`): each group of the
    axis becomes its own replica group; a grouped psum is refused with check_vma=True."""
    mesh = api.make_mesh((n,), ("i",))
    P, c = api.P, api.collectives
    pairs = [list(range(k, n, 2)) for k in (0, 1)]  # every other index
    halves = [list(range(n // 2)), list(range(n // 2, n))]

    def body(a):
        g = c.all_gather(a, "i", axis_index_groups=halves, tiled=True)
        return (c.pmax(a, "i", axis_index_groups=pairs), c.pmin(a, "i", axis_index_groups=halves),
                g, c.psum_scatter(g, "i", axis_index_groups=halves, tiled=True),
                c.psum(a, "i", axis_index_groups=pairs))

    f = api.shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=P("i"), check_vma=False)
    x = np.arange(4 * n, dtype=np.float32)[::-1].copy()
    try:
        api.shard_map(lambda a: c.psum(a, "i", axis_index_groups=halves), mesh=mesh,
                      in_specs=P("i"), out_specs=P("i"))(x)
        refused = "no error"
    except Exception as e:  # noqa: BLE001 (the message is the point)
        refused = f"{type(e).__name__}: {e}"
    return dict(_texts(api, api.jit(f), x), values=[np.asarray(o).tolist() for o in f(x)],
                refused=refused)


def typed_varying_axes(api: Any, n: int) -> dict[str, Any]:
    """check_vma=True: every value in the body is typed by the mesh axes it varies along, a
    replicated value meeting a varying one is cast by pvary, and a gradient taken inside the
    body comes out summed over the devices. Its printed body, and an SGD step written that way
    (no psum of the gradient by hand)."""
    mesh = api.make_mesh((n // 2, 2), ("i", "j"))
    P = api.P

    def body(w, x):
        g = api.grad(lambda w: api.np.sum(api.np.sin(w * x)))(w)
        return g, api.collectives.psum(x, "j")

    f = api.shard_map(body, mesh=mesh, in_specs=(P(), P("i", "j")), out_specs=(P(), P("i")))
    w, x = np.float32(0.5), np.linspace(-1, 2, 4 * n, dtype=np.float32).reshape(n, 4)
    text = str(api.make_jaxpr(f)(w, x))

    def loss(p, xb, yb):
        return api.np.sum((api.np.tanh(xb @ p["w"]) + p["b"] - yb) ** 2)

    def step(p, xb, yb):  # the gradient of replicated params: summed by the types
        g = api.grad(loss)(p, xb, yb)
        return api.tree_map(lambda a, b: a - 0.05 * b, p, g)

    sgd = api.jit(api.shard_map(step, mesh=mesh, in_specs=(P(), P(("i", "j")), P(("i", "j"))),
                                out_specs=P()))
    rng = np.random.default_rng(1)
    p = {"w": rng.standard_normal((5, 3)).astype(np.float32), "b": np.zeros(3, np.float32)}
    xb = rng.standard_normal((2 * n, 5)).astype(np.float32)
    yb = rng.standard_normal((2 * n, 3)).astype(np.float32)
    for _ in range(3):
        p = sgd(p, xb, yb)
    out = f(w, x)
    return {"body": text[:text.index("} in")], "messages": _carry_type_messages(api, mesh),
            "values": [np.asarray(o).tolist() for o in (*out, p["w"], p["b"])] +
            _typed_transforms(api, mesh)}


def _typed_transforms(api: Any, mesh: Any) -> list[Any]:
    """vmap, jit and grad of a scan inside a typed body; each result declared replicated,
    which the output types (not a guess from the inputs) must allow."""
    P, lax, np_, psum = api.P, api.lax, api.np, api.collectives.psum
    w, x = np.float32(0.7), np.linspace(-1, 2, 2 * mesh.size, dtype=np.float32)
    rows = np.ones((3, 4), np.float32)  # x's block is 4 long on either mesh
    bodies = [
        lambda w, x: psum(np_.sum(api.vmap(lambda r: r * w + x)(rows)), "i"),
        lambda w, x: api.grad(lambda w: np_.sum(api.jit(lambda a, b: a * b)(w, x)))(w),
        lambda w, x: api.grad(lambda w: np_.sum(api.vmap(lambda xi: np_.tanh(w * xi))(x)))(w),
        lambda w, x: api.grad(lambda w: psum(lax.scan(lambda c, xi: (c * xi + w, c),
                                                      0.0 * x[0], x)[0], "i"))(w),
    ]
    return [np.asarray(api.shard_map(b, mesh=mesh, in_specs=(P(), P("i")), out_specs=P())(
        w, x)).tolist() for b in bodies]


def _carry_type_messages(api: Any, mesh: Any) -> list[str]:
    """A loop carry or cond branch that starts replicated and comes out varying: refused, and
    JAX's message suggests the cast (pcast ... to='varying')."""
    P, lax, np_ = api.P, api.lax, api.np
    x = np.linspace(-1, 2, 8 * mesh.size, dtype=np.float32).reshape(2 * mesh.size, 4)

    def loop(w, x):
        return lax.fori_loop(0, 3, lambda i, c: np_.sin(c * x[0]), w * np_.ones(4))

    def branch(w, x):
        return lax.cond(x[0, 0] > 0, lambda: w * x[0], lambda: np_.cos(w) * np_.ones(4))

    def scanned(w, x):
        return lax.scan(lambda c, xi: (c * xi + w, c), w, x[0])[0]

    # x varies along "i" only: JAX names the missing axes in a set's order
    messages = [_message(lambda: api.shard_map(body, mesh=mesh,  # noqa: B023 (run at once)
                                               in_specs=(P(), P("i")),
                                               out_specs=P())(np.float32(0.7), x))
                for body in (loop, branch, scanned)]
    return messages


def sharded_donation(api: Any, n: int) -> dict[str, Any]:
    """Donation when each device holds a block: an input and an output pair up by the shape
    of one device's block, not of the whole value; a left-over buffer is named by its block."""
    mesh = api.make_mesh((2, n // 2), ("x", "y"))
    P, NS = api.P, api.NamedSharding
    x = np.arange(8.0 * n, dtype=np.float32).reshape(8, n)
    cases = {"rows_to_columns": (lambda: api.device_put(x, NS(mesh, P("x"))),
                                 dict(out_shardings=NS(mesh, P("y")))),
             "rows_to_rows": (lambda: api.device_put(x, NS(mesh, P("x"))),
                              dict(out_shardings=NS(mesh, P("x")))),
             "host_to_rows": (lambda: x.copy(), dict(out_shardings=NS(mesh, P("x")))),
             "left_to_the_partitioner": (lambda: api.device_put(x, NS(mesh, P("x"))), {})}
    out: dict[str, Any] = {"values": []}
    for name, (make, kwargs) in cases.items():
        a, f = make(), api.jit(lambda v: v * 2.0 + 1.0, donate_argnums=0, **kwargs)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            r = f(a)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the call's lowering warned already
            text = f.lower(make()).as_text()
        out["values"].append(np.asarray(r).tolist())
        out[name] = {"spec": repr(r.sharding.spec),
                     "deleted": a.is_deleted() if hasattr(a, "is_deleted") else None,
                     "warnings": [str(w.message).split("\n")[0] for w in caught],
                     "marks": re.findall(r"tf\.aliasing_output = \d+|jax\.buffer_donor", text)}
    return out


def unused_layouts(api: Any, n: int) -> dict[str, Any]:
    """Outputs that need no argument laid out on the mesh: the unused one is pruned before the
    devices are chosen, so the program is one device's and so are its outputs."""
    mesh = api.make_mesh((2, n // 2), ("x", "y"))
    a = api.device_put(np.ones((8, n), np.float32), api.NamedSharding(mesh, api.P("x")))
    h = np.arange(3.0, dtype=np.float32)
    outs = [api.jit(lambda a: 3.0)(a), api.jit(lambda a, b: b * 2.0)(a, h),
            api.jit(lambda a: api.np.zeros((2, 2)) + 1.0)(a),
            api.jit(lambda a, b: b * 2.0, keep_unused=True)(a, h)]  # kept: the mesh's program
    return {"values": [np.asarray(o).tolist() for o in outs],
            "placed": [[type(o.sharding).__name__, len(o.sharding.device_set)] for o in outs]}


def explicit_axes(api: Any, n: int) -> dict[str, Any]:
    """A mesh whose axes are Explicit (make_mesh's default): the layout is part of each value's
    type, every primitive's rule computes its result's, the lowering pins each result to it;
    what the rules refuse, with JAX's messages; a data-parallel SGD step typed that way."""
    mesh = api.explicit_mesh((n // 2, 2), ("x", "y"))
    P, NS, typeof = api.P, api.NamedSharding, api.typeof
    x = api.device_put(np.linspace(-1, 1, 16 * n, dtype=np.float32).reshape(4 * n, 4),
                       NS(mesh, P("x", None)))
    w = api.device_put(np.linspace(-2, 2, 24, dtype=np.float32).reshape(4, 6),
                       NS(mesh, P(None, "y")))

    def f(x, w):
        z = api.np.sin(x @ w) + 1.0
        return z.sum(axis=0), z

    types = [str(typeof(v)) for v in (
        x, w, x * 2.0, x.T, x.reshape(n // 2, 8, 4), x.reshape(16 * n), x.sum(), x.sum(axis=1),
        x @ w, api.np.exp(x @ w).mean(axis=1), api.np.zeros_like(x))]
    with api.set_mesh(mesh):
        jaxpr = str(api.make_jaxpr(f)(x, w))
        texts = _texts(api, api.jit(f), x, w)
        out = api.jit(f)(x, w)
        moved = api.jit(lambda a: api.reshard(a, P(None, "x")))(x)
        types += [str(typeof(o)) for o in (*out, moved)]
        specs = [repr(o.sharding.spec) for o in (*out, moved)]
        grads = api.grad(lambda w, a: api.np.sum(api.np.tanh(a @ w)))(w, x)
        # a constraint is an assertion here: the layout it asks for must already be the type's
        kept = api.jit(lambda a: api.with_sharding_constraint(a * 2.0, P("x")))(x)
        types.append(str(typeof(kept)))
        constrained = [_message(lambda: api.jit(
            lambda a: api.with_sharding_constraint(a, P(None, "x")))(x))]
    constrained.append(_message(lambda: api.jit(  # a bare spec and no mesh set
        lambda a: api.with_sharding_constraint(a, P("x")))(np.ones(4, np.float32))))
    bad = [lambda: x + api.device_put(np.ones((4 * n, 4), np.float32), NS(mesh, P("y", None))),
           lambda: x.T @ x, lambda: x.reshape(8, 2 * n),
           lambda: api.reshard(x, P(None, "x")),
           lambda: api.shard_map(lambda a: a, mesh=mesh, in_specs=P(None, "x"),
                                 out_specs=P(None, "x"))(x)]
    messages = [_message(api.jit(thunk)) for thunk in bad]
    step = mlp.make_train_step(api.np, api.value_and_grad, api.tree_map, learning_rate=0.1)
    params = api.device_put(mlp.init_params(SIZES), NS(mesh, P()))
    xb, yb = (api.device_put(a, NS(mesh, P(("x", "y"), None))) for a in mlp.batch(4 * n, SIZES))
    losses = []
    for _ in range(3):
        params, loss = api.jit(step)(params, xb, yb)
        losses.append(float(loss))
    return dict(texts, jaxpr=jaxpr, types=types, specs=specs, messages=messages + constrained,
                param_types=[str(typeof(params[0]["w"])), str(typeof(xb))],
                values=[np.asarray(out[0]).tolist(), np.asarray(moved).tolist(),
                        np.asarray(grads).tolist(), losses, np.asarray(params[-1]["w"]).tolist()])


def explicit_control_flow(api: Any, n: int) -> dict[str, Any]:
    """Control flow on Explicit axes: a branch's or a carry's layout is part of its type, an xs
    may not be split along the scanned axis, and the body sees each slice's layout; shard_map
    refuses a spec that disagrees with a value's type (numpy's is replicated), a spec that is
    not a PartitionSpec, and reads the mesh `set_mesh` entered."""
    mesh = api.explicit_mesh((n // 2, 2), ("x", "y"))
    P, NS, lax, typeof = api.P, api.NamedSharding, api.lax, api.typeof
    x = np.arange(8 * n, dtype=np.float32).reshape(4 * n, 2)
    ident = api.shard_map(lambda a: a * 2.0, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
    with api.set_mesh(mesh):
        a, b = api.device_put(x, NS(mesh, P("x", None))), api.device_put(x, NS(mesh, P(None, "y")))
        messages = [_message(thunk) for thunk in (
            lambda: lax.cond(True, lambda: a, lambda: b),
            lambda: lax.scan(lambda c, _: (api.reshard(c, P("x")), None), b, None, length=2),
            lambda: lax.fori_loop(0, 2, lambda i, c: api.reshard(c, P("x")), b),
            lambda: lax.scan(lambda c, r: (c + r, None), np.zeros(2, np.float32), a),
            lambda: ident(x),
            lambda: api.shard_map(lambda v: v, mesh=mesh, in_specs="x", out_specs=P("x"))(x),
            lambda: api.shard_map(lambda v: v, mesh=mesh, in_specs=P("x"),
                                  out_specs=("x",))(a))]
        body = str(api.make_jaxpr(lambda v: lax.scan(lambda c, r: (c, r * 2.0), 0.0, v))(b))
        types = [str(typeof(o)) for o in (
            lax.cond(False, lambda: a * 2.0, lambda: a + 1.0), lax.scan(
                lambda c, r: (c + r, c), np.zeros(2, np.float32), b)[1], ident(a))]
        decorated = api.shard_map(in_specs=P("x"), out_specs=P("x"))(lambda v: v + 1.0)(a)
    messages.append(_message(lambda: api.shard_map(lambda v: v, in_specs=P(), out_specs=P())(x)))
    return {"messages": messages, "jaxpr": body, "types": types,
            "values": [np.asarray(decorated).tolist()]}


def scalars_and_dtypes(api: Any, n: int) -> dict[str, Any]:
    """A replicated scalar in, and out: a 0-d sum, an int and a bool array split by rows, each
    with its dtype, shape and shard shapes (a scalar's shards are scalars)."""
    mesh = api.make_mesh((n,), ("x",))
    P, NS = api.P, api.NamedSharding

    def f(scale, counts):
        return (counts * scale).sum(), counts * 2, counts > 1

    scale = api.device_put(np.float32(1.5), NS(mesh, P()))
    counts = api.device_put(np.arange(2 * n, dtype=np.int32), NS(mesh, P("x")))
    outs = api.jit(f)(scale, counts)
    meta = [[list(o.shape), str(o.dtype), np.asarray(o).shape,  # the values as read back
             sorted({np.asarray(s.data).shape for s in o.addressable_shards})]
            for o in (*outs, scale)]
    return dict(values=[np.asarray(o).tolist() for o in outs], meta=json.loads(json.dumps(meta)))


def closures_and_axis_orders(api: Any, n: int) -> dict[str, Any]:
    """A body that closes over a value of an enclosing grad, vmap or jit (it becomes a
    replicated argument the transformation sees), and a ppermute over two axes named out of
    the mesh's order (each group's devices taken in id order)."""
    mesh = api.make_mesh((n // 2, 2), ("x", "y"))
    P, c = api.P, api.collectives
    a = np.arange(n * 4, dtype=np.float32).reshape(n, 4)

    def total(w):
        return api.shard_map(lambda b: b * w, mesh=mesh, in_specs=P("x"),
                             out_specs=P("x"))(a).sum()

    scaled = api.jit(lambda b, w: api.shard_map(lambda v: v * w, mesh=mesh, in_specs=P("x"),
                                                out_specs=P("x"))(b))
    perm = [(k, (k + 1) % n) for k in range(n)]
    shifted = api.jit(api.shard_map(lambda v: c.ppermute(v, ("y", "x"), perm), mesh=mesh,
                                    in_specs=P(("x", "y")), out_specs=P(("x", "y"))))
    x = np.arange(n, dtype=np.float32)
    values = [float(api.grad(total)(np.float32(3))), float(api.jit(api.grad(total))(np.float32(3))),
              np.asarray(api.vmap(total)(np.float32([1, 2]))).tolist(),
              np.asarray(scaled(a, np.float32(2))).tolist(), np.asarray(shifted(x)).tolist(),
              np.asarray(api.grad(lambda v: (shifted(v) * x).sum())(x)).tolist()]
    return dict(_texts(api, shifted, x), values=values)


PROGRAMS: dict[str, Callable[[Any, int], dict[str, Any]]] = {
    "closures_and_axis_orders": closures_and_axis_orders,
    "scalars_and_dtypes": scalars_and_dtypes,
    "explicit_axes": explicit_axes,
    "explicit_control_flow": explicit_control_flow,
    "sharded_donation": sharded_donation,
    "unused_layouts": unused_layouts,
    "sharded_matmul": sharded_matmul,
    "data_parallel_mlp": data_parallel_mlp,
    "mlp_2d": mlp_2d,
    "pictures": pictures,
    "shard_map_program": shard_map_program,
    "shard_map_errors": shard_map_errors,
    "collectives_program": collectives_program,
    "all_to_all_program": all_to_all_program,
    "shard_map_psum": shard_map_psum,
    "shard_map_replicated_grads": shard_map_replicated_grads,
    "grouped_collectives": grouped_collectives,
    "invariant_operands": invariant_operands,
    "typed_varying_axes": typed_varying_axes,
}


def run_all(api: Any, n: int) -> dict[str, dict[str, Any]]:
    return {name: program(api, n) for name, program in PROGRAMS.items()}
