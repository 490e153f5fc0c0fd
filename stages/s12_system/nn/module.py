"""Modules whose parameters are data: init(key, *inputs) -> nested dict, apply(params, *inputs).

Flax: flax/linen/module.py (Module, compact submodule naming, init/apply) and flax/core/scope.py
(the Scope a module reads its variables and rngs from). A Module object holds only
configuration; while `init` or `apply` runs, each call of a module pushes a Scope: its path in
the module tree, its slice of the params dict, and its rng. A submodule is named by the
attribute that holds it, or, when it is created inside __call__, `ClassName_k` in creation
order, as Flax's `@compact` names them. A param's key is the root key folded with every name on
its path, so one key reaches every leaf and no two leaves draw the same bits.
"""

from __future__ import annotations

import contextlib
import threading
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from stages.s01_pytrees import keystr, tree_flatten_with_path, tree_leaves

from .. import random

_context = threading.local()


def _name_hash(name: str) -> int:
    return zlib.crc32(name.encode())  # stable across runs, unlike hash()


def fold_in_path(key: Any, path: tuple[str, ...]) -> Any:
    """The key of a module path: the root key folded with each name's CRC-32 in turn."""
    for name in path:
        key = random.fold_in(key, _name_hash(name))
    return key


class ScopeError(ValueError):
    """A module's params do not fit the params it was given (Flax: flax.errors)."""


_BRANCH_HINT = ("Was this submodule created inside a Python `if` (or loop) that took another "
                "way when init ran? Auto-named submodules are named in creation order, so a "
                "submodule created only sometimes is missing, or shifts the names of every "
                "later one. Create it unconditionally (in __init__ or before the branch) and "
                "branch on whether to *call* it.")


# --8<-- [start:scope]
class Scope:
    """Where a running module reads and writes: its path, params, rngs and child names."""

    def __init__(self, params: dict, path: tuple[str, ...], mode: str, rngs: dict[str, Any],
                 rng_counts: dict[tuple, int] | None = None):
        self.params, self.path, self.mode, self.rngs = params, path, mode, rngs
        self.children: dict[int, tuple[Module, str]] = {}  # id -> (module kept alive, name)
        self.counts: dict[str, int] = {}  # class name -> next auto index
        # (path, stream) -> keys handed out, one table per init or apply: a module called
        # twice is one path, and its second call draws on (Flax: the scope's rng counters)
        self.rng_counts = {} if rng_counts is None else rng_counts
        self.used: set[str] = set()
        self.subscopes: list[Scope] = []

    def child_name(self, parent: Module | None, module: Module) -> str:
        if id(module) in self.children:  # the same object called again shares its params
            return self.children[id(module)][1]
        name = module._explicit_name
        if name is None and module._parent is parent:
            name = module._attr_name
        if name is None:
            kind = type(module).__name__
            name = f"{kind}_{self.counts.get(kind, 0)}"
            self.counts[kind] = self.counts.get(kind, 0) + 1
        self.children[id(module)] = (module, name)
        return name

    def child(self, name: str) -> Scope:
        if self.mode == "init":
            sub = self.params.setdefault(name, {})
        else:  # a module without params has no entry; one that asks for a param is reported
            sub = self.params.get(name, {})
        self.used.add(name)
        self.subscopes.append(Scope(sub, self.path + (name,), self.mode, self.rngs,
                                    self.rng_counts))
        return self.subscopes[-1]

    def param(self, name: str, init_fn: Callable, shape: tuple, dtype: Any) -> Any:
        where = "/".join(self.path + (name,))
        if self.mode == "init":
            if name in self.params:
                raise ScopeError(f"param '{where}' is created twice")
            key = fold_in_path(self.rngs["params"], self.path + (name,))
            self.params[name] = init_fn(key, shape, dtype)
        elif name not in self.params:
            raise ScopeError(f"apply found no param '{where}'. {_BRANCH_HINT}")
        elif tuple(np.shape(self.params[name])) != tuple(shape):
            raise ScopeError(f"param '{where}' has shape {tuple(np.shape(self.params[name]))} "
                             f"but the module asks for {tuple(shape)}. {_BRANCH_HINT}")
        self.used.add(name)
        return self.params[name]

    def make_rng(self, stream: str) -> Any:
        if stream not in self.rngs:
            raise ScopeError(f"module '{'/'.join(self.path) or '<root>'}' needs an rng for "
                             f"'{stream}': pass rngs={{'{stream}': key}} to apply")
        k = self.rng_counts.get((self.path, stream), 0)
        self.rng_counts[self.path, stream] = k + 1  # a fresh key for each call, at this path
        return random.fold_in(fold_in_path(self.rngs[stream], self.path), k)

    def unused(self) -> list[str]:
        """Params and submodules init created here and in the subtree that apply never read."""
        by_path: dict[tuple, set[str]] = {}
        todo = [self]
        while todo:
            scope = todo.pop()
            by_path.setdefault(scope.path, set()).update(scope.used)
            todo += scope.subscopes
        out = []
        todo = [self]
        seen: set[tuple] = set()
        while todo:
            scope = todo.pop()
            if scope.path in seen:
                continue
            seen.add(scope.path)
            out += ["/".join(scope.path + (n,)) for n in scope.params
                    if n not in by_path[scope.path]]
            todo += scope.subscopes
        return sorted(out)
# --8<-- [end:scope]


def _stack() -> list[tuple[Module, Scope]]:
    if not hasattr(_context, "stack"):
        _context.stack = []
    return _context.stack


class Module:
    """Subclass it: keep configuration in __init__ (submodules too, as attributes) and compute
    in __call__, asking `self.param(...)` for parameters and creating submodules freely."""

    _attr_name: str | None = None
    _parent: Module | None = None
    _explicit_name: str | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__call__" in cls.__dict__:
            cls.__call__ = _scoped(cls.__dict__["__call__"])
        if "__init__" in cls.__dict__:
            cls.__init__ = _named(cls.__dict__["__init__"])

    def __setattr__(self, name: str, value: Any) -> None:
        for i, m in enumerate(value if isinstance(value, list | tuple) else [value]):
            if isinstance(m, Module):  # a submodule held by an attribute is named by it
                object.__setattr__(m, "_parent", self)
                object.__setattr__(m, "_attr_name",
                                   f"{name}_{i}" if isinstance(value, list | tuple) else name)
        object.__setattr__(self, name, value)

    # --8<-- [start:init_apply]
    def init(self, key: Any, *inputs: Any, method: str | Callable | None = None,
             **kwargs: Any) -> dict:
        """Run the module once on example inputs, creating every param it asks for; `method`
        (as apply's) runs in place of __call__, so only the params it asks for are made."""
        params: dict = {}
        rngs = key if isinstance(key, dict) else {"params": key}
        with _root(Scope(params, (), "init", rngs)):
            _method(self, method)(self, *inputs, **kwargs)
        return _without_empty(params)

    def apply(self, params: dict, *inputs: Any, rngs: dict | None = None,
              method: str | Callable | None = None, **kwargs: Any) -> Any:
        """Run the module with the given params (a plain nested dict); `method`, a name or a
        function such as `Model.encode`, runs in place of __call__ (Flax's apply(method=))."""
        scope = Scope(params, (), "apply", dict(rngs or {}))
        with _root(scope):
            out = _method(self, method)(self, *inputs, **kwargs)
        unused = scope.unused() if method is None else []  # a method may read only some
        if unused:
            raise ScopeError(f"apply never used the params of {unused}, which init created. "
                             + _BRANCH_HINT)
        return out
    # --8<-- [end:init_apply]

    def param(self, name: str, init_fn: Callable, shape: tuple, dtype: Any = np.float32
              ) -> Any:
        """This module's param `name`: created by init_fn(key, shape, dtype) during init."""
        return _current(self).param(name, init_fn, tuple(shape), np.dtype(dtype))

    def make_rng(self, stream: str) -> Any:
        """A key of the rng stream (e.g. "dropout"), distinct per module and per call."""
        return _current(self).make_rng(stream)


def _method(module: Module, method: str | Callable | None) -> Callable:
    """The function init or apply runs: __call__, or `method` as a name or a function (a bound
    method's own), scoped as __call__ is."""
    if method is None or isinstance(method, str):  # a name: the module's bound method
        method = getattr(module, method or "__call__")
    fn = getattr(method, "__func__", method)  # __call__ is already scoped: unwrap it first
    return _scoped(getattr(fn, "__wrapped__", fn))


def _without_empty(params: dict) -> dict:
    """Drop the entries of modules that hold no params (Dropout, activations), as Flax does."""
    out = {}
    for name, value in params.items():
        if isinstance(value, dict):
            value = _without_empty(value)
            if not value:
                continue
        out[name] = value
    return out


class _Root(Module):
    """The stack's bottom: the module `init` or `apply` was called on is its child."""


@contextlib.contextmanager
def _root(scope: Scope) -> Iterator[None]:
    stack = _stack()
    stack.append((_Root(), scope))
    try:
        yield
    finally:
        stack.pop()


def _current(module: Module) -> Scope:
    stack = _stack()
    if not stack or stack[-1][0] is not module:
        raise ScopeError(f"{type(module).__name__}.param/make_rng used outside its __call__ "
                         "while init or apply runs")
    return stack[-1][1]


def _named(init: Callable) -> Callable:
    def wrapped(self: Module, *args: Any, name: str | None = None, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        if name is not None:  # Flax: Dense(4, name="query") is named "query", not Dense_k
            object.__setattr__(self, "_explicit_name", name)
    wrapped.__wrapped__ = init
    wrapped.__doc__ = init.__doc__
    return wrapped


def _scoped(call: Callable) -> Callable:
    def wrapped(self: Module, *args: Any, **kwargs: Any) -> Any:
        stack = _stack()
        if not stack:
            raise ScopeError(f"{type(self).__name__} was called directly; use "
                             f"{type(self).__name__}(...).init(key, x) and .apply(params, x)")
        parent, scope = stack[-1]
        is_root = isinstance(parent, _Root)
        name = None if is_root else scope.child_name(parent, self)
        child = scope if is_root else scope.child(name)
        stack.append((self, child))
        try:
            return call(self, *args, **kwargs)
        finally:
            stack.pop()
    wrapped.__wrapped__ = call
    wrapped.__doc__ = call.__doc__
    return wrapped


# ------------------------------------------------------------------ inspecting params

def param_count(params: Any) -> int:
    """How many numbers the params hold."""
    return int(sum(np.size(x) for x in tree_leaves(params)))


def tabulate(module: Module, key: Any, *inputs: Any, **kwargs: Any) -> str:
    """A table of every param: its path, shape, dtype and size, with the total."""
    params = module.init(key, *inputs, **kwargs)
    rows = [("path", "shape", "dtype", "count")]
    for path, leaf in tree_flatten_with_path(params)[0]:
        rows.append((keystr(path, simple=True, separator="/"), str(tuple(np.shape(leaf))),
                     str(np.asarray(leaf).dtype), f"{np.size(leaf):,}"))
    rows.append(("total", "", "", f"{param_count(params):,}"))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    line = "-+-".join("-" * w for w in widths)
    out = [f"{type(module).__name__} summary", line]
    for k, r in enumerate(rows):
        out.append(" | ".join(c.ljust(w) if i < 3 else c.rjust(w)
                              for i, (c, w) in enumerate(zip(r, widths, strict=True))))
        if k in (0, len(rows) - 2):
            out.append(line)
    return "\n".join(out)
