"""The front door: a learner's JAX script runs unchanged with `import jax` swapped for
`import stages.s12_system as jax`, and computes the same numbers.

Each script below is plain JAX. The test runs its text once as written and once with only its
import lines rewritten, then compares every value the script leaves in `result`.
"""

from __future__ import annotations

import re
import textwrap

import jax
import numpy as np
import pytest

import stages.s12_system as ujax

SCRIPTS = {
    "linear_regression": """
        import jax
        import jax.numpy as jnp

        def loss(w, x, y):
            return jnp.mean((x @ w - y) ** 2)

        x = jnp.arange(12.0).reshape(6, 2) / 10
        y = x @ jnp.array([2.0, -1.0]) + 0.5
        w = jnp.zeros(2)
        step = jax.jit(lambda w: w - 0.5 * jax.grad(loss)(w, x, y))
        for _ in range(20):
            w = step(w)
        result = {"w": w, "loss": loss(w, x, y)}
    """,
    "transforms": """
        import jax
        import jax.numpy as jnp

        def f(x):
            return jnp.sum(jnp.sin(x) * x ** 2)

        x = jnp.array([0.5, 1.0, 2.0])
        value, g = jax.value_and_grad(f)(x)
        per_example = jax.vmap(jax.grad(lambda a: jnp.sin(a) * a ** 2))(x)
        result = {"value": value, "grad": g, "per_example": per_example,
                  "jacfwd": jax.jacfwd(jnp.sin)(x), "jacrev": jax.jacrev(jnp.sin)(x),
                  "hessian": jax.hessian(f)(x),
                  "checkpointed": jax.grad(jax.checkpoint(f))(x)}
    """,
    "control_flow": """
        import jax
        import jax.numpy as jnp
        from jax import lax

        def cumsum(xs):
            return lax.scan(lambda c, x: (c + x, c + x), 0.0, xs)

        def collatz_steps(n):
            def body(s):
                n, k = s
                return lax.cond(n % 2 == 0, lambda m: m // 2, lambda m: 3 * m + 1, n), k + 1
            return lax.while_loop(lambda s: s[0] != 1, body, (n, 0))[1]

        total, partial = jax.jit(cumsum)(jnp.arange(5.0))
        result = {"total": total, "partial": partial, "collatz": jax.jit(collatz_steps)(27),
                  "fori": lax.fori_loop(0, 5, lambda i, a: a * 2.0, 1.0),
                  "switch": lax.switch(1, [jnp.sin, jnp.cos, jnp.tanh], 0.3)}
    """,
    "random_and_trees": """
        import jax
        import jax.numpy as jnp
        from jax import random

        key = random.PRNGKey(42)
        k1, k2 = random.split(key)
        params = {"w": random.normal(k1, (3, 2)), "b": jnp.zeros(2)}
        params = jax.tree_util.tree_map(lambda p: p * 0.5, params)
        result = {"params": params, "leaves": len(jax.tree_util.tree_leaves(params)),
                  "uniform": random.uniform(k2, (4,)), "perm": random.permutation(k2, 6),
                  "tree_map": jax.tree.map(lambda a: a.sum(), params),
                  "devices": len(jax.devices()), "put": jax.device_put(jnp.ones(2)) + 1}
    """,
    "custom_rules": """
        import jax
        import jax.numpy as jnp

        @jax.custom_jvp
        def softplus(x):
            return jnp.log1p(jnp.exp(x))

        @softplus.defjvp
        def softplus_jvp(primals, tangents):
            (x,), (t,) = primals, tangents
            return softplus(x), t / (1 + jnp.exp(-x))

        @jax.custom_vjp
        def clip_grad(x):
            return x

        def fwd(x):
            return x, None

        def bwd(_, g):
            return (jnp.clip(g, -1.0, 1.0),)

        clip_grad.defvjp(fwd, bwd)
        result = {"softplus": jax.grad(softplus)(2.0),
                  "clipped": jax.grad(lambda x: 5.0 * clip_grad(x))(3.0),
                  "jaxpr_eqns": len(jax.make_jaxpr(lambda x: jnp.sin(x) + 1.0)(1.0).jaxpr.eqns)}
    """,
}

SWAPS = [
    (r"^import jax$", "import stages.s12_system as jax"),
    (r"^import jax\.numpy as jnp$", "import stages.s12_system.numpy as jnp"),
    (r"^from jax import (\w+)$", r"from stages.s12_system import \1"),
]


def _swap(source: str) -> str:
    lines = []
    for line in source.splitlines():
        for pattern, replacement in SWAPS:
            line = re.sub(pattern, replacement, line)
        lines.append(line)
    return "\n".join(lines)


def _run(source: str) -> dict:
    scope: dict = {}
    exec(compile(source, "<learner script>", "exec"), scope)  # noqa: S102
    return scope["result"]


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_learner_script_runs_unchanged_with_the_import_swapped(name):
    source = textwrap.dedent(SCRIPTS[name])
    swapped = _swap(source)
    assert "import stages.s12_system as jax" in swapped
    theirs, ours = _run(source), _run(swapped)
    assert set(ours) == set(theirs)
    for key in theirs:
        want, got = jax.tree_util.tree_leaves(theirs[key]), ujax.tree_util.tree_leaves(ours[key])
        assert len(want) == len(got), key
        for a, b in zip(got, want, strict=True):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6,
                                       err_msg=f"{name}: {key}")


def test_only_import_lines_change():
    source = textwrap.dedent(SCRIPTS["control_flow"])
    changed = [(a, b) for a, b in zip(source.splitlines(), _swap(source).splitlines(),
                                      strict=True) if a != b]
    assert [a for a, _ in changed] == ["import jax", "import jax.numpy as jnp",
                                       "from jax import lax"]


def test_the_front_door_has_jax_names():
    for name in ["numpy", "lax", "jit", "grad", "value_and_grad", "vmap", "jacfwd", "jacrev",
                 "hessian", "checkpoint", "custom_jvp", "custom_vjp", "tree_util", "tree",
                 "device_put", "devices", "random", "make_jaxpr", "nn", "optim"]:
        assert hasattr(ujax, name), name
    for name in ["cond", "switch", "while_loop", "fori_loop", "scan", "stop_gradient"]:
        assert hasattr(ujax.lax, name) and hasattr(jax.lax, name), name
    assert ujax.devices()[0].platform == jax.devices()[0].platform == "cpu"
    assert ujax.default_backend() == jax.default_backend()


def test_the_tree_modules_have_every_public_name_of_jaxs():
    for ours, theirs in ((ujax.tree_util, jax.tree_util), (ujax.tree, jax.tree)):
        public = {n for n in dir(theirs) if not n.startswith("_")}
        assert {n for n in public if not hasattr(ours, n)} == set()
    assert ujax.tree.broadcast([1, 2], [[3, 4], [5]]) == jax.tree.broadcast([1, 2], [[3, 4], [5]])


def test_a_static_field_is_in_the_treedef_not_the_leaves_as_jaxs():
    import dataclasses

    def op(lib):
        @lib.tree_util.register_dataclass
        @dataclasses.dataclass
        class Op:
            x: float
            name: str = lib.tree.static(default="add")
            note: str = lib.tree.static(default="", metadata={"static": False})  # overridden

        return Op

    ours, theirs = op(ujax)(1.0, note="n"), op(jax)(1.0, note="n")
    assert ujax.tree.leaves(ours) == jax.tree.leaves(theirs) == [1.0, "n"]
    assert str(ujax.tree.structure(ours)) == str(jax.tree.structure(theirs))


def test_sharding_names_are_jaxs_and_stage_11s():
    import stages.s11_spmd as s11

    for name in ["Mesh", "NamedSharding", "PartitionSpec", "SingleDeviceSharding", "Sharding"]:
        assert hasattr(jax.sharding, name)
        assert getattr(ujax.sharding, name) is getattr(s11, name), name
    for name in ["shard_map", "make_mesh"]:
        assert hasattr(jax, name) and getattr(ujax, name) is getattr(s11, name), name
    assert ujax.lax.with_sharding_constraint is s11.with_sharding_constraint  # jax.lax's
    spec = ujax.sharding.PartitionSpec("data", None)
    assert repr(spec) == repr(jax.sharding.PartitionSpec("data", None))


def test_named_axis_collectives_under_the_front_doors_vmap_as_jax():
    x = np.arange(6, dtype=np.float32).reshape(3, 2)

    def f(lax, v):
        return v / lax.psum(v, "i") + lax.axis_index("i")

    ours = ujax.vmap(lambda v: f(ujax.lax, v), axis_name="i")(x)
    theirs = jax.vmap(lambda v: f(jax.lax, v), axis_name="i")(x)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)
