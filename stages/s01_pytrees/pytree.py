"""The pytree registry: which types are nodes, and flatten, the walk every transform starts with.

JAX: PyTreeRegistry in jaxlib's C++ pytree.cc (imported as `jax._src.lib.pytree`); ours is plain
Python with the same names. `tree_util.py` builds the public API on it, as JAX's does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .keys import DictKey, FlattenedIndexKey, GetAttrKey, SequenceKey
from .treedef import LEAF, Node, PyTreeDef, PyTreeKind


# eq=False: a treedef compares registrations by identity, like the C++ `custom` pointer.
@dataclasses.dataclass(frozen=True, eq=False)
class Registration:
    """How one node type is taken apart and put back. JAX: PyTreeRegistry::Registration."""

    kind: PyTreeKind
    type: type
    to_iterable: Callable[[Any], tuple[Iterable[Any], Any]]
    from_iterable: Callable[[Any, Any], Any]
    to_iterable_with_keys: Callable[[Any], tuple[Iterable[tuple[Any, Any]], Any]] | None = None

    def keyed_children(self, x: Any) -> tuple[Iterable[tuple[Any, Any]], Any]:
        """`((key, child), ...), node_data`; nodes registered without keys get flat indices."""
        if self.to_iterable_with_keys is not None:
            return self.to_iterable_with_keys(x)
        children, node_data = self.to_iterable(x)
        return [(FlattenedIndexKey(i), c) for i, c in enumerate(children)], node_data


# --8<-- [start:dict-order]
def _sorted_dict_keys(d: dict) -> list:
    """The keys of `d` in sorted order, or JAX's ValueError when they cannot be compared."""
    # EXERCISE 1.2 (dict-order): return the keys of d sorted, as the C++ flatten does
    keys = list(d)
    try:
        keys.sort()
    except Exception as err:  # whatever `<` raised, JAX reports it the same way
        raise ValueError(
            "Comparator raised exception while sorting pytree dictionary keys."
        ) from err
    return keys
    # END EXERCISE
# --8<-- [end:dict-order]


def _flatten_dict(d: dict) -> tuple[tuple, tuple]:
    keys = _sorted_dict_keys(d)
    return tuple(d[k] for k in keys), tuple(keys)


def _flatten_dict_with_keys(d: dict) -> tuple[tuple, tuple]:
    keys = _sorted_dict_keys(d)
    return tuple((DictKey(k), d[k]) for k in keys), tuple(keys)


def _flatten_sequence_with_keys(xs: Sequence) -> tuple[tuple, None]:
    return tuple((SequenceKey(i), x) for i, x in enumerate(xs)), None


def _flatten_namedtuple_with_keys(t: tuple) -> tuple[tuple, type]:
    if not isinstance(t._fields, tuple) or len(t._fields) != len(t):
        raise ValueError("A namedtuple's _fields attribute should have the same size as the tuple.")
    return tuple((GetAttrKey(name), x) for name, x in zip(t._fields, t, strict=True)), type(t)


# The built-in node types, shared by every registry (so their treedefs compare equal across them).
_NONE = Registration(
    PyTreeKind.NONE, type(None), lambda x: ((), None), lambda _, children: None,
    lambda x: ((), None),
)
_TUPLE = Registration(
    PyTreeKind.TUPLE, tuple, lambda x: (x, None), lambda _, children: tuple(children),
    _flatten_sequence_with_keys,
)
_LIST = Registration(
    PyTreeKind.LIST, list, lambda x: (x, None), lambda _, children: list(children),
    _flatten_sequence_with_keys,
)
_DICT = Registration(
    PyTreeKind.DICT, dict, _flatten_dict,
    lambda keys, children: dict(zip(keys, children, strict=True)), _flatten_dict_with_keys,
)
# A namedtuple's node data is its class, which rebuilds it from the children (a list, as JAX's).
_NAMED_TUPLE = Registration(
    PyTreeKind.NAMED_TUPLE, tuple, lambda x: (list(x), type(x)),
    lambda cls, children: cls(*children),
    _flatten_namedtuple_with_keys,
)


def _check_pair(out: Any, what: str, first: str) -> None:
    """A user's flatten output is a (`first`, aux_data) tuple whose first item is iterable."""
    if not isinstance(out, tuple) or len(out) != 2:
        raise ValueError(f"{what}, got {out!r}")
    try:
        iter(out[0])
    except TypeError:
        raise ValueError(f"{what} where '{first}' is iterable, got {out!r}") from None


def checked(to_iterable: Callable) -> Callable:
    """A user's flatten rule, its output checked with the C++ registry's messages."""
    def to_iterable_checked(x: Any) -> tuple[Iterable[Any], Any]:
        out = to_iterable(x)
        _check_pair(out, "The to_iterable function for a custom PyTree node should return a "
                    "(children, aux_data) tuple", "children")
        return out

    return to_iterable_checked


def checked_with_keys(to_iterable_with_keys: Callable) -> Callable:
    """A user's flatten-with-keys rule, its output checked as the C++ registry checks it: the
    (key, child) pairs come back as a list."""
    def to_iterable_with_keys_checked(x: Any) -> tuple[list, Any]:
        out = to_iterable_with_keys(x)
        what = ("The to_iterable_with_keys function for a custom PyTree node should return a "
                "(key_leaf_pairs, aux_data) tuple")
        _check_pair(out, what, "key_leaf_pairs")
        pairs = list(out[0])
        for pair in pairs:
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise ValueError(f"{what} where 'child{pair!r}")  # JAX's text stops there
        return pairs, out[1]

    return to_iterable_with_keys_checked


def _is_known_leaf(leaf_predicate: Callable[..., Any], x: Any, path: tuple | None) -> bool:
    verdict = leaf_predicate(x) if path is None else leaf_predicate(path, x)
    if verdict is None:  # JAX still accepts None from a predicate, meaning "not a leaf"
        return False
    if type(verdict) is not bool:
        raise ValueError(
            f"is_leaf predicate returned a non-boolean value {verdict!r}; expected a boolean"
        )
    return verdict


_named_registries: dict[str, PyTreeRegistry] = {}


def registry_named(name: str) -> PyTreeRegistry:
    """The registry created with this name (how a pickled treedef finds its registry)."""
    return _named_registries[name]


class PyTreeRegistry:
    """Maps node types to their registrations. JAX: PyTreeRegistry in pytree.cc."""

    def __init__(self, enable_none: bool = True, enable_tuple: bool = True,
                 enable_namedtuple: bool = True, enable_list: bool = True,
                 enable_dict: bool = True, name: str | None = None) -> None:
        self._registrations: dict[type, Registration] = {}
        for enabled, registration in ((enable_none, _NONE), (enable_tuple, _TUPLE),
                                      (enable_list, _LIST), (enable_dict, _DICT)):
            if enabled:
                self._registrations[registration.type] = registration
        self._enable_namedtuple = enable_namedtuple
        self.name = name
        if name is not None:
            _named_registries[name] = self

    def __reduce__(self) -> tuple:
        # a registry holds functions, which do not pickle: a named one pickles as its name
        if self.name is None:
            raise TypeError("only a named PyTreeRegistry can be pickled")
        return registry_named, (self.name,)

    def register_node(self, nodetype: type, to_iterable: Callable, from_iterable: Callable,
                      to_iterable_with_keys: Callable | None = None) -> Registration:
        """Register a custom node type; a type can be registered once."""
        registration = Registration(
            PyTreeKind.CUSTOM, nodetype, checked(to_iterable), from_iterable,
            to_iterable_with_keys and checked_with_keys(to_iterable_with_keys))
        self.add_registration(registration)
        return registration

    def register_dataclass_node(self, nodetype: type, data_fields: Sequence[str],
                                meta_fields: Sequence[str]) -> Registration:
        """Register a class whose data fields are children and whose meta fields are aux data."""
        data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)

        def to_iterable(x: Any) -> tuple[list, tuple]:
            meta = tuple(getattr(x, name) for name in meta_fields)
            return [getattr(x, name) for name in data_fields], meta

        def to_iterable_with_keys(x: Any) -> tuple[list, tuple]:
            meta = tuple(getattr(x, name) for name in meta_fields)
            return [(GetAttrKey(name), getattr(x, name)) for name in data_fields], meta

        def from_iterable(meta: tuple, children: Iterable) -> Any:
            kwargs = dict(zip(meta_fields, meta, strict=True))
            kwargs.update(zip(data_fields, children, strict=True))
            return nodetype(**kwargs)

        registration = Registration(PyTreeKind.DATACLASS, nodetype, to_iterable, from_iterable,
                                    to_iterable_with_keys)
        self.add_registration(registration)
        return registration

    def add_registration(self, registration: Registration) -> None:
        """Register a node type by a registration (another registry's: then both registries'
        treedefs of it compare equal, as JAX's do)."""
        if registration.type in self._registrations:
            what = "custom dataclass" if registration.kind is PyTreeKind.DATACLASS else "custom"
            raise ValueError(
                f"Duplicate {what} PyTreeDef type registration for {registration.type!r}."
            )
        self._registrations[registration.type] = registration

    def registration_of(self, kind: PyTreeKind, nodetype: type | None) -> Registration | None:
        """The registration a node of this kind and type was made with (None for a leaf)."""
        if kind is PyTreeKind.LEAF:
            return None
        if kind is PyTreeKind.NAMED_TUPLE:
            return _NAMED_TUPLE
        return self._registrations[nodetype]

    def lookup(self, x: Any) -> Registration | None:
        """The registration that flattens `x`, or None when `x` is a leaf."""
        registration = self._registrations.get(type(x))
        if registration is not None:
            return registration
        # Namedtuples are found by shape, not by registration: a tuple with `_fields`.
        if self._enable_namedtuple and isinstance(x, tuple) and hasattr(x, "_fields"):
            return _NAMED_TUPLE
        return None

    def is_node(self, nodetype: type) -> bool:
        """True if values of `nodetype` are nodes: a registered type, or a namedtuple class."""
        if not isinstance(nodetype, type):
            return False
        if nodetype in self._registrations:
            return True
        return (self._enable_namedtuple and issubclass(nodetype, tuple)
                and hasattr(nodetype, "_fields"))

    def flatten(self, tree: Any, leaf_predicate: Callable[[Any], Any] | None = None
                ) -> tuple[list, PyTreeDef]:
        """The leaves of `tree`, left to right, and the treedef that puts them back."""
        leaves: list = []
        traversal: list[Node] = []
        self._flatten(tree, leaf_predicate, leaves, traversal, None)
        return leaves, PyTreeDef(self, tuple(traversal))

    def flatten_with_path(self, tree: Any, leaf_predicate: Callable[[Any, Any], Any] | None = None
                          ) -> tuple[list, PyTreeDef]:
        """Like flatten, but each leaf comes as `(key_path, leaf)`; is_leaf takes (path, x)."""
        leaves: list = []
        traversal: list[Node] = []
        self._flatten(tree, leaf_predicate, leaves, traversal, ())
        return leaves, PyTreeDef(self, tuple(traversal))

    # --8<-- [start:flatten]
    def _flatten(self, x: Any, leaf_predicate: Callable | None, leaves: list,
                 traversal: list[Node], path: tuple | None) -> None:
        """Append the leaves of `x` to `leaves` and its nodes, children first, to `traversal`.

        `path` is None when key paths are not wanted; otherwise it is the key path of `x`, and
        each leaf is appended as a `(path, leaf)` pair.
        """
        # EXERCISE 1.3 (flatten): is_leaf first, then the registry lookup, then recurse
        # is_leaf is asked before the type lookup, at every node, the root included.
        if leaf_predicate is not None and _is_known_leaf(leaf_predicate, x, path):
            registration = None
        else:
            registration = self.lookup(x)
        if registration is None:
            leaves.append(x if path is None else (path, x))
            traversal.append(LEAF)
            return
        start_leaves, start_nodes = len(leaves), len(traversal)
        arity = 0
        if path is None:
            children, node_data = registration.to_iterable(x)
            for child in children:
                self._flatten(child, leaf_predicate, leaves, traversal, None)
                arity += 1
        else:
            keyed_children, node_data = registration.keyed_children(x)
            for key, child in keyed_children:
                self._flatten(child, leaf_predicate, leaves, traversal, (*path, key))
                arity += 1
        traversal.append(Node(registration.kind, arity, node_data, registration,
                               len(leaves) - start_leaves, len(traversal) - start_nodes + 1))
        # END EXERCISE
    # --8<-- [end:flatten]

    def flatten_one_level(self, tree: Any) -> tuple[Iterable, Any] | None:
        """`(children, node_data)` of the root of `tree`, or None when it is a leaf."""
        registration = self.lookup(tree)
        return None if registration is None else registration.to_iterable(tree)

    def flatten_one_level_with_keys(self, tree: Any) -> tuple[Iterable, Any] | None:
        """`((key, child), ...), node_data` of the root of `tree`, or None for a leaf."""
        registration = self.lookup(tree)
        return None if registration is None else registration.keyed_children(tree)


def tuple_treedef(registry: PyTreeRegistry, treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    """The treedef of a tuple whose children have `treedefs`. JAX: pytree.treedef_tuple
    (C++: PyTreeDef::Tuple), which tree_util.treedef_tuple calls."""
    traversal: list[Node] = []
    num_leaves = arity = 0
    for treedef in treedefs:
        if treedef._registry is not registry:
            raise ValueError("PyTree registries of PyTreeDefs passed to Tuple() must match.")
        traversal.extend(treedef._traversal)
        num_leaves += treedef.num_leaves
        arity += 1
    traversal.append(Node(PyTreeKind.TUPLE, arity, None, _TUPLE, num_leaves,
                           len(traversal) + 1))
    return PyTreeDef(registry, tuple(traversal))
