"""The pictures that are not a jaxpr or a pytree: trace stacks, batch axes, scans, the stage map.

Each function takes the values a page recorded from the real objects (the traces that were
current while a function ran, the batch dims a rule logged, the residuals a scan stacked) and
lays them out; none of them computes anything about JAX itself.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

from .svg import Canvas, text_width

ROLE_OF_TRACE = {
    "EvalTrace": "neutral",
    "DynamicJaxprTrace": "input",
    "JaxprTrace": "residual",
    "JVPTrace": "unknown",
    "LinearizeTrace": "unknown",
    "BatchTrace": "batch",
}


def trace_stack_svg(columns: Sequence[tuple[str, Sequence[tuple[str, str]]]], title: str, *,
                    footers: Sequence[Sequence[str]] = (), per_row: int = 2) -> str:
    """Stacks of traces side by side, the current one on top, each pointing to its parent.

    columns: (heading, [(trace class name, what it is doing), ...] current first).
    footers: lines of text under each column (what the function's arguments were).
    per_row: columns per row; further columns start a new row below.
    """
    canvas = Canvas(title)
    box_w = max(text_width(note, 11, mono=False) + 24 for _, stack in columns for _, note in stack)
    box_w = max(box_w, 190)
    box_h, step, col_gap = 44, 74, 84
    row_top = 0.0
    for start in range(0, len(columns), per_row):
        row_bottom = row_top
        for c in range(start, min(start + per_row, len(columns))):
            heading, stack = columns[c]
            x = (c - start) * (box_w + col_gap)
            canvas.text(x + box_w / 2, row_top, heading, size=14, weight="bold")
            for i, (name, note) in enumerate(stack):
                y = row_top + 22 + i * step
                canvas.rect(x, y, box_w, box_h, role=ROLE_OF_TRACE.get(name, "neutral"))
                canvas.text(x + box_w / 2, y + 15, name, size=12.5, weight="bold")
                canvas.text(x + box_w / 2, y + 31, note, size=11, mono=False, color="#374151")
                if i == 0:
                    canvas.text(x + box_w + 6, y + box_h / 2, "\u2190 current", size=11,
                                anchor="start", mono=False, color="#b91c1c")
                if i + 1 < len(stack):
                    canvas.line(x + box_w / 2, y + box_h + 2, x + box_w / 2, y + step - 3)
                    canvas.text(x + box_w / 2 + 6, y + box_h + (step - box_h) / 2,
                                "parent_trace", size=10.5, anchor="start", color="#6b7280")
            bottom = row_top + 22 + len(stack) * step - 10
            lines = footers[c] if c < len(footers) else ()
            for k, line in enumerate(lines):
                canvas.text(x, bottom + 18 * k, line, size=11.5, anchor="start")
            row_bottom = max(row_bottom, bottom + 18 * len(lines))
        row_top = row_bottom + 40
    return canvas.to_svg()


def _strip(canvas: Canvas, x: float, y: float, shape: Sequence[int], bdim: int | None,
           cell: float = 30, h: float = 24) -> float:
    """An array's shape as a row of cells, the batch axis green; returns the strip's width."""
    if not shape:
        canvas.rect(x, y, cell, h, role="muted", rx=3)
        canvas.text(x + cell / 2, y + h / 2, "()", size=11)
        return cell
    for k, n in enumerate(shape):
        role = "batch" if k == bdim else ("muted" if bdim is None else "neutral")
        canvas.rect(x + k * cell, y, cell, h, role=role, rx=3)
        canvas.text(x + k * cell + cell / 2, y + h / 2, str(n), size=12,
                    weight="bold" if k == bdim else None)
    return cell * len(shape)


def batch_axis_svg(steps: Sequence[tuple[str, Sequence[tuple[Sequence[int], int | None]],
                                         tuple[Sequence[int], int | None]]],
                   title: str) -> str:
    """One row per batching rule that ran: its inputs' shapes, then its output's.

    A shape is a row of cells, one per axis; the batch axis is green, an operand that is not
    batched is grey. steps: (primitive name, [(shape, batch dim)...], (shape, batch dim)).
    """
    canvas = Canvas(title)
    name_w = max(text_width(name, 12.5) for name, _, _ in steps) + 12
    row_h = 40
    canvas.text(0, -6, "rule", size=11, anchor="start", mono=False, color="#6b7280")
    canvas.text(name_w + 8, -6, "operands", size=11, anchor="start", mono=False,
                color="#6b7280")
    widest = 0.0
    for r, (_, ins, _) in enumerate(steps):
        x = name_w + 8
        for shape, bdim in ins:
            x += _strip(canvas, x, 12 + r * row_h, shape, bdim) + 16
        widest = max(widest, x)
    out_x = widest + 44
    canvas.text(out_x, -6, "result", size=11, anchor="start", mono=False, color="#6b7280")
    for r, (name, _, (shape, bdim)) in enumerate(steps):
        y = 12 + r * row_h
        canvas.text(name_w, y + 12, name, size=12.5, anchor="end", weight="bold")
        canvas.line(widest - 4, y + 12, out_x - 8, y + 12)
        w = _strip(canvas, out_x, y, shape, bdim)
        note = f"batch on axis {bdim}" if bdim is not None else "not batched"
        canvas.text(out_x + w + 10, y + 12, note, size=11, anchor="start", mono=False,
                    color="#15803d" if bdim is not None else "#6b7280")
    canvas.text(0, 12 + len(steps) * row_h + 6, "one cell per axis, holding its size: the "
                "batch axis green, an operand with no batch axis grey", size=11,
                anchor="start", mono=False, color="#6b7280")
    return canvas.to_svg()


def scan_residuals_svg(carries: Sequence[float], residuals: Sequence[float],
                       cotangents: Sequence[float], title: str, *,
                       residual_name: str = "res", carry_name: str = "c") -> str:
    """A forward scan stacking one residual per iteration, and the reverse scan reading them.

    carries: c_0 ... c_n of the forward scan; residuals: one per iteration; cotangents: the
    carry cotangent of the reverse scan after each of its steps, starting with the seed.
    """
    n = len(residuals)
    canvas = Canvas(title)
    box_w, box_h, gap = 120, 40, 64
    step = box_w + gap
    left = 150

    def col(i: int) -> float:
        return left + i * step

    canvas.text(0, 8, "forward scan (known half): runs now", size=13, anchor="start",
                mono=False, weight="bold")
    fy, sy, ry = 30, 120, 206
    for i in range(n):
        canvas.box(col(i), fy, box_w, box_h, [f"iteration {i}", "body(c, x)"], role="known",
                   size=11.5)
        canvas.box(col(i) + 20, sy, box_w - 40, 30, [f"{residuals[i]:+.4f}"], role="residual",
                   size=11.5, rx=3)
        canvas.line(col(i) + box_w / 2, fy + box_h + 2, col(i) + box_w / 2, sy - 3,
                    role="residual")
        canvas.line(col(i) + box_w / 2, sy + 32, col(i) + box_w / 2, ry - 3, role="residual")
    for i in range(n + 1):  # carries between forward iterations
        if i == 0:
            x0, x1 = left - 60, left - 4
        elif i == n:
            x0, x1 = col(n - 1) + box_w + 4, col(n - 1) + box_w + 60
        else:
            x0, x1 = col(i - 1) + box_w + 4, col(i) - 4
        canvas.line(x0, fy + box_h / 2, x1, fy + box_h / 2, role="known")
        canvas.label((x0 + x1) / 2, fy + box_h / 2 - 13, f"{carry_name}={carries[i]:.3g}",
                     size=10.5)
    canvas.text(0, sy + 7, "stacked residuals", size=11.5, anchor="start", mono=False,
                color="#6b21a8")
    canvas.text(0, sy + 23, f"{residual_name}, shape ({n},)", size=11.5, anchor="start",
                mono=False, color="#6b21a8")
    canvas.text(0, ry + box_h + 36,
                "reverse scan (transposed linear half): runs later, right to left",
                size=13, anchor="start", mono=False, weight="bold")
    for i in range(n):
        canvas.box(col(i), ry, box_w, box_h, [f"iteration {i}", "transposed body"],
                   role="cotangent", size=11.5)
    for k in range(n + 1):  # cotangent carry, flowing right to left
        if k == 0:
            x0, x1 = col(n - 1) + box_w + 60, col(n - 1) + box_w + 4
        elif k == n:
            x0, x1 = col(0) - 4, left - 60
        else:
            i = n - k  # from iteration i to iteration i - 1
            x0, x1 = col(i) - 4, col(i - 1) + box_w + 4
        canvas.line(x0, ry + box_h / 2, x1, ry + box_h / 2, role="cotangent")
        canvas.label((x0 + x1) / 2, ry + box_h / 2 + 14, f"ct={cotangents[k]:.4g}", size=10.5,
                     color="#991b1b")
    return canvas.to_svg()


def stage_map_svg(titles: Mapping[int, str], built: set[int], links: Mapping[int, str]) -> str:
    """The twelve stages as a snake of boxes: built ones solid and linked, planned ones dashed."""
    canvas = Canvas("The stage map: each arrow reads 'builds on'")
    w, h, gx, gy = 128, 46, 34, 44
    place = {n: (n - 1, 0.0) for n in range(1, 7)}  # first row left to right
    place.update({7: (5, 1.0), 8: (4, 1.0), 9: (3, 1.0), 10: (2, 1.0), 11: (2, 2.0),
                  12: (1, 1.5)})

    def corner(n: int) -> tuple[float, float]:
        c, r = place[n]
        return c * (w + gx), r * (h + gy)

    for n, title in titles.items():
        x, y = corner(n)
        lines = [f"{n} \u00b7 {title}", "built" if n in built else "planned"]
        if n in built and n in links:
            with canvas.link(links[n]):
                canvas.box(x, y, w, h, lines, role="known", size=12, mono=False, bold_first=True)
        else:
            canvas.box(x, y, w, h, lines, role="muted", size=12, mono=False, dash=True)
    arrows = [(n, n + 1) for n in range(1, 10)] + [(9, 11), (10, 12), (11, 12)]
    for a, b in arrows:
        (ax, ay), (bx, by) = corner(a), corner(b)
        role = "known" if a in built and b in built else "muted"
        if ay == by:  # same row
            if bx > ax:
                canvas.line(ax + w + 2, ay + h / 2, bx - 3, by + h / 2, role=role)
            else:
                canvas.line(ax - 2, ay + h / 2, bx + w + 3, by + h / 2, role=role)
        elif bx == ax:  # straight down
            canvas.line(ax + w / 2, ay + h + 2, bx + w / 2, by - 3, role=role)
        else:  # a diagonal: leave from the side, arrive at the side
            sx = ax if bx < ax else ax + w
            ex = bx + w if bx < ax else bx
            canvas.curve([(sx - 2, ay + h / 2), (ex + 3, by + h / 2)], vertical=False,
                         role=role)
    return canvas.to_svg()



def cache_stack_svg(layers: Sequence[tuple[str, str, str, str]], title: str, *,
                    bottom: str, aside: Sequence[tuple[str, str, str]] = (),
                    wrap: int = 50, aside_wrap: int = 38) -> str:
    """Caches stacked in the order a call asks them, each with the key it compares.

    layers: (name, what its key compares, what a hit does, what goes down to the next layer),
    asked top to bottom; bottom: what happens below the last one.
    aside: (name, what its key compares, how it joins the stack), drawn to the right.
    wrap, aside_wrap: characters per line of a key, in the stack and beside it.
    """
    canvas = Canvas(title)
    box_w = text_width("x" * wrap, 11) + 28
    gap = 34
    mid = box_w / 2

    def layer_box(x: float, top: float, width: int, number: int, name: str, key: str,
                  role: str) -> float:
        lines = textwrap.wrap("key: " + key, width)
        h = 32 + 15 * len(lines)
        canvas.rect(x, top, text_width("x" * width, 11) + 28, h, role=role)
        canvas.text(x + 12, top + 15, f"{number} \u00b7 {name}", size=12.5, anchor="start",
                    weight="bold", mono=False)
        for k, line in enumerate(lines):
            canvas.text(x + 12, top + 34 + 15 * k, line, size=11, anchor="start",
                        color="#374151")
        return h

    canvas.box(mid - 80, 0, 160, 30, ["a jitted call"], role="input", size=12, mono=False,
               bold_first=True)
    y = 30.0 + gap
    canvas.line(mid, 32, mid, y - 3, role="input")
    for i, (name, key, on_hit, down) in enumerate(layers):
        h = layer_box(0, y, wrap, i + 1, name, key, "known")
        canvas.text(-10, y + h / 2, f"{on_hit} \u2190", size=11, anchor="end", mono=False,
                    color="#15803d")
        canvas.line(mid, y + h + 2, mid, y + h + gap - 3, role="unknown")
        canvas.text(mid + 8, y + h + gap / 2, down, size=11, anchor="start", mono=False,
                    color="#b45309")
        y += h + gap
    bottom_w = text_width(bottom, 12, mono=False) + 28
    canvas.box(mid - bottom_w / 2, y, bottom_w, 30, [bottom], role="unknown", size=12,
               mono=False)
    ax, ay = box_w + 60, 30.0 + gap
    for k, (name, key, joins) in enumerate(aside):
        h = layer_box(ax, ay, aside_wrap, len(layers) + k + 1, name, key, "residual")
        lines = textwrap.wrap(joins, aside_wrap + 8)
        for n, line in enumerate(lines):
            canvas.text(ax, ay + h + 16 + 15 * n, line, size=11, anchor="start", mono=False,
                        color="#6b21a8")
        canvas.curve([(ax - 4, ay + 22), (box_w + 4, 30.0 + gap + 22)], vertical=False,
                     role="residual", dash=True)
        ay += h + 40 + 15 * len(lines)
    return canvas.to_svg()


def cost_bars_svg(rows: Sequence[tuple[str, Sequence[tuple[str, float, str]]]], title: str, *,
                  unit: str = "us", px_per_unit: float = 40) -> str:
    """Horizontal bars, each a stack of measured parts: (row label, [(part, amount, role)]).

    A part's label is written inside it when it fits, else under the bar; each bar ends with
    its total. The amounts are what the page measured while it was built.
    """
    canvas = Canvas(title)
    label_w = max(text_width(label, 12, mono=False) for label, _ in rows) + 16
    y = 0.0
    for label, parts in rows:
        canvas.text(label_w - 10, y + 13, label, size=12, anchor="end", mono=False)
        x, below = label_w, []
        for part, amount, role in parts:
            w = max(amount * px_per_unit, 1.0)
            canvas.rect(x, y, w, 26, role=role, rx=2)
            text = f"{part} {amount:.1f}"
            if text_width(text, 10.5, mono=False) + 8 < w:
                canvas.text(x + w / 2, y + 13, text, size=10.5, mono=False)
            elif amount > 0:
                below.append((x + w / 2, text))
            x += w
        total = sum(amount for _, amount, _ in parts)
        canvas.text(x + 8, y + 13, f"{total:.1f} {unit}", size=12, anchor="start", mono=False,
                    weight="bold")
        for k, (cx, text) in enumerate(below):
            canvas.text(cx, y + 38 + 13 * k, text, size=10, mono=False, color="#4b5563")
        y += 46 + 13 * len(below)
    return canvas.to_svg()
