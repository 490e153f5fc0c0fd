"""Sharding pictures: which device holds which block of an array, a mesh with its axes, and a
run of several processes; drawn from stage 11's objects (a NamedSharding, a Mesh, a client's
device lists)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .svg import Canvas

ROLES = ("known", "unknown", "batch", "residual", "output", "input", "cotangent", "neutral")


def sharding_svg(shape: Sequence[int], sharding: Any, title: str = "", *,
                 cell: float = 26) -> str:
    """The global array as a grid of its blocks, each labelled with the devices holding it;
    blocks held by the same devices share a colour."""
    index_map = sharding.devices_indices_map(tuple(shape))
    shape = tuple(shape) if len(shape) == 2 else (1, shape[0])
    c = Canvas(title or f"blocks of an array of shape {tuple(shape)}")
    blocks: dict[tuple, list[int]] = {}
    for device, index in index_map.items():
        if len(index) == 1:
            index = (slice(None), index[0])
        key = tuple((s.start or 0, s.stop if s.stop is not None else n)
                    for s, n in zip(index, shape, strict=True))
        blocks.setdefault(key, []).append(device.id)
    scale = cell * 8 / max(shape)
    for k, ((r0, r1), (c0, c1)) in enumerate(sorted(blocks)):
        ids = sorted(blocks[(r0, r1), (c0, c1)])
        role = ROLES[k % len(ROLES)]
        x, y, w, h = c0 * scale, r0 * scale, (c1 - c0) * scale, (r1 - r0) * scale
        label = "dev " + ",".join(map(str, ids))
        c.box(x, y, w, h, [label], role=role, rx=2, size=11 if w > 60 else 9)
    c.text(shape[1] * scale / 2, shape[0] * scale + 16, f"spec {sharding.spec!r}", size=11)
    return c.to_svg()


def mesh_svg(mesh: Any, title: str = "") -> str:
    """The mesh: device ids in a grid, the first axis down, the second across."""
    sizes = list(mesh.axis_sizes) + [1] * (2 - len(mesh.axis_sizes))
    names = list(mesh.axis_names) + [""] * (2 - len(mesh.axis_names))
    c = Canvas(title or f"mesh {mesh.shape}")
    ids = mesh.device_ids.reshape(sizes[0], sizes[1])
    for i in range(sizes[0]):
        for j in range(sizes[1]):
            c.box(40 + j * 64, 30 + i * 44, 56, 36, [f"dev {ids[i, j]}",
                                                      f"pos {i * sizes[1] + j}"],
                  role="known", size=10)
    c.text(40 + sizes[1] * 32, 14, f"{names[1]} →" if names[1] else "", size=12)
    c.text(18, 30 + sizes[0] * 22, f"{names[0]} ↓", size=12)
    return c.to_svg()


def processes_svg(processes: Sequence[Sequence[str]], title: str = "") -> str:
    """Processes, each driving its own devices, joined by the coordination service (gRPC) and
    the collectives (gloo over TCP on CPU, NCCL on GPU, ICI on TPU)."""
    c = Canvas(title or "a run of several processes")
    width = 190
    for p, devices in enumerate(processes):
        x = p * (width + 40)
        c.rect(x, 60, width, 120, role="neutral")
        c.text(x + width / 2, 76, f"process {p}", size=12, weight="bold")
        for k, d in enumerate(devices):
            c.box(x + 12 + k * (width - 24) / len(devices), 90,
                  (width - 24) / len(devices) - 8, 34, [d], role="known", size=11)
        c.text(x + width / 2, 150, "the same program", size=10)
        c.text(x + width / 2, 164, "on its own blocks", size=10)
        c.line(x + width / 2, 60, x + width / 2, 30, role="residual", arrow=False, dash=True)
    total = len(processes) * (width + 40) - 40
    c.box(total / 2 - 130, 0, 260, 30, ["coordination service (process 0)"], role="residual",
          size=11)
    c.line(10, 200, total - 10, 200, role="batch", arrow=False)
    c.text(total / 2, 216, "collectives: gloo over TCP (CPU), NCCL (GPU), ICI (TPU)", size=11)
    for p in range(len(processes)):
        x = p * (width + 40) + width / 2
        c.line(x, 180, x, 200, role="batch", arrow=False)
    return c.to_svg()
