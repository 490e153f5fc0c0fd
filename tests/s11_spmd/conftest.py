"""Stage 11's test helpers: a client of N CPU devices for a module, and JAX's numbers for the
same programs from a process of its own (JAX's CPU device count is fixed at its start).

`cpu_devices(n)` swaps the process's client for one of n devices (the registry's CPU branch
with CPU_NUM_DEVICES=n, or the `client` given), with jit on PJRT, and puts the old client back
at the end.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

import stages.s04_autodiff as s04
import stages.s05_vmap as s05
import stages.s06_control_flow as s06
import stages.s09_pjrt as s09
import stages.s11_spmd as s11
from stages.s01_pytrees import tree_map
from stages.s02_tracing import core
from stages.s02_tracing import numpy as snp
from stages.s02_tracing.api import make_jaxpr
from stages.s05_vmap import parallel
from stages.s09_pjrt import runtime

ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def cpu_devices(n: int, client: Any = None):
    client = client or s11.cpu_client(n)
    prev = runtime.set_computation_client(client)
    try:
        with s09.use_pjrt():
            yield client
    finally:
        runtime.set_computation_client(prev)


@pytest.fixture(scope="module")
def four():
    with cpu_devices(4) as client:
        yield client


@pytest.fixture(scope="module")
def eight():
    with cpu_devices(8) as client:
        yield client


@functools.cache
def jax_results(n: int) -> dict[str, Any]:
    """shared/spmd_programs.py run by JAX on n CPU devices."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, str(Path(__file__).with_name("jax_oracle.py")),
                          str(n)], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=600, check=True)
    return json.loads(out.stdout)


def _use_shardy(flag: bool) -> Any:
    return s11.mlir.use_shardy_partitioner(flag)


OURS = types.SimpleNamespace(
    jit=s11.jit, P=s11.P, NamedSharding=s11.NamedSharding,
    make_mesh=lambda shape, names: s11.make_mesh(shape, names,
                                                 axis_types=(s11.AxisType.Auto,) * len(names)),
    with_sharding_constraint=s11.with_sharding_constraint, device_put=s11.device_put,
    np=snp, value_and_grad=s04.value_and_grad, grad=s04.grad, tree_map=tree_map,
    vmap=s05.vmap, make_jaxpr=make_jaxpr, lax=s06,
    shard_map=s11.shard_map, collectives=parallel,
    use_shardy=_use_shardy, sharding_text=s11.visualize.sharding_text,
    explicit_mesh=s11.make_mesh, set_mesh=s11.set_mesh, reshard=s11.reshard,
    typeof=core.typeof)
