"""A jaxpr drawn as its dataflow graph: inputs on top, one box per equation, outputs below.

The drawing reads the jaxpr object itself (ours or JAX's: only `constvars`, `invars`, `eqns`,
`outvars`, `primitive.name` and `aval.str_short` are used), and names the variables as the
printer does, so the picture and the printed text beside it use the same letters.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .layout import layered
from .svg import Canvas, text_width

FONT = 12
LINE = FONT * 1.3


def _is_literal(v: Any) -> bool:
    return type(v).__name__ == "Literal"


def _is_drop(v: Any) -> bool:
    return type(v).__name__ == "DropVar"


def _open(jaxpr: Any) -> Any:
    """The open jaxpr of a ClosedJaxpr (or the jaxpr itself)."""
    return getattr(jaxpr, "jaxpr", jaxpr)


def _encode(n: int) -> str:
    # the printer's names: a..z, then ba, bb, ... (base 26 with a as zero)
    s = ""
    while True:
        s = chr(ord("a") + n % 26) + s
        n //= 26
        if n == 0:
            return s


def _sub_jaxprs(params: dict[str, Any]) -> list[Any]:
    found = []
    for key in sorted(params):
        value = params[key]
        for v in value if isinstance(value, (tuple, list)) else (value,):
            if hasattr(_open(v), "eqns"):
                found.append(_open(v))
    return found


def printed_names(jaxpr: Any) -> dict[int, str]:
    """id(var) -> the name `str(jaxpr)` prints for it: first appearance order, `_` if unread.

    Follows the printer when no sub-jaxpr is hoisted into a `let` prefix (the pictures of the
    course draw short jaxprs, where none is).
    """
    top = _open(jaxpr)
    names: dict[int, str] = {}
    read = {id(v) for v in top.outvars if not _is_literal(v)}
    for eqn in top.eqns:
        read.update(id(v) for v in eqn.invars if not _is_literal(v))
    counter = iter(range(10**6))

    def visit(j: Any, is_top: bool) -> None:
        for v in [*j.constvars, *j.invars]:
            names.setdefault(id(v), _encode(next(counter)))
        for eqn in j.eqns:
            for v in eqn.outvars:
                if _is_drop(v) or (is_top and id(v) not in read):
                    names[id(v)] = "_"
                else:
                    names.setdefault(id(v), _encode(next(counter)))
            for sub in _sub_jaxprs(eqn.params):
                visit(sub, False)

    visit(top, True)
    return names


def atom_text(v: Any, names: dict[int, str]) -> str:
    """An operand as the printer shows it, less the type of a literal."""
    if _is_literal(v):
        return f"{np.asarray(v.val).item()}" if not np.shape(v.val) else "[...]"
    return names.get(id(v), "?")


def typed(v: Any, names: dict[int, str]) -> str:
    return f"{atom_text(v, names)}:{v.aval.str_short(short_dtypes=True)}"


@dataclass
class Drawn:
    """Where a drawn jaxpr's nodes ended up, so a caller can connect two drawings."""

    boxes: dict[Hashable, tuple[float, float, float, float]] = field(default_factory=dict)
    producer: dict[int, Hashable] = field(default_factory=dict)  # id(var) -> node key
    width: float = 0.0
    height: float = 0.0

    def top(self, key: Hashable) -> tuple[float, float]:
        x, y, w, _ = self.boxes[key]
        return x + w / 2, y

    def bottom(self, key: Hashable) -> tuple[float, float]:
        x, y, w, h = self.boxes[key]
        return x + w / 2, y + h


def split_roles(jaxpr: Any, unknown_inputs: Sequence[bool]) -> dict[Hashable, str]:
    """Colour a jaxpr by partial evaluation's rule: known only if every input is known."""
    j = _open(jaxpr)
    unknown = {id(v) for v, u in zip(j.invars, unknown_inputs, strict=True) if u}
    roles: dict[Hashable, str] = {}
    for i, u in enumerate(unknown_inputs):
        roles[("in", i)] = "unknown" if u else "known"
    for i, eqn in enumerate(j.eqns):
        if any(id(v) in unknown for v in eqn.invars if not _is_literal(v)):
            unknown.update(id(v) for v in eqn.outvars)
            roles[("eqn", i)] = "unknown"
        else:
            roles[("eqn", i)] = "known"
    for i, v in enumerate(j.outvars):
        roles[("out", i)] = "unknown" if id(v) in unknown else "known"
    return roles


def draw_jaxpr(canvas: Canvas, jaxpr: Any, x: float = 0, y: float = 0, *,
               names: dict[int, str] | None = None, roles: dict[Hashable, str] | None = None,
               edge_labels: dict[int, str] | None = None, backwards: bool = False,
               input_notes: dict[int, str] | None = None, outputs: bool = True,
               out_names: Sequence[str] | None = None, eqn_role: str = "neutral") -> Drawn:
    """Draw `jaxpr` with its top-left corner at (x, y).

    roles: node key -> palette role, keys ("const", i), ("in", i), ("eqn", i), ("out", i).
    edge_labels: text for the edges carrying a variable: keyed (id(var), reader key) for one
        edge, or id(var) for every edge of that variable.
    eqn_role: the role of an equation box that `roles` does not name.
    backwards: arrows point from reader to producer (cotangents flow against the data).
    """
    j = _open(jaxpr)
    names = names if names is not None else printed_names(jaxpr)
    roles = roles or {}
    input_notes = input_notes or {}
    sizes: dict[Hashable, tuple[float, float]] = {}
    lines: dict[Hashable, list[str]] = {}
    producer: dict[int, Hashable] = {}

    def node(key: Hashable, text_lines: list[str]) -> None:
        lines[key] = text_lines
        w = max(text_width(t, FONT) for t in text_lines) + 18
        sizes[key] = (w, LINE * len(text_lines) + 12)

    for i, v in enumerate(j.constvars):
        node(("const", i), [typed(v, names), input_notes.get(id(v), "constvar")])
        producer[id(v)] = ("const", i)
    for i, v in enumerate(j.invars):
        note = input_notes.get(id(v))
        node(("in", i), [typed(v, names)] + ([note] if note else []))
        producer[id(v)] = ("in", i)
    for i, eqn in enumerate(j.eqns):
        binders = " ".join(typed(v, names) if names.get(id(v)) != "_" else "_"
                           for v in eqn.outvars)
        operands = " ".join(atom_text(v, names) for v in eqn.invars)
        node(("eqn", i), [binders, f"{eqn.primitive.name} {operands}".rstrip()])
        for v in eqn.outvars:
            producer[id(v)] = ("eqn", i)
    edges: list[tuple[Hashable, Hashable]] = []
    carried: list[Any] = []
    for i, eqn in enumerate(j.eqns):
        for v in eqn.invars:
            if not _is_literal(v) and id(v) in producer and (producer[id(v)], ("eqn", i)) \
                    not in edges:
                edges.append((producer[id(v)], ("eqn", i)))
                carried.append(v)
    outs: list[Hashable] = []
    if outputs:
        for i, v in enumerate(j.outvars):
            label = out_names[i] if out_names else f"out {i}"
            text_line = f"{label} = {atom_text(v, names)}" if _is_literal(v) else label
            node(("out", i), [text_line])
            outs.append(("out", i))
            if not _is_literal(v) and id(v) in producer:
                edges.append((producer[id(v)], ("out", i)))
                carried.append(v)
    inputs = [k for k in sizes if k[0] in ("const", "in")]
    lay = layered(sizes, edges, first=inputs, last=outs)
    drawn = Drawn(producer=producer, width=lay.width, height=lay.height)
    node_role: dict[Hashable, str] = {}
    for key, (cx, cy) in lay.centers.items():
        w, h = sizes[key]
        bx, by = x + cx - w / 2, y + cy - h / 2
        drawn.boxes[key] = (bx, by, w, h)
        kind = key[0]
        default = {"in": "input", "const": "neutral", "out": "output"}.get(kind, eqn_role)
        role = node_role[key] = roles.get(key, default)
        canvas.box(bx, by, w, h, lines[key], role=role, size=FONT, dash=kind == "const",
                   rx=12 if kind in ("in", "const", "out") else 5)
    edge_labels = edge_labels or {}
    for (a, b), v, pts in zip(edges, carried, lay.routes, strict=True):
        pts = [(x + px, y + py) for px, py in pts]
        text = edge_labels.get((id(v), b), edge_labels.get(id(v)))
        if backwards and text:  # a cotangent flows from the reader back to the producer
            canvas.curve(pts[::-1], role="cotangent")
        elif backwards:  # no cotangent here: a residual read by a linear equation
            canvas.curve(pts, role="muted", dash=True)
        else:
            role = node_role[a]
            canvas.curve(pts, role="neutral" if role in ("input", "output") else role)
        if text:
            canvas.label(*_halfway(pts), text, size=10.5,
                         color="#991b1b" if backwards else "#1f2937")
    return drawn


def _halfway(pts: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """The point half-way along a polyline."""
    lengths = [((bx - ax) ** 2 + (by - ay) ** 2) ** 0.5 for (ax, ay), (bx, by) in
               zip(pts, pts[1:], strict=False)]
    left = sum(lengths) / 2
    for (ax, ay), (bx, by), n in zip(pts, pts[1:], lengths, strict=False):
        if n >= left and n > 0:
            t = left / n
            return ax + t * (bx - ax), ay + t * (by - ay)
        left -= n
    return pts[-1]


def cotangent_edges(jaxpr: Any, log: Sequence[tuple[Any, Any, Any, Any]],
                    fmt: str = "ct {:+.3f}") -> dict[Any, str]:
    """Edge labels for a transposed jaxpr from a log of (primitive, var, cotangent, total).

    The reverse walk transposes equations last to first and each rule writes its inputs'
    cotangents in order, so the log is matched to (var, reading equation) edges in that order.
    The cotangents seeded at the outputs ("output" entries) label the edges into the outputs.
    """
    j = _open(jaxpr)
    labels: dict[Any, str] = {}
    entries = list(log)
    k = 0
    outs = {id(v): i for i, v in enumerate(j.outvars)}
    while k < len(entries) and str(entries[k][0]) == "output":
        _, var, ct, _ = entries[k]
        labels[(id(var), ("out", outs[id(var)]))] = fmt.format(float(np.sum(ct)))
        k += 1
    for i in range(len(j.eqns) - 1, -1, -1):
        eqn = j.eqns[i]
        ids = {id(v) for v in eqn.invars}
        while k < len(entries) and str(entries[k][0]) == str(eqn.primitive) and \
                id(entries[k][1]) in ids:
            _, var, ct, _ = entries[k]
            labels[(id(var), ("eqn", i))] = fmt.format(float(np.sum(ct)))
            ids.discard(id(var))
            k += 1
    return labels


def jaxpr_svg(jaxpr: Any, title: str, **kwargs) -> str:
    """One jaxpr as a standalone picture."""
    canvas = Canvas(title)
    draw_jaxpr(canvas, jaxpr, **kwargs)
    return canvas.to_svg()


@dataclass
class Panel:
    """One jaxpr in a row of pictures, with a heading above it.

    below: put this panel under the previous one (same column) instead of to its right.
    """

    heading: str
    jaxpr: Any
    options: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    below: bool = False


def panels_svg(rows: Sequence[Sequence[Panel]], title: str, *,
               links: Sequence[tuple[tuple[int, Hashable], tuple[int, Hashable], str]] = (),
               arrows: Sequence[tuple[int, int, str]] = (), gap: float = 70) -> str:
    """Jaxprs side by side (rows of panels), joined by arrows between panels or between nodes.

    Panels are numbered in reading order. links: ((panel, node key), (panel, node key), text)
    draws a dashed residual-coloured edge from the bottom of one node to the top of another.
    arrows: (panel, panel, text) draws a bold arrow from one panel to the other.
    """
    canvas = Canvas(title)
    drawn: list[Drawn] = []
    frames: list[tuple[float, float, float, float]] = []
    y = 0.0
    for row in rows:
        x, col_x, col_w, top_y, row_bottom = 0.0, 0.0, 0.0, y, y
        for panel in row:
            if panel.below and frames:
                px, py, pw, ph = frames[-1]
                x, y0 = px, py + ph + 84
            else:
                x, y0 = (col_x + col_w + gap if frames and col_w else 0.0), top_y
                col_x, col_w = x, 0.0
            canvas.text(x, y0, panel.heading, size=13, anchor="start", mono=False, weight="bold")
            top = y0 + 16
            if panel.note:
                canvas.text(x, y0 + 17, panel.note, size=11, anchor="start", mono=False,
                            color="#4b5563")
                top += 14
            d = draw_jaxpr(canvas, panel.jaxpr, x, top + 6, **panel.options)
            drawn.append(d)
            width = max(d.width, len(panel.heading) * 13 * 0.56, len(panel.note) * 11 * 0.56)
            frames.append((x, y0, width, top + 6 + d.height - y0))
            col_w = max(col_w, width)
            row_bottom = max(row_bottom, top + 6 + d.height)
        y = row_bottom + 50
        col_w = 0.0
    for (pa, ka), (pb, kb), text in links:
        x0, y0 = drawn[pa].bottom(ka)
        x1, y1 = drawn[pb].top(kb)
        canvas.curve([(x0, y0), (x1, y1)], role="residual", dash=True, width=1.6)
        canvas.label(x0 + 0.3 * (x1 - x0), y0 + 0.3 * (y1 - y0), text, size=10.5,
                     color="#6b21a8")
    for pa, pb, text in arrows:
        ax, ay, aw, ah = frames[pa]
        bx, by, bw, bh = frames[pb]
        if bx > ax + aw:  # to the right: a horizontal arrow at the upper panel's mid height
            sy = max(ay, by) + min(ah, bh) / 2
            sx, ex = ax + aw + 10, bx - 10
            canvas.line(sx, sy, ex, sy, width=2.2)
            canvas.label((sx + ex) / 2, sy - 13, text, size=11, mono=False)
        else:  # below: down from the first panel's bottom to the second's top
            sx, sy = ax + aw / 2, ay + ah + 6
            ex, ey = bx + bw / 2, by - 8
            canvas.curve([(sx, sy), (ex, ey)], width=2.2)
            canvas.label((sx + ex) / 2 + 8, (sy + ey) / 2, text, size=11, mono=False)
    return canvas.to_svg()
