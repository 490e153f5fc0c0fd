"""A lazy IR graph as a picture: one box per node, operands above their users, roots marked.

Stage 10's page draws one training step's graph from the real post order (`ir.compute_post_order`)
with `ir_graph_svg`; the layered layout is layout.py's. Roles colour the boxes: device data
(the graph's parameters), constants, ops, and the roots a sync computes.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from .layout import layered
from .svg import Canvas, text_width


def ir_graph_svg(nodes: Sequence[tuple[Hashable, Sequence[str], str]],
                 edges: Sequence[tuple[Hashable, Hashable]], title: str) -> str:
    """nodes: (key, lines of text, role) in post order; edges: (operand, user)."""
    sizes = {key: (max(text_width(line, 10.5) for line in lines) + 16, 14 * len(lines) + 10)
             for key, lines, _ in nodes}
    lay = layered(sizes, list(edges), layer_gap=34, node_gap=12)
    canvas = Canvas(title)
    for route in lay.routes:
        canvas.curve(route, role="neutral", width=1.0)
    for key, lines, role in nodes:
        (cx, cy), (w, h) = lay.centers[key], sizes[key]
        canvas.box(cx - w / 2, cy - h / 2, w, h, list(lines), role=role, size=10.5,
                   bold_first=True)
    return canvas.to_svg()
