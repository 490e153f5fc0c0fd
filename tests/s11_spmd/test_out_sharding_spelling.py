"""The spec a jit result's sharding is spelled with, against JAX on 8 CPU devices.

JAX hands a result laid out like the first argument that argument's own sharding when the
result was computed from an array already on the mesh (pxla.maybe_recover_user_shardings):
`P('x', None)` stays `P('x', None)` and `out.sharding == x.sharding`; otherwise the shortest
spec. `python test_out_sharding_spelling.py` prints JAX's side (its own process: JAX's CPU
device count is fixed when it starts).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def programs(api: Any) -> dict[str, Any]:
    P, NS, jit, dp = api.P, api.NamedSharding, api.jit, api.device_put
    m = api.make_mesh((4, 2), ("x", "y"))
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    a, r = dp(x, NS(m, P("x", None))), dp(x, NS(m, P(None)))
    out = {
        "committed": jit(lambda a: a @ a.T)(a),
        "committed and in_shardings": jit(lambda a: a * 2, in_shardings=NS(m, P("x", None)))(a),
        "host value and in_shardings": jit(lambda a: a * 2, in_shardings=NS(m, P("x", None)))(x),
        "replicated": jit(lambda a: a * 2)(r),
        "a constant beside": jit(lambda a: (a * 2, api.np.zeros((8, 4))))(r)[1],
        "another rank": jit(lambda a: a.sum(1))(a),
        "a constraint": jit(lambda a: api.with_sharding_constraint(a * 2, NS(m, P("x"))))(a),
        "unused first argument": jit(lambda u, a: a * 2)(dp(x, NS(m, P(None, "y"))), a),
        "second argument committed": jit(lambda b, a: a * b, in_shardings=(
            NS(m, P("x", None)), None))(x, a),
    }
    return {k: [repr(v.sharding.spec), v.sharding == a.sharding] for k, v in out.items()}


def test_results_are_spelled_as_jax_spells_them():
    import stages.s02_tracing.numpy as snp
    import stages.s11_spmd as s11
    from tests.s11_spmd.conftest import cpu_devices

    ours_api = types.SimpleNamespace(
        P=s11.P, NamedSharding=s11.NamedSharding, jit=s11.jit, device_put=s11.device_put,
        with_sharding_constraint=s11.with_sharding_constraint, np=snp,
        make_mesh=lambda s, n: s11.make_mesh(s, n, axis_types=(s11.AxisType.Auto,) * 2))
    with cpu_devices(8):
        ours = programs(ours_api)
    got = subprocess.run([sys.executable, __file__], capture_output=True, text=True, cwd=ROOT,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=600, check=True)
    assert ours == json.loads(got.stdout)


if __name__ == "__main__":
    import jax

    jax.config.update("jax_num_cpu_devices", 8)
    jax.config.update("jax_platforms", "cpu")
    from jax.sharding import AxisType, NamedSharding, PartitionSpec

    print(json.dumps(programs(types.SimpleNamespace(
        P=PartitionSpec, NamedSharding=NamedSharding, jit=jax.jit, device_put=jax.device_put,
        with_sharding_constraint=jax.lax.with_sharding_constraint, np=jax.numpy,
        make_mesh=lambda s, n: jax.make_mesh(s, n, axis_types=(AxisType.Auto,) * 2)))))
