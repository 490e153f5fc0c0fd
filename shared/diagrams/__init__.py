"""Pictures for the docs pages, drawn at build time as inline SVG from the course's own objects.

A page calls one of these functions from an executed block (`python exec="on" html="1"`) and
prints the result: a jaxpr is drawn from the jaxpr, a pytree from its treedef, a trace stack
from the traces recorded while a function ran. Pure Python, no network, no graphviz.
"""

from .jaxpr import draw_jaxpr, jaxpr_svg, printed_names, split_roles
from .svg import Canvas, figure

__all__ = ["Canvas", "draw_jaxpr", "figure", "jaxpr_svg", "printed_names", "split_roles"]
