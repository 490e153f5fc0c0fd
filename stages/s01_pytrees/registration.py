"""Registration: how a type becomes a pytree node, in every registry at once.

JAX: the registration half of jax/_src/tree_util.py (`register_pytree_node`,
`register_pytree_with_keys`, `register_dataclass`, `register_static`, and the registrations of
OrderedDict and defaultdict). The registries themselves are pytree.py's `PyTreeRegistry`.
"""

from __future__ import annotations

import collections
import dataclasses
import operator
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from .keys import DictKey
from .pytree import PyTreeRegistry

T = TypeVar("T")
Typ = TypeVar("Typ", bound=type)

# --8<-- [start:registries]
# Four registries, as in JAX. Registering a type puts it in all four, so that a user's class
# behaves the same whichever one a part of the system consults.
# (named, so that a treedef pickles: it is unpickled against the registry of the same name)
default_registry = PyTreeRegistry(name="default")  # what tree_flatten and friends use
none_leaf_registry = PyTreeRegistry(enable_none=False, name="none_leaf")  # None is a leaf
dispatch_registry = PyTreeRegistry(name="dispatch")  # JAX: knows internal types for jit too
tracing_registry = PyTreeRegistry(name="tracing")  # JAX: what tracing flattens arguments with
_all_registries = (default_registry, none_leaf_registry, dispatch_registry, tracing_registry)
# --8<-- [end:registries]


# --8<-- [start:register]
def register_pytree_node(nodetype: type[T], flatten_func: Callable[[T], tuple[Iterable, Any]],
                         unflatten_func: Callable[[Any, Iterable], T],
                         flatten_with_keys_func: Callable[[T], tuple[Iterable, Any]] | None = None
                         ) -> None:
    """Make `nodetype` a pytree node: `flatten_func(x) -> (children, aux_data)` and
    `unflatten_func(aux_data, children) -> x`. Aux data lives in the treedef."""
    # one registration shared by every registry: their treedefs of the type compare equal
    registration = default_registry.register_node(nodetype, flatten_func, unflatten_func,
                                                  flatten_with_keys_func)
    for registry in _all_registries[1:]:
        registry.add_registration(registration)


def register_pytree_node_class(cls: Typ) -> Typ:
    """Class decorator: register `cls` by its `tree_flatten` method and `tree_unflatten`."""
    register_pytree_node(cls, operator.methodcaller("tree_flatten"), cls.tree_unflatten)
    return cls
# --8<-- [end:register]


def register_pytree_with_keys(nodetype: type[T],
                              flatten_with_keys: Callable[[T], tuple[Iterable, Any]],
                              unflatten_func: Callable[[Any, Iterable], T],
                              flatten_func: Callable[[T], tuple[Iterable, Any]] | None = None
                              ) -> None:
    """Like register_pytree_node, but `flatten_with_keys(x) -> (((key, child), ...), aux)`
    names each child's key path. Without `flatten_func`, plain flattening builds the keys too."""
    if not flatten_func:

        def flatten_func(tree: T) -> tuple[list, Any]:
            key_children, aux = flatten_with_keys(tree)
            return [child for _, child in key_children], aux

    register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_with_keys_class(cls: Typ) -> Typ:
    """Class decorator: register `cls` by `tree_flatten_with_keys` (and `tree_flatten` if any)."""
    flatten_func = operator.methodcaller("tree_flatten") if hasattr(cls, "tree_flatten") else None
    register_pytree_with_keys(cls, operator.methodcaller("tree_flatten_with_keys"),
                              cls.tree_unflatten, flatten_func)
    return cls


# --8<-- [start:dataclass]
def register_dataclass(nodetype: Typ, data_fields: Sequence[str] | None = None,
                       meta_fields: Sequence[str] | None = None,
                       drop_fields: Sequence[str] = ()) -> Typ:
    """Register a dataclass-like type: data fields are children, meta fields are aux data.

    For a dataclass both lists may be omitted: fields with `metadata=dict(static=True)` are meta,
    the rest data. Usable as a decorator.
    """
    # EXERCISE 1.6 (dataclass): find data and meta fields, check them as JAX does, register
    if data_fields is None or meta_fields is None:
        if (data_fields is None) != (meta_fields is None):
            raise TypeError("register_dataclass: data_fields and meta_fields must both be "
                            f"specified when either is specified. Got {data_fields=} "
                            f"{meta_fields=}.")
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError("register_dataclass: data_fields and meta_fields are required when"
                            f" nodetype is not a dataclass. Got {nodetype=}.")
        fields = dataclasses.fields(nodetype)
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
    # Frozen copies: the caller may mutate the lists they passed.
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)
    if dataclasses.is_dataclass(nodetype):
        init_fields = {f.name for f in dataclasses.fields(nodetype) if f.init}
        init_fields.difference_update(drop_fields)
        given = {*meta_fields, *data_fields}
        if given != init_fields:
            msg = ("data_fields and meta_fields must include all dataclass fields with"
                   " ``init=True`` and only them.")
            missing = init_fields - given
            if missing:
                msg += (f" Missing fields: {missing}. Add them to drop_fields to suppress"
                        " this error.")
            unexpected = given - init_fields
            if unexpected:
                msg += f" Unexpected fields: {unexpected}."
            raise ValueError(msg)
    overlap = set(data_fields) & set(meta_fields)
    if overlap:
        raise ValueError(f"data_fields and meta_fields must not overlap. Overlapping fields:"
                         f" {overlap}.")
    registration = default_registry.register_dataclass_node(nodetype, data_fields, meta_fields)
    for registry in _all_registries[1:]:
        registry.add_registration(registration)
    return nodetype
    # END EXERCISE
# --8<-- [end:dataclass]


# --8<-- [start:builtin-custom]
# OrderedDict keeps insertion order (its keys are its aux data); defaultdict sorts its keys like
# dict and keeps its default_factory in the aux data too.
register_pytree_with_keys(
    collections.OrderedDict,
    lambda x: (tuple((DictKey(k), x[k]) for k in x), tuple(x)),
    lambda keys, values: collections.OrderedDict(zip(keys, values, strict=True)),
)


def _flatten_defaultdict_with_keys(d: collections.defaultdict) -> tuple[tuple, tuple]:
    keys = tuple(sorted(d))
    return tuple((DictKey(k), d[k]) for k in keys), (d.default_factory, keys)


register_pytree_with_keys(
    collections.defaultdict,
    _flatten_defaultdict_with_keys,
    lambda aux, values: collections.defaultdict(aux[0], zip(aux[1], values, strict=True)),
)
# --8<-- [end:builtin-custom]


def register_static(cls: type[T]) -> type[T]:
    """Register `cls` as a node with no children whose instance is its own aux data."""
    register_pytree_with_keys(cls, lambda obj: ((), obj), lambda obj, _children: obj)
    return cls
