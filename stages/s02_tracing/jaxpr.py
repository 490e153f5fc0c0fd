"""The jaxpr IR: variables, literals, equations, jaxprs, and eval_jaxpr, which runs one.

JAX: these live in jax/_src/core.py; core.py re-exports them, so `core.Jaxpr` works as in JAX.
A jaxpr is data: nothing here traces. partial_eval.py builds jaxprs, pretty_printer.py prints
them, and eval_jaxpr interprets one by binding each equation's primitive.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: core.py imports this module to re-export it
    from .core import Primitive, ShapedArray


class Var:
    """A variable of a jaxpr. It has no name: the printer names variables a, b, ... in order."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return f"Var(id={id(self)}):{self.aval.str_short()}"


class DropVar(Var):
    """A binder whose value is never read (printed `_`)."""

    def __repr__(self) -> str:
        return "_"


class Literal:
    """A constant written inline in a jaxpr: `2.0:f32[]`."""

    __slots__ = ("val", "aval")
    __hash__ = None

    def __init__(self, val: Any, aval: ShapedArray):
        self.val = val
        self.aval = aval

    def __repr__(self) -> str:
        return f"Literal({self.val})"


Atom = Var | Literal


class JaxprEqn:
    """One line of a jaxpr: `outvars = primitive[params] invars`."""

    __slots__ = ("invars", "outvars", "primitive", "params", "effects", "source_info")

    def __init__(self, invars, outvars, primitive, params, effects=frozenset(), source_info=None):
        self.invars: list[Atom] = invars
        self.outvars: list[Var] = outvars
        self.primitive: Primitive = primitive
        self.params: dict[str, Any] = params
        self.effects = effects
        self.source_info = source_info

    def replace(self, **kwargs: Any) -> JaxprEqn:
        """A copy with some fields replaced (custom printing rules use it to drop params)."""
        fields = {name: getattr(self, name) for name in JaxprEqn.__slots__}
        fields.update(kwargs)
        return JaxprEqn(**fields)

    def __repr__(self) -> str:
        from .pretty_printer import JaxprPpContext, JaxprPpSettings, pp_eqn  # imports this module

        return pp_eqn(self, JaxprPpContext(), JaxprPpSettings()).format().rstrip()


def new_jaxpr_eqn(invars, outvars, primitive, params, effects=frozenset(), source_info=None):
    return JaxprEqn(invars, outvars, primitive, params, effects, source_info)


class Jaxpr:
    """A typed program: constvars and invars in, equations, outvars out."""

    __slots__ = ("__weakref__", "constvars", "invars", "outvars", "eqns", "effects", "debug_info")

    def __init__(self, constvars, invars, outvars, eqns, effects=frozenset(), debug_info=None):
        self.constvars: list[Var] = list(constvars)
        self.invars: list[Var] = list(invars)
        self.outvars: list[Atom] = list(outvars)
        self.eqns: list[JaxprEqn] = list(eqns)
        self.effects = effects
        self.debug_info = debug_info

    in_avals = property(lambda self: [v.aval for v in self.invars])
    out_avals = property(lambda self: [v.aval for v in self.outvars])

    def pretty_print(self, *, print_shapes: bool = True, **format_kwargs: Any) -> str:
        from .pretty_printer import pp_toplevel_jaxpr  # the printer imports this module

        return pp_toplevel_jaxpr(self, print_shapes=print_shapes).format(**format_kwargs)

    def __str__(self) -> str:
        return self.pretty_print()

    __repr__ = __str__

    def replace(self, **kwargs: Any) -> Jaxpr:
        fields = {name: getattr(self, name) for name in Jaxpr.__slots__[1:]}
        fields.update(kwargs)
        return Jaxpr(**fields)


class ClosedJaxpr:
    """A jaxpr together with the values of its constvars."""

    __slots__ = ("__weakref__", "jaxpr", "consts")

    def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any]):
        assert len(consts) == len(jaxpr.constvars)
        self.jaxpr = jaxpr
        self.consts = list(consts)

    literals = property(lambda self: self.consts)
    constvars = property(lambda self: self.jaxpr.constvars)
    invars = property(lambda self: self.jaxpr.invars)
    outvars = property(lambda self: self.jaxpr.outvars)
    eqns = property(lambda self: self.jaxpr.eqns)
    effects = property(lambda self: self.jaxpr.effects)
    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: self.jaxpr.out_avals)

    def map_jaxpr(self, f: Callable[[Jaxpr], Jaxpr]) -> ClosedJaxpr:
        return ClosedJaxpr(f(self.jaxpr), self.consts)

    def replace(self, *, jaxpr: Jaxpr | None = None, consts=None) -> ClosedJaxpr:
        return ClosedJaxpr(self.jaxpr if jaxpr is None else jaxpr,
                           self.consts if consts is None else consts)

    def pretty_print(self, **format_kwargs: Any) -> str:
        return self.jaxpr.pretty_print(**format_kwargs)

    def __str__(self) -> str:
        return str(self.jaxpr)

    __repr__ = __str__


# --8<-- [start:eval_jaxpr]
def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any], *args: Any) -> list[Any]:
    """Run a jaxpr by binding each equation's primitive: eager here, traced under a trace."""
    # EXERCISE 2.6 (eval-jaxpr): walk the equations, reading and writing an environment
    env: dict[Var, Any] = {}

    def read(atom: Atom) -> Any:
        return atom.val if isinstance(atom, Literal) else env[atom]

    def write(var: Var, val: Any) -> None:
        env[var] = val

    for var, val in zip(jaxpr.constvars, consts, strict=True):
        write(var, val)
    for var, val in zip(jaxpr.invars, args, strict=True):
        write(var, val)
    for eqn in jaxpr.eqns:
        params = eqn.primitive.get_bind_params(eqn.params)
        ans = eqn.primitive.bind(*[read(x) for x in eqn.invars], **params)
        outs = ans if eqn.primitive.multiple_results else [ans]
        for var, val in zip(eqn.outvars, outs, strict=True):
            write(var, val)
    return [read(v) for v in jaxpr.outvars]
    # END EXERCISE
# --8<-- [end:eval_jaxpr]


def jaxpr_as_fun(closed_jaxpr: ClosedJaxpr) -> Callable[..., list[Any]]:
    """The closed jaxpr as a Python function of its invars."""

    def fun(*args: Any) -> list[Any]:
        return eval_jaxpr(closed_jaxpr.jaxpr, closed_jaxpr.consts, *args)

    return fun


class JaxprTypeError(TypeError):
    """A jaxpr that is not well typed (raised by check_jaxpr)."""


def check_jaxpr(jaxpr: Jaxpr) -> None:
    """Each var bound once before use, each eqn's outvars typed as its abstract_eval says."""
    # JAX: core.check_jaxpr (it also checks effects and subjaxprs).
    bound: set[int] = set()

    def read(atom: Atom, where: str) -> ShapedArray:
        if isinstance(atom, Var) and id(atom) not in bound:
            raise JaxprTypeError(f"Variable {atom!r} used before it is bound, in {where}")
        return atom.aval

    def bind(var: Var, where: str) -> None:
        if id(var) in bound:
            raise JaxprTypeError(f"Variable {var!r} bound twice, in {where}")
        bound.add(id(var))

    for v in [*jaxpr.constvars, *jaxpr.invars]:
        bind(v, "the binders")
    for eqn in jaxpr.eqns:
        where = f"equation `{eqn!r}`"
        in_avals = [read(x, where) for x in eqn.invars]
        out = eqn.primitive.abstract_eval(*in_avals, **eqn.params)
        out_avals = list(out) if eqn.primitive.multiple_results else [out]
        for var, aval in zip(eqn.outvars, out_avals, strict=True):
            if var.aval.strip_weak_type() != aval.strip_weak_type():
                raise JaxprTypeError(f"{where} binds {var.aval} but its rule gives {aval}")
            bind(var, where)
    for v in jaxpr.outvars:
        read(v, "the outputs")
