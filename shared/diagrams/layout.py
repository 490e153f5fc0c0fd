"""A layered layout for small directed acyclic graphs (the Sugiyama recipe, kept short).

1. Layers: a node sits one layer below the lowest of its predecessors (longest path).
2. An edge that skips layers gets one invisible point per skipped layer, so it bends around
   the nodes in between instead of crossing them.
3. Order within a layer: a few sweeps that sort each layer by the mean position of its
   neighbours in the layer before (the barycentre heuristic).
4. Positions: each node moves towards its neighbours, then nodes are pushed apart to keep a gap.

Good enough for the dataflow graph of a jaxpr of a dozen equations, which is all it is used for.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field


@dataclass
class Layout:
    """Centres of the nodes, and each edge as the list of points it passes through."""

    centers: dict[Hashable, tuple[float, float]]
    sizes: dict[Hashable, tuple[float, float]]
    routes: list[list[tuple[float, float]]] = field(default_factory=list)

    @property
    def width(self) -> float:
        return max(x + self.sizes[n][0] / 2 for n, (x, _) in self.centers.items())

    @property
    def height(self) -> float:
        return max(y + self.sizes[n][1] / 2 for n, (_, y) in self.centers.items())


def layered(sizes: dict[Hashable, tuple[float, float]], edges: Sequence[tuple[Hashable, Hashable]],
            *, layer_gap: float = 46, node_gap: float = 22,
            first: Sequence[Hashable] = (), last: Sequence[Hashable] = (),
            keep_order: bool = False) -> Layout:
    """Lay out a DAG top to bottom. `first` nodes go in the top layer, `last` in the bottom one.

    keep_order: keep each layer in the order the nodes were given (a tree listed depth first
    keeps its children left to right) instead of reordering to cut crossings.
    """
    nodes = list(sizes)
    preds: dict[Hashable, list[Hashable]] = {n: [] for n in nodes}
    for a, b in edges:
        preds[b].append(a)
    layer: dict[Hashable, int] = {}

    def depth(n: Hashable) -> int:
        if n not in layer:
            layer[n] = 0 if n in first else max((depth(p) + 1 for p in preds[n]), default=0)
        return layer[n]

    for n in nodes:
        depth(n)
    bottom = max(layer.values(), default=0)
    for n in last:
        layer[n] = bottom

    # 2. chains of dummy points for long edges; every edge then joins adjacent layers
    rows: list[list[Hashable]] = [[] for _ in range(bottom + 1)]
    for n in nodes:
        rows[layer[n]].append(n)
    width = {n: sizes[n][0] for n in nodes}
    chains: list[list[Hashable]] = []
    links: list[tuple[Hashable, Hashable]] = []
    for i, (a, b) in enumerate(edges):
        chain = [a]
        for k in range(layer[a] + 1, layer[b]):
            dummy = ("dummy", i, k)
            rows[k].append(dummy)
            width[dummy] = 2.0
            chain.append(dummy)
        chain.append(b)
        chains.append(chain)
        links += list(itertools.pairwise(chain))
    up: dict[Hashable, list[Hashable]] = {n: [] for row in rows for n in row}
    down: dict[Hashable, list[Hashable]] = {n: [] for row in rows for n in row}
    for a, b in links:
        down[a].append(b)
        up[b].append(a)

    # 3. barycentre ordering sweeps
    for sweep in range(0 if keep_order else 8):
        order = range(1, len(rows)) if sweep % 2 == 0 else range(len(rows) - 2, -1, -1)
        for k in order:
            ref_row = rows[k - 1] if sweep % 2 == 0 else rows[k + 1]
            pos = {n: i for i, n in enumerate(ref_row)}
            nbrs = up if sweep % 2 == 0 else down

            here = {n: i for i, n in enumerate(rows[k])}

            def key(n: Hashable, pos=pos, nbrs=nbrs, here=here) -> float:
                ps = [pos[m] for m in nbrs[n] if m in pos]
                return sum(ps) / len(ps) if ps else here[n]

            rows[k].sort(key=key)

    # 4. x positions: pack, then relax towards neighbours while keeping the gaps
    x: dict[Hashable, float] = {}
    for row in rows:
        cursor = 0.0
        for n in row:
            x[n] = cursor + width[n] / 2
            cursor += width[n] + node_gap
    for sweep in range(12):
        order = range(len(rows)) if sweep % 2 == 0 else range(len(rows) - 1, -1, -1)
        for k in order:
            row = rows[k]
            want = {}
            for n in row:
                ns = up[n] + down[n]
                want[n] = sum(x[m] for m in ns) / len(ns) if ns else x[n]
            _place(row, want, width, node_gap, x)

    left = min(x[n] - width[n] / 2 for row in rows for n in row)
    heights = [max((sizes[n][1] for n in row if n in sizes), default=0) for row in rows]
    y_of_row, cursor = [], 0.0
    for h in heights:
        y_of_row.append(cursor + h / 2)
        cursor += h + layer_gap
    centers = {n: (x[n] - left, y_of_row[layer[n]]) for n in nodes}
    routes = []
    for chain in chains:
        a, b = chain[0], chain[-1]
        pts = [(centers[a][0], centers[a][1] + sizes[a][1] / 2)]
        for d in chain[1:-1]:
            pts.append((x[d] - left, y_of_row[d[2]]))
        pts.append((centers[b][0], centers[b][1] - sizes[b][1] / 2))
        routes.append(pts)
    return Layout(centers, dict(sizes), routes)


def _place(row: list[Hashable], want: dict[Hashable, float], width: dict[Hashable, float],
           gap: float, x: dict[Hashable, float]) -> None:
    """Put the row's nodes as near their wanted x as the order and the gaps allow.

    With o_i the least offset of node i from node 0, the gaps say z_i = x_i - o_i never
    decreases; the closest such z to the wishes is an isotonic regression (pool adjacent
    violators: merge neighbouring blocks whose means are out of order).
    """
    offsets = [0.0]
    for a, b in itertools.pairwise(row):
        offsets.append(offsets[-1] + (width[a] + width[b]) / 2 + gap)
    blocks: list[list[float]] = []  # [sum, count]
    for n, o in zip(row, offsets, strict=True):
        blocks.append([want[n] - o, 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, c = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += c
    i = 0
    for s, c in blocks:
        for _ in range(int(c)):
            x[row[i]] = s / c + offsets[i]
            i += 1
