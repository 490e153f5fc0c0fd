"""Two more kinds of picture: a sequence diagram of calls between lanes, and a flowchart of
questions asked in order, each with the outcome that stops the chain.

A page records the real calls (which method crossed which seam, in what order, stamping which
timer) or runs the real branches, and hands the record to these functions, which only lay it out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from .svg import Canvas, text_width


class Message(NamedTuple):
    """One arrow of a sequence diagram, from lane `src` to lane `dst`.

    label: above the arrow; note: under it (a second line, e.g. the timer stamped);
    kind: "call", "return" (dashed, pointing back) or "blocking" (drawn heavy and red).
    """

    src: int
    dst: int
    label: str
    note: str = ""
    kind: str = "call"


_ROLE_OF_KIND = {"call": "known", "return": "neutral", "blocking": "cotangent"}


def sequence_svg(lanes: Sequence[str], messages: Sequence[Message], title: str, *,
                 groups: Sequence[tuple[int, int, str]] = ()) -> str:
    """Lanes left to right, time top to bottom, one arrow per message.

    groups: (first message, last message, caption) brackets drawn at the left, e.g. one per
    crossing of a training step ("inputs down", "program down", ...).
    """
    canvas = Canvas(title)
    longest = max(text_width(m.label, 11.5) for m in messages) if messages else 0
    gap = max(220.0, longest + 40)
    head_w, head_h, step = min(gap - 20, 200.0), 40.0, 52.0
    xs = [i * gap for i in range(len(lanes))]
    bottom = head_h + 24 + step * len(messages)
    for x, name in zip(xs, lanes, strict=True):
        canvas.box(x - head_w / 2, 0, head_w, head_h, name.split("\n"), role="input", size=12,
                   mono=False, bold_first=True)
        canvas.path(f"M{x},{head_h} L{x},{bottom}", [(x, head_h), (x, bottom)], arrow=False,
                    dash=True, color="#9ca3af", width=1.0)
    for k, m in enumerate(messages):
        y = head_h + 30 + step * k
        x0, x1 = xs[m.src], xs[m.dst]
        direction = 1 if x1 > x0 else -1
        role = _ROLE_OF_KIND[m.kind]
        canvas.line(x0 + 3 * direction, y, x1 - 4 * direction, y, role=role,
                    dash=m.kind == "return", width=2.6 if m.kind == "blocking" else 1.4)
        mid = (x0 + x1) / 2
        canvas.text(mid, y - 10, m.label, size=11.5, weight="bold" if m.kind != "return" else None)
        if m.note:
            canvas.text(mid, y + 11, m.note, size=10.5, mono=False,
                        color="#b91c1c" if m.kind == "blocking" else "#4b5563")
    left = xs[0] - head_w / 2 - 16
    for first, last, caption in groups:
        y0, y1 = head_h + 14 + step * first, head_h + 42 + step * last
        canvas.path(f"M{left + 6},{y0} L{left},{y0} L{left},{y1} L{left + 6},{y1}",
                    [(left, y0), (left, y1)], arrow=False, color="#6b7280")
        canvas.text(left - 6, (y0 + y1) / 2, caption, size=11.5, anchor="end", mono=False,
                    weight="bold", color="#374151")
    return canvas.to_svg()


class Branch(NamedTuple):
    """One question of a flowchart and what happens when the answer is yes."""

    question: str
    outcome: Sequence[str]  # lines of the box the "yes" arrow points to
    role: str = "known"  # the outcome box's colour (svg.PALETTE)


def flowchart_svg(branches: Sequence[Branch], otherwise: Sequence[str], title: str, *,
                  start: str = "start", otherwise_role: str = "cotangent") -> str:
    """Questions top to bottom in the order they are asked; "yes" goes right to an outcome,
    "no" goes down to the next question; the last "no" ends in `otherwise`."""
    canvas = Canvas(title)
    dw = max(max(text_width(b.question, 11.5) for b in branches) / 2 + 40, 110.0)
    dh, step = 30.0, 92.0
    out_x = dw + 70
    canvas.box(-70, -56, 140, 30, [start], role="neutral", size=12, mono=False)
    canvas.line(0, -24, 0, -dh - 3)
    for k, b in enumerate(branches):
        y = k * step
        canvas.polygon([(0, y - dh), (dw, y), (0, y + dh), (-dw, y)], role="input")
        canvas.text(0, y, b.question, size=11.5)
        width = max(text_width(line, 11) for line in b.outcome) + 24
        height = 14 * len(b.outcome) + 14
        canvas.line(dw + 2, y, out_x - 3, y)
        canvas.text(dw + 26, y - 9, "yes", size=10.5, mono=False, color="#15803d")
        canvas.box(out_x, y - height / 2, width, height, list(b.outcome), role=b.role, size=11)
        canvas.line(0, y + dh + 2, 0, y + step - dh - 3)
        canvas.text(8, y + dh + (step - 2 * dh) / 2, "no", size=10.5, anchor="start",
                    mono=False, color="#b91c1c")
    y = len(branches) * step - dh
    width = max(text_width(line, 11) for line in otherwise) + 24
    canvas.box(-width / 2, y, width, 14 * len(otherwise) + 14, list(otherwise),
               role=otherwise_role, size=11)
    return canvas.to_svg()
