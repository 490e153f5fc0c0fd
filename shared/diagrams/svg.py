"""A small SVG canvas: boxes, text, arrows and curves, sized to what was drawn.

No dependency beyond the standard library, and no network: the docs pages call the drawing
functions of this package at build time and put the returned `<svg>` text inline in the page.
Text widths are estimated (a monospace glyph is 0.6 em wide), which is all a layout of short
labels needs.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from xml.sax.saxutils import escape, quoteattr

MONO = "ui-monospace, SFMono-Regular, Menlo, Consolas, 'Liberation Mono', monospace"
SANS = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"

# One palette for every picture: a role names what a colour means, the same on every page.
PALETTE = {
    "neutral": ("#f3f4f6", "#4b5563"),
    "input": ("#eef2ff", "#4338ca"),
    "known": ("#e0ecfb", "#1d5fb4"),  # known / primal / forward
    "unknown": ("#fdebd8", "#b45309"),  # unknown / tangent / linear
    "residual": ("#f1e6fa", "#7e22ce"),  # residuals crossing between programs
    "batch": ("#dcf3e4", "#15803d"),  # the batch axis
    "cotangent": ("#fde2e2", "#b91c1c"),  # cotangents flowing backwards
    "muted": ("#fafafa", "#9ca3af"),  # planned, unbuilt, unbatched
    "output": ("#fff7d6", "#a16207"),
}

_ids = itertools.count()


def text_width(s: str, size: float, mono: bool = True) -> float:
    """Estimated width of one line of text in pixels."""
    return len(s) * size * (0.6 if mono else 0.56)


def fmt(v: float) -> str:
    """A coordinate with at most one decimal: small, stable output."""
    r = round(v, 1)
    return str(int(r)) if r == int(r) else str(r)


class Canvas:
    """Collects SVG elements and tracks their extent; `to_svg()` frames them with a margin."""

    def __init__(self, title: str, *, background: str | None = "#ffffff"):
        self.title = title
        self.background = background
        self.items: list[str] = []
        self.markers: dict[str, str] = {}  # stroke colour -> marker id
        self.uid = f"d{next(_ids)}"
        self.x0 = self.y0 = float("inf")
        self.x1 = self.y1 = float("-inf")

    def _extend(self, x0: float, y0: float, x1: float, y1: float) -> None:
        self.x0, self.y0 = min(self.x0, x0), min(self.y0, y0)
        self.x1, self.y1 = max(self.x1, x1), max(self.y1, y1)

    def _marker(self, color: str) -> str:
        if color not in self.markers:
            self.markers[color] = f"{self.uid}-arrow{len(self.markers)}"
        return self.markers[color]

    def rect(self, x: float, y: float, w: float, h: float, *, role: str = "neutral",
             fill: str | None = None, stroke: str | None = None, rx: float = 5,
             dash: bool = False, width: float = 1.3) -> None:
        f, s = PALETTE[role]
        attrs = (f'x="{fmt(x)}" y="{fmt(y)}" width="{fmt(w)}" height="{fmt(h)}" rx="{fmt(rx)}" '
                 f'fill="{fill or f}" stroke="{stroke or s}" stroke-width="{width}"')
        if dash:
            attrs += ' stroke-dasharray="5 3"'
        self.items.append(f"<rect {attrs}/>")
        self._extend(x, y, x + w, y + h)

    def text(self, x: float, y: float, s: str, *, size: float = 12, anchor: str = "middle",
             mono: bool = True, color: str = "#1f2937", weight: str | None = None,
             italic: bool = False) -> None:
        """One line of text; (x, y) is the anchor point on the baseline's vertical middle."""
        attrs = (f'x="{fmt(x)}" y="{fmt(y)}" font-size="{fmt(size)}" text-anchor="{anchor}" '
                 f'dominant-baseline="central" font-family={quoteattr(MONO if mono else SANS)} '
                 f'fill="{color}"')
        if weight:
            attrs += f' font-weight="{weight}"'
        if italic:
            attrs += ' font-style="italic"'
        self.items.append(f"<text {attrs}>{escape(s)}</text>")
        w = text_width(s, size, mono)
        left = {"start": x, "middle": x - w / 2, "end": x - w}[anchor]
        self._extend(left, y - size * 0.7, left + w, y + size * 0.7)

    def label(self, x: float, y: float, s: str, *, size: float = 11, color: str = "#1f2937",
              background: str = "#ffffff", mono: bool = True) -> None:
        """Text on a small opaque plate, for labels that sit on top of edges."""
        w = text_width(s, size, mono) + 6
        h = size + 4
        self.items.append(f'<rect x="{fmt(x - w / 2)}" y="{fmt(y - h / 2)}" width="{fmt(w)}" '
                          f'height="{fmt(h)}" rx="3" fill="{background}" fill-opacity="0.92"/>')
        self.text(x, y, s, size=size, color=color, mono=mono)

    def box(self, x: float, y: float, w: float, h: float, lines: Sequence[str], *,
            role: str = "neutral", size: float = 12, dash: bool = False, rx: float = 5,
            bold_first: bool = False, mono: bool = True) -> None:
        """A rectangle with centred lines of text; (x, y) is its top-left corner."""
        self.rect(x, y, w, h, role=role, dash=dash, rx=rx)
        step = size * 1.3
        top = y + h / 2 - step * (len(lines) - 1) / 2
        for i, line in enumerate(lines):
            self.text(x + w / 2, top + i * step, line, size=size, mono=mono,
                      weight="bold" if bold_first and i == 0 else None)

    def path(self, d: str, points: Sequence[tuple[float, float]], *, role: str = "neutral",
             color: str | None = None, arrow: bool = True, dash: bool = False,
             width: float = 1.4) -> None:
        """A path given as SVG path data; `points` are the places it passes (for the extent)."""
        stroke = color or PALETTE[role][1]
        attrs = f'd="{d}" fill="none" stroke="{stroke}" stroke-width="{width}"'
        if dash:
            attrs += ' stroke-dasharray="5 3"'
        if arrow:
            attrs += f' marker-end="url(#{self._marker(stroke)})"'
        self.items.append(f"<path {attrs}/>")
        for px, py in points:
            self._extend(px, py, px, py)

    def polygon(self, points: Sequence[tuple[float, float]], *, role: str = "neutral",
                width: float = 1.3) -> None:
        """A closed, filled shape through `points` (a flowchart's decision diamond)."""
        f, s = PALETTE[role]
        d = "M" + " L".join(f"{fmt(x)},{fmt(y)}" for x, y in points) + " Z"
        self.items.append(f'<path d="{d}" fill="{f}" stroke="{s}" stroke-width="{width}"/>')
        for x, y in points:
            self._extend(x, y, x, y)

    def line(self, x1: float, y1: float, x2: float, y2: float, **kwargs) -> None:
        self.path(f"M{fmt(x1)},{fmt(y1)} L{fmt(x2)},{fmt(y2)}", [(x1, y1), (x2, y2)], **kwargs)

    def curve(self, points: Sequence[tuple[float, float]], *, vertical: bool = True,
              **kwargs) -> None:
        """A smooth curve through `points`: one cubic per segment, tangents along the flow."""
        (x, y), *rest = points
        d = [f"M{fmt(x)},{fmt(y)}"]
        for nx, ny in rest:
            if vertical:
                my = (y + ny) / 2
                d.append(f"C{fmt(x)},{fmt(my)} {fmt(nx)},{fmt(my)} {fmt(nx)},{fmt(ny)}")
            else:
                mx = (x + nx) / 2
                d.append(f"C{fmt(mx)},{fmt(y)} {fmt(mx)},{fmt(ny)} {fmt(nx)},{fmt(ny)}")
            x, y = nx, ny
        self.path(" ".join(d), points, **kwargs)

    @contextmanager
    def link(self, href: str) -> Iterator[None]:
        """Everything drawn inside the block is one hyperlink."""
        self.items.append(f"<a href={quoteattr(href)}>")
        yield
        self.items.append("</a>")

    def to_svg(self, margin: float = 10) -> str:
        """The picture as one `<svg>` element, scaled down by CSS when the column is narrow."""
        if not self.items:
            raise ValueError(f"nothing was drawn on the canvas {self.title!r}")
        x0, y0 = self.x0 - margin, self.y0 - margin
        w, h = self.x1 - self.x0 + 2 * margin, self.y1 - self.y0 + 2 * margin
        defs = "".join(
            f'<marker id="{mid}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
            f'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
            f'fill="{color}"/></marker>' for color, mid in self.markers.items())
        background = ""
        if self.background:
            background = (f'<rect x="{fmt(x0)}" y="{fmt(y0)}" width="{fmt(w)}" height="{fmt(h)}" '
                          f'rx="8" fill="{self.background}"/>')
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" class="course-diagram" role="img" '
            f'viewBox="{fmt(x0)} {fmt(y0)} {fmt(w)} {fmt(h)}" width="{fmt(w)}" '
            f'height="{fmt(h)}" aria-labelledby="{self.uid}-title">'
            f'<title id="{self.uid}-title">{escape(self.title)}</title>'
            f"<defs>{defs}</defs>{background}" + "".join(self.items) + "</svg>"
        )


def figure(svg: str, caption: str) -> str:
    """The SVG in a `<figure>` with a caption, ready to print from a markdown-exec block.

    The caption is plain text in which `backticks` mark code.
    """
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", escape(caption))
    return f'<figure class="course-figure">{svg}<figcaption>{text}</figcaption></figure>'

