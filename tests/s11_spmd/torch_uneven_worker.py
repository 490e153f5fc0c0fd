"""Uneven torch SPMD in a process of its own (a mismatched buffer handed to the runtime
unchecked crashes the process): `python torch_uneven_worker.py MODE` prints JSON.

MODE "values": each op on a tensor of each shape marked over a (2, 2) mesh, its value and
whether an in-place update donated the old shards. MODE "guard": shards the program did not
ask for reach the run, and the check before it must refuse them.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import torch

from stages.s10_lazy_tensors import device_data
from stages.s10_lazy_tensors import torch_xla as txla
from stages.s10_lazy_tensors.tensor import get_xla_tensor
from stages.s11_spmd import xla_sharding as xs
from stages.s11_spmd import xla_sharding_util
from stages.s11_spmd.runtime import use_spmd
from tests.s11_spmd.conftest import cpu_devices

SHAPES = [(6, 5), (4, 5), (8, 4)]
SPECS = [("data", "model"), (None, "model"), ("model", "data")]
OPS = {
    "t + 0": lambda t: t + 0,
    "t * 1.0": lambda t: t * 1.0,
    "t + 2": lambda t: t + 2,
    "t.clone()": lambda t: t.clone(),
    "t.sum(0)": lambda t: t.sum(0),
}


def _marked(mesh: xs.Mesh, shape: tuple[int, int], spec: tuple) -> torch.Tensor:
    t = torch.arange(float(np.prod(shape))).reshape(shape).to(txla.device())
    return xs.mark_sharding(t, mesh, spec)


def values(mesh: xs.Mesh) -> dict[str, list]:
    out = {}
    for shape in SHAPES:
        for spec in SPECS:
            for name, op in OPS.items():
                out[f"{shape} {spec} {name}"] = op(_marked(mesh, shape, spec)).cpu().tolist()
            t = _marked(mesh, shape, spec)
            old = get_xla_tensor(t).handle.shards
            t.add_(1)
            txla.sync()
            t.mul_(2)  # the updated tensor's data is used again
            txla.sync()
            out[f"{shape} {spec} add_ mul_"] = t.cpu().tolist()
            out[f"{shape} {spec} donated"] = [not s.has_value() for s in old]
    return out


def guard(mesh: xs.Mesh) -> dict[str, str]:
    xla_sharding_util.VirtualDevice.shards_of = lambda self, data, wanted=None: data.shards
    try:
        (_marked(mesh, (6, 5), ("data", "model")) + 0).cpu()
    except RuntimeError as e:
        return {"error": str(e)}
    return {"error": ""}


if __name__ == "__main__":
    with cpu_devices(4):
        device_data.set_virtual_device(None)
        use_spmd()
        mesh = xs.Mesh(np.arange(4), (2, 2), ("data", "model"))
        print(json.dumps((values if sys.argv[1] == "values" else guard)(mesh)))
