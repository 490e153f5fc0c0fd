"""One process of a 2-process run on loopback: `python distributed_worker.py PORT ID MODE`.

MODE "train": three data-parallel SGD steps over the global 4-device mesh; prints JSON.
MODE "die": process 1 exits right after the first step; process 0 carries on and must end with
an error (the test checks how, and how soon).
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

import stages.s04_autodiff as s04
import stages.s09_pjrt as s09
import stages.s11_spmd as s11
from shared import mlp
from shared.spmd_programs import SIZES
from stages.s01_pytrees import tree_map
from stages.s02_tracing import numpy as snp
from stages.s11_spmd import P, distributed

port, pid, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
distributed.initialize(f"127.0.0.1:{port}", 2, pid, local_device_count=2,
                       heartbeat_timeout_seconds=int(os.environ.get("HEARTBEAT", "100")))
client = s09.get_computation_client()
report = {"all": client.get_all_devices(), "local": client.get_local_devices()}
with s09.use_pjrt():
    mesh = s11.make_mesh((4,), ("data",))
    rep, batch = s11.NamedSharding(mesh, P()), s11.NamedSharding(mesh, P("data", None))
    step = mlp.make_train_step(snp, s04.value_and_grad, tree_map, learning_rate=0.1)
    params = mlp.init_params(SIZES)
    x, y = mlp.batch(16, SIZES)  # every process makes the same global batch...
    lo, hi = 8 * pid, 8 * pid + 8  # ...and keeps only its own rows
    x = s11.make_array_from_process_local_data(batch, x[lo:hi], (16, SIZES[0]))
    y = s11.make_array_from_process_local_data(batch, y[lo:hi], (16, SIZES[-1]))
    jitted = s11.jit(step, in_shardings=(rep, batch, batch), out_shardings=(rep, rep))
    params = s11.device_put(params, rep)
    losses = []
    for k in range(3):
        params, loss = jitted(params, x, y)
        losses.append(float(loss))
        if mode == "die" and pid == 1 and k == 0:
            os._exit(3)  # a crash: no goodbye to the coordinator
    report["losses"] = losses
    report["w"] = np.asarray(params[-1]["w"]).tolist()
print(json.dumps(report), flush=True)
distributed.shutdown()
