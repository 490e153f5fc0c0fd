"""The jaxpr printer: a small Wadler-Lindig document layout and JAX's jaxpr format on top of it.

JAX: jax/_src/pretty_printer.py (the Doc API; the layout itself is C++ in jaxlib) and the
`pp_*` functions and `pp_eqn_rules` of jax/_src/core.py (core.py re-exports ours). A document is
text, breaks, nesting and groups; a group prints on one line if it fits in the width (80), else
its breaks become newlines. That single rule is why short jaxprs print on one line and long ones
one equation per line.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .jaxpr import Atom, ClosedJaxpr, DropVar, Jaxpr, JaxprEqn, Literal, Var

if TYPE_CHECKING:  # annotations only: core.py imports this module to re-export it
    from .core import Primitive

# ------------------------------------------ documents ------------------------------------------


class Doc:
    """A document to lay out. `a + b` concatenates; `str(doc)` formats at width 80."""

    __slots__ = ()

    def __add__(self, other: Doc) -> Doc:
        return concat([self, other])

    def format(self, width: int = 80, *, use_color: bool | None = None) -> str:
        """The laid-out text; with use_color, keywords and types in ANSI colors (as JAX)."""
        return _format(self, width, bool(use_color))

    def __str__(self) -> str:
        return self.format()


class _Text(Doc):
    __slots__ = ("text", "color")

    def __init__(self, text: str, color: str | None = None):
        self.text, self.color = text, color


class _Concat(Doc):
    __slots__ = ("children",)

    def __init__(self, children: Sequence[Doc]):
        self.children = list(children)


class _Break(Doc):
    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


class _Group(Doc):
    __slots__ = ("child",)

    def __init__(self, child: Doc):
        self.child = child


class _Nest(Doc):
    __slots__ = ("n", "child")

    def __init__(self, n: int, child: Doc):
        self.n = n
        self.child = child


def nil() -> Doc:
    return _Concat([])


# ANSI codes to start and to end a color (JAX: pretty_printer's Color and Intensity)
_COLORS = {None: ("", ""), "keyword": ("\x1b[34;1m", "\x1b[39;22m"),
           "type": ("\x1b[35m", "\x1b[39m")}


def text(s: str, color: str | None = None) -> Doc:
    """Text, printed in `color` ("keyword" or "type") when the printer uses colors."""
    return _Text(s, color)


def concat(children: Sequence[Doc]) -> Doc:
    return _Concat(children)


def brk(s: str = " ") -> Doc:
    """A break: prints as `s` inside a flat group, as a newline inside a broken one."""
    return _Break(s)


def group(doc: Doc) -> Doc:
    """Print `doc` flat if the whole group fits on the current line, else break it."""
    return _Group(doc)


def nest(n: int, doc: Doc) -> Doc:
    """Indent the lines that breaks inside `doc` start by `n` more columns."""
    return _Nest(n, doc)


def join(sep: Doc, docs: Sequence[Doc]) -> Doc:
    docs = list(docs)
    parts = docs[:1]
    for doc in docs[1:]:
        parts += [sep, doc]
    return concat(parts)


_FLAT, _BREAK = 0, 1


def _flat_width(doc: Doc, limit: int) -> int:
    """Width of `doc` printed flat, counting only until it passes `limit`."""
    width, todo = 0, [doc]
    while todo and width <= limit:
        d = todo.pop()
        if isinstance(d, (_Text, _Break)):
            width += len(d.text)
        elif isinstance(d, _Concat):
            todo.extend(reversed(d.children))
        else:  # _Group, _Nest
            todo.append(d.child)
    return width


# --8<-- [start:layout]
def _format(doc: Doc, width: int, use_color: bool = False) -> str:
    """Lay out `doc`: each group goes flat if it fits in what is left of the line."""
    out: list[str] = []
    column, color = 0, None
    todo = [(0, _BREAK, doc)]  # (indent, mode, doc), a stack
    while todo:
        indent, mode, d = todo.pop()
        if isinstance(d, _Text):
            if use_color and d.color != color:  # a color change takes no column
                out.append(_COLORS[color][1] + _COLORS[d.color][0])
                color = d.color
            out.append(d.text)
            column += len(d.text)
        elif isinstance(d, _Concat):
            todo.extend((indent, mode, c) for c in reversed(d.children))
        elif isinstance(d, _Nest):
            todo.append((indent + d.n, mode, d.child))
        elif isinstance(d, _Break):
            if mode == _BREAK:
                out.append("\n" + " " * indent)
                column = indent
            else:
                out.append(d.text)
                column += len(d.text)
        else:  # a group decides for itself only, not for what follows it (as JAX's printer)
            fits = _flat_width(d.child, width - column) <= width - column
            todo.append((indent, _FLAT if fits else _BREAK, d.child))
    return "".join(out)
# --8<-- [end:layout]


# ---------------------------------------- jaxpr printing ---------------------------------------


class JaxprPpSettings(NamedTuple):
    print_shapes: bool = True


# Custom printing rules, keyed by primitive (JAX: core.pp_eqn_rules). A rule is rule(eqn,
# context, settings) -> Doc; most drop params JAX hides, then call default_pp_eqn.
pp_eqn_rules: dict[Primitive, Callable] = {}


def _encode_digits_alphabetic(n: int) -> str:
    """0 -> a, 25 -> z, 26 -> ba, 27 -> bb: base 26 with letters as digits."""
    s = ""
    while not s or n:
        n, i = divmod(n, 26)
        s = chr(ord("a") + i) + s
    return s


class JaxprPpContext:
    """Names variables in order of first appearance, so names are unique across nested jaxprs.

    It also holds the hoisted (shared) sub-jaxprs: their names, which variables never take.
    """

    def __init__(self, var_names: dict[int, str] | None = None):
        self.var_names: dict[int, str] = dict(var_names or {})  # id(var) -> name
        self._next = 0  # the next fresh name is _encode_digits_alphabetic(self._next)
        self.shared_jaxprs: dict[Jaxpr, str] = {}  # a hoisted jaxpr -> its name (identity keys)
        self.shared_jaxpr_names: set[str] = set()

    def var_name(self, var: Var) -> str:
        if isinstance(var, DropVar):
            return "_"
        name = self.var_names.get(id(var))
        if name is None:
            name = _encode_digits_alphabetic(self._next)
            self._next += 1
            while name in self.shared_jaxpr_names:  # a var named like a hoisted jaxpr would clash
                name = _encode_digits_alphabetic(self._next)
                self._next += 1
            self.var_names[id(var)] = name
        return name


def _dropvars(jaxpr: Jaxpr) -> dict[int, str]:
    """Binders whose value nothing reads print as `_` (only the top-level jaxpr's)."""
    names: dict[int, str] = {}
    used = {id(v) for v in jaxpr.outvars if isinstance(v, Var)}
    for eqn in reversed(jaxpr.eqns):
        for v in eqn.outvars:
            if id(v) not in used:
                names[id(v)] = "_"
        used.update(id(v) for v in eqn.invars if isinstance(v, Var))
    return names


def pp_var(v: Atom, context: JaxprPpContext) -> str:
    if isinstance(v, Literal):
        if np.shape(v.val):
            return f"[...]:{v.aval.str_short(short_dtypes=True)}"
        return f"{np.asarray(v.val).item()}:{v.aval.str_short(short_dtypes=True)}"
    return context.var_name(v)


def pp_vars(vs: Sequence[Atom], context: JaxprPpContext, *, separator: str = "",
            print_shapes: bool = False) -> Doc:
    """Variables separated by spaces (each space may break), binders as `a:f32[3]`."""
    if print_shapes:
        docs = [text(pp_var(v, context)) + text(f":{v.aval.str_short(short_dtypes=True)}", "type")
                for v in vs]
    else:
        docs = [text(pp_var(v, context)) for v in vs]
    return nest(2, group(join(text(separator) + group(brk()), docs)))


def pp_kv_pair(k: str, v: Any, context: JaxprPpContext, settings: JaxprPpSettings) -> Doc:
    if type(v) is tuple and v and all(isinstance(j, (Jaxpr, ClosedJaxpr)) for j in v):
        pp_v = pp_jaxprs(v, context, settings)
    elif isinstance(v, Jaxpr):
        pp_v = pp_jaxpr(v, context, settings)
    elif isinstance(v, ClosedJaxpr):
        pp_v = pp_jaxpr(v.jaxpr, context, settings)
    else:
        # object addresses would make the text differ run to run
        pp_v = text(re.sub(r" at 0x([0-9a-fA-F]+)", lambda m: " at 0x" + "X" * len(m[1]), str(v)))
    return text(f"{k}=") + pp_v


def pp_kv_pairs(kv_pairs: Sequence[tuple[str, Any]], context: JaxprPpContext,
                settings: JaxprPpSettings) -> Doc:
    """`[k1=v1 k2=v2]`, or one pair per line when that does not fit."""
    if not kv_pairs:
        return nil()
    pairs = join(brk(), [pp_kv_pair(k, v, context, settings) for k, v in kv_pairs])
    return group(nest(2, text("[") + brk("") + pairs) + brk("") + text("]"))


# --8<-- [start:pp_eqn]
def default_pp_eqn(eqn: JaxprEqn, context: JaxprPpContext, settings: JaxprPpSettings,
                   params: Sequence[str] | None = None) -> Doc:
    """`c:f32[3] = mul b 2.0:f32[]`: binders with avals, primitive, [params], operands.

    The printing rule of every primitive without its own; custom rules call it after changing
    the params (JAX: core._pp_eqn)."""
    # EXERCISE 2.7 (printer): binders with avals, " = ", the name, [params], the operands
    if params is None:
        params = sorted(eqn.params)
    lhs = pp_vars(eqn.outvars, context, print_shapes=settings.print_shapes)
    rhs = [
        text(eqn.primitive.name),
        pp_kv_pairs([(p, eqn.params[p]) for p in params], context, settings),
        text(" ") + pp_vars(eqn.invars, context),
    ]
    if eqn.outvars:
        return concat([lhs, text(" = "), *rhs])
    return concat(rhs)
    # END EXERCISE
# --8<-- [end:pp_eqn]


def pp_eqn(eqn: JaxprEqn, context: JaxprPpContext, settings: JaxprPpSettings) -> Doc:
    """One equation, through the primitive's custom rule if it has one (pp_eqn_rules)."""
    rule = pp_eqn_rules.get(eqn.primitive, default_pp_eqn)
    return rule(eqn, context, settings)


def pp_eqns(eqns: Sequence[JaxprEqn], context: JaxprPpContext,
            settings: JaxprPpSettings) -> Doc:
    return join(brk("; "), [pp_eqn(e, context, settings) for e in eqns])


# --8<-- [start:pp_jaxpr]
def _pp_jaxpr_skeleton(jaxpr: Jaxpr, context: JaxprPpContext,
                       settings: JaxprPpSettings) -> Doc:
    """`{ lambda consts ; args. let eqns in (outs) }`: one group, so flat or one eqn a line."""
    constvars = pp_vars(jaxpr.constvars, context, print_shapes=settings.print_shapes)
    invars = pp_vars(jaxpr.invars, context, print_shapes=settings.print_shapes)
    eqns = pp_eqns(jaxpr.eqns, context, settings)
    close = ")" if len(jaxpr.outvars) != 1 else ",)"  # a 1-tuple prints as (a,)
    outvars = text("(") + pp_vars(jaxpr.outvars, context, separator=",") + text(close)
    return group(nest(2, concat([
        text("{ "), text("lambda ", "keyword"), constvars, text("; "), invars, text(". "),
        text("let", "keyword"), nest(2, brk() + eqns), brk(), text("in ", "keyword"), outvars,
    ])) + text(" }"))


def pp_jaxpr(jaxpr: Jaxpr, context: JaxprPpContext, settings: JaxprPpSettings) -> Doc:
    """A jaxpr in full, or just its name where it was hoisted to the top."""
    # JAX: pp_jaxpr over pp_jaxpr_skeleton (which also takes a function printing the eqns)
    name = context.shared_jaxprs.get(jaxpr)
    if name is not None:
        return text(name)
    return _pp_jaxpr_skeleton(jaxpr, context, settings)
# --8<-- [end:pp_jaxpr]


def pp_jaxprs(jaxprs: Sequence[Jaxpr | ClosedJaxpr], context: JaxprPpContext,
              settings: JaxprPpSettings) -> Doc:
    """A tuple of jaxprs in a param (e.g. cond's branches)."""
    jaxprs = [j.jaxpr if isinstance(j, ClosedJaxpr) else j for j in jaxprs]
    items = join(brk(), [pp_jaxpr(j, context, settings) for j in jaxprs])
    return group(nest(2, text("(") + brk("") + items) + brk("") + text(")"))


def jaxprs_in_params(params: dict[str, Any]) -> list[Jaxpr]:
    """The sub-jaxprs a param dict holds: a Jaxpr, a ClosedJaxpr's, or those in a tuple."""
    found = []
    for value in params.values():
        for v in value if isinstance(value, tuple) else (value,):
            if isinstance(v, ClosedJaxpr):
                found.append(v.jaxpr)
            elif isinstance(v, Jaxpr):
                found.append(v)
    return found


# --8<-- [start:hoisting]
def _shared_jaxprs(top: Jaxpr) -> list[tuple[str, Jaxpr]]:
    """The sub-jaxprs to hoist, named, in the order they are first met breadth first.

    A sub-jaxpr is hoisted if it is met twice (the walk re-enters a jaxpr at every use, so one
    inside a twice-used jaxpr is met twice too), or once if it has more than 10 equations. Its
    name is the `name` param of the first equation holding it (`<lambda>` as `lambda`), else
    `jaxpr`; repeats get a counter: jaxpr, jaxpr1, jaxpr2.
    """
    counts: dict[Jaxpr, int] = {}  # identity keys; insertion order is first-met order
    names: dict[Jaxpr, str] = {}
    todo = deque([top])
    while todo:
        jaxpr = todo.popleft()
        long_sub = jaxpr is not top and len(jaxpr.eqns) > 10
        counts[jaxpr] = counts.get(jaxpr, 0) + (2 if long_sub else 1)
        for eqn in jaxpr.eqns:
            subs = jaxprs_in_params(eqn.params)
            todo.extend(subs)
            name = eqn.params.get("name")
            if name is not None:
                for sub in subs:
                    names.setdefault(sub, str(name).strip("<>"))
    taken: dict[str, int] = {}
    shared = []
    for jaxpr, count in counts.items():
        if count < 2:
            continue
        name = names.get(jaxpr, "jaxpr")
        seen = taken.get(name, 0)
        taken[name] = seen + 1
        if seen:
            name += str(seen)
            taken[name] = taken.get(name, 0) + 1
        shared.append((name, jaxpr))
    return shared


def pp_toplevel_jaxpr(jaxpr: Jaxpr, *, print_shapes: bool = True) -> Doc:
    """The document `str(jaxpr)` formats: `let name = { ... } in` per hoisted jaxpr, then it."""
    context = JaxprPpContext(_dropvars(jaxpr))
    settings = JaxprPpSettings(print_shapes=print_shapes)
    shared = _shared_jaxprs(jaxpr)
    for name, sub in shared:
        context.shared_jaxprs[sub] = name
        context.shared_jaxpr_names.add(name)
    docs = []
    for name, sub in shared:  # the break sits outside every group: always a newline
        body = _pp_jaxpr_skeleton(sub, context, settings)
        docs.append(concat([text(f"let {name} = "), body, text(" in"), brk()]))
    docs.append(pp_jaxpr(jaxpr, context, settings))
    return concat(docs)
# --8<-- [end:hoisting]
