"""A pytree drawn as a tree: its nodes from the treedef, its leaves in flatten order below.

Only the treedef's public methods are read (`children()`, `node_data()`), so the same function
draws ours and JAX's treedefs.
"""

from __future__ import annotations

import collections
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from .layout import layered
from .svg import Canvas, text_width

FONT = 12


def describe_leaf(leaf: Any) -> str:
    """`f32[2,3]` for an array, the value itself for a Python scalar."""
    if isinstance(leaf, (bool, int, float, complex, str)):
        return repr(leaf)
    shape = np.shape(leaf)
    dtype = np.asarray(leaf).dtype
    short = {"f": "f", "i": "i", "u": "u", "b": "bool", "c": "c"}.get(dtype.kind, dtype.name)
    bits = "" if short == "bool" else str(dtype.itemsize * 8)
    return f"{short}{bits}[{','.join(map(str, shape))}]"


def _child_keys(typ: type, data: Any, n: int) -> list[str]:
    """How flatten names each child: dict keys, namedtuple fields, or positions."""
    if issubclass(typ, dict):
        found = data[1] if issubclass(typ, collections.defaultdict) else data
        return [repr(k) for k in found]
    fields = getattr(typ, "_fields", None)
    if fields is not None:
        return [f".{f}" for f in fields]
    return [f"[{i}]" for i in range(n)]


def pytree_svg(treedef: Any, leaves: Sequence[Any], title: str) -> str:
    """The tree of `treedef` with `leaves` (its flattened leaves) hung in order below it."""
    sizes: dict[Hashable, tuple[float, float]] = {}
    text: dict[Hashable, list[str]] = {}
    role: dict[Hashable, str] = {}
    edges: list[tuple[Hashable, Hashable]] = []
    keys: list[str] = []
    leaf_nodes: list[Hashable] = []
    count = iter(range(10**6))
    leaf_index = iter(range(len(leaves)))

    def add(node: Hashable, lines: list[str], kind: str) -> None:
        text[node] = lines
        role[node] = kind
        w = max(text_width(t, FONT) for t in lines) + 18
        sizes[node] = (w, 1.3 * FONT * len(lines) + 12)

    def walk(td: Any) -> Hashable:
        node = next(count)
        data = td.node_data()
        if data is None:
            i = next(leaf_index)
            add(node, [f"leaf {i}", describe_leaf(leaves[i])], "batch")
            leaf_nodes.append(node)
            return node
        typ, aux = data
        children = td.children()
        if typ is type(None):
            add(node, ["None", "no leaf"], "muted")
            return node
        count_text = "1 child" if len(children) == 1 else f"{len(children)} children"
        add(node, [typ.__name__, count_text], "known")
        for key, child in zip(_child_keys(typ, aux, len(children)), children, strict=True):
            edges.append((node, walk(child)))
            keys.append(key)
        return node

    walk(treedef)
    lay = layered(sizes, edges, last=leaf_nodes, layer_gap=52, keep_order=True)
    canvas = Canvas(title)
    for node, (cx, cy) in lay.centers.items():
        w, h = sizes[node]
        canvas.box(cx - w / 2, cy - h / 2, w, h, text[node], role=role[node], size=FONT,
                   rx=12 if role[node] == "batch" else 5, dash=role[node] == "muted")
    for key, pts in zip(keys, lay.routes, strict=True):
        canvas.curve(pts, role="known", width=1.3)
        (x0, y0), (x1, y1) = pts[0], pts[1]
        canvas.label(x0 + 0.7 * (x1 - x0), y0 + 0.7 * (y1 - y0), key, size=11,
                     color="#1d4ed8")
    bottom = lay.height + 34
    canvas.text(0, bottom, f"leaves = [{', '.join(describe_leaf(v) for v in leaves)}]",
                size=12, anchor="start", color="#15803d")
    canvas.text(0, bottom + 22, f"treedef = {treedef}", size=12, anchor="start")
    return canvas.to_svg()
