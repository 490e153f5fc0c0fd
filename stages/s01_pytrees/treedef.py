"""PyTreeDef: the structure of a pytree without its leaves.

JAX: PyTreeDef in jaxlib's pytree.cc. A treedef is a tuple of nodes in post-order (children before
their parent), as in the C++: unflatten is one left-to-right pass with a stack, flatten_up_to one
right-to-left pass, and equality is tuple equality. Treedefs are made by `PyTreeRegistry.flatten`
(pytree.py), never by hand.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from .pytree import PyTreeRegistry, Registration

# What JAX adds when None meets a non-None value in flatten_up_to.
_NONE_PREFIX_HINT = (
    "\n\nIn previous releases of JAX, flatten-up-to used to consider None to be a tree-prefix of "
    "non-None values. To obtain the previous behavior, you can usually write:\n"
    "  jax.tree.map(lambda x, y: None if x is None else f(x, y), a, b, "
    "is_leaf=lambda x: x is None)"
)
_NO_LEAF = object()  # what next() returns once the leaves have run out
_METADATA_EQ_ERROR = (
    "Exception raised while checking equality of metadata fields of pytree. Make sure that "
    "metadata fields are hashable and have simple equality semantics. (Note: arrays cannot be "
    "passed as metadata fields!)"
)


def _node_data_differs(expected: Any, actual: Any) -> bool:
    """Custom aux data compared as the C++ does: the same object always matches (even NaN or an
    array), otherwise `!=` decides."""
    return expected is not actual and bool(expected != actual)


class PyTreeKind(enum.Enum):
    """What a node is: it decides how the node is flattened, rebuilt, printed and checked."""

    LEAF = "leaf"
    NONE = "none"
    TUPLE = "tuple"
    NAMED_TUPLE = "namedtuple"
    LIST = "list"
    DICT = "dict"
    CUSTOM = "custom"
    DATACLASS = "dataclass"


class Node(NamedTuple):
    """One entry of a treedef's traversal. JAX: PyTreeDef::Node in pytree.h."""

    kind: PyTreeKind
    arity: int  # number of children
    node_data: Any  # dict: its sorted keys; namedtuple: its class; custom: the aux data
    registration: Registration | None  # how to rebuild the node; None for a leaf
    num_leaves: int  # leaves in the subtree rooted here
    num_nodes: int  # nodes in the subtree rooted here, itself included


LEAF = Node(PyTreeKind.LEAF, 0, None, None, 1, 1)


class PyTreeDef:
    """The structure of a pytree: immutable, hashable, compared node by node."""

    __slots__ = ("_registry", "_traversal", "_parts")

    def __init__(self, registry: PyTreeRegistry, traversal: tuple[Node, ...]) -> None:
        object.__setattr__(self, "_registry", registry)
        object.__setattr__(self, "_traversal", traversal)
        object.__setattr__(self, "_parts", None)

    def __setattr__(self, name: str, value: Any) -> None:
        # immutable, with the errors of JAX's C++ class: read-only properties, nothing else
        if isinstance(getattr(type(self), name, None), property):
            raise AttributeError("property of 'PyTreeDef' object has no setter")
        raise AttributeError(f"'PyTreeDef' object has no attribute '{name}'")

    @property
    def num_leaves(self) -> int:
        return self._traversal[-1].num_leaves

    @property
    def num_nodes(self) -> int:
        return self._traversal[-1].num_nodes

    # --8<-- [start:unflatten]
    def unflatten(self, leaves: Iterable[Any]) -> Any:
        """Rebuild the pytree with `leaves` in place of this treedef's `*`s, left to right."""
        # EXERCISE 1.4 (unflatten): rebuild the tree in one pass over the traversal, with a stack
        # Post-order: when a node comes up, its children are the last `arity` values stacked.
        stack: list = []
        leaf_iter = iter(leaves)
        count = 0
        for node in self._traversal:
            if node.kind is PyTreeKind.LEAF:
                try:
                    stack.append(next(leaf_iter))
                except StopIteration:
                    raise ValueError(
                        f"Too few leaves for PyTreeDef; expected {self.num_leaves}, got {count}"
                    ) from None
                count += 1
                continue
            start = len(stack) - node.arity
            children = tuple(stack[start:])
            del stack[start:]
            stack.append(node.registration.from_iterable(node.node_data, children))
        if next(leaf_iter, _NO_LEAF) is not _NO_LEAF:
            raise ValueError(f"Too many leaves for PyTreeDef; expected {self.num_leaves}.")
        return stack[0]
        # END EXERCISE
    # --8<-- [end:unflatten]

    # --8<-- [start:flatten-up-to]
    def flatten_up_to(self, xs: Any) -> list:
        """Split `xs` at this treedef's leaves: each `*` takes the whole subtree found there.

        The walk goes root first (the traversal backwards), so the leaves fill in from the right.
        """
        leaves: list = [None] * self.num_leaves
        leaf = self.num_leaves
        stack = [xs]
        for node in reversed(self._traversal):
            obj = stack.pop()
            if node.kind is PyTreeKind.LEAF:
                leaf -= 1
                leaves[leaf] = obj
            else:
                stack.extend(self._children_up_to(node, obj))
        return leaves
    # --8<-- [end:flatten-up-to]

    def _children_up_to(self, node: Node, obj: Any) -> list:
        """The children of `obj`, checked against `node`, with the C++ error texts."""
        kind = node.kind
        if kind is PyTreeKind.NONE:
            if obj is not None:
                raise ValueError(f"Expected None, got {obj!r}.{_NONE_PREFIX_HINT}")
            return []
        if kind is PyTreeKind.TUPLE or kind is PyTreeKind.LIST:
            name = "tuple" if kind is PyTreeKind.TUPLE else "list"
            if type(obj) is not node.registration.type:
                raise ValueError(f"Expected {name}, got {obj!r}.")
            if len(obj) != node.arity:
                raise ValueError(f"{name.capitalize()} arity mismatch: {len(obj)} != "
                                 f"{node.arity}; {name}: {obj!r}.")
            return list(obj)
        if kind is PyTreeKind.DICT:
            if type(obj) is not dict:
                raise ValueError(f"Expected dict, got {obj!r}.")
            children, keys = node.registration.to_iterable(obj)  # sorted, as flatten sorts
            if list(keys) != list(node.node_data):
                raise ValueError(f"Dict key mismatch; expected keys: {list(node.node_data)!r}; "
                                 f"present keys: {list(keys)!r}.")
            return list(children)
        if kind is PyTreeKind.NAMED_TUPLE:
            if not (isinstance(obj, tuple) and hasattr(obj, "_fields")):
                raise ValueError(f"Expected named tuple, got {obj!r}.")
            if len(obj) != node.arity:
                raise ValueError(f"Named tuple arity mismatch: {len(obj)} != {node.arity}; "
                                 f"tuple: {obj!r}.")
            if type(obj) is not node.node_data:
                raise ValueError(f"Named tuple type mismatch: expected type: "
                                 f"{node.node_data!r}, tuple: {obj!r}.")
            return list(obj)
        # A custom or dataclass node: same registration, same aux data, same number of children.
        what = "custom dataclass" if kind is PyTreeKind.DATACLASS else "custom"
        registration = node.registration
        if self._registry.lookup(obj) is not registration:
            raise ValueError(f"{what.capitalize()} node type mismatch: expected type: "
                             f"{registration.type!r}, value: {obj!r}.")
        children, node_data = registration.to_iterable(obj)
        if _node_data_differs(node.node_data, node_data):
            raise ValueError(f"Mismatch {what} node data: {node.node_data!r} != {node_data!r}; "
                             f"value: {obj!r}.")
        children = list(children)
        if len(children) != node.arity:
            raise ValueError(f"Custom type arity mismatch: {len(children)} != {node.arity}; "
                             f"value: {obj!r}.")
        return children

    def children(self) -> list[PyTreeDef]:
        """The treedefs of the root's children, left to right."""
        out = []
        end = len(self._traversal) - 1  # the root is last; its last child ends just before it
        for _ in range(self._traversal[-1].arity):
            size = self._traversal[end - 1].num_nodes
            out.append(PyTreeDef(self._registry, self._traversal[end - size:end]))
            end -= size
        out.reverse()
        return out

    def node_data(self) -> tuple[type, Any] | None:
        """`(type, data)` of the root node, or None for a leaf."""
        root = self._traversal[-1]
        if root.kind is PyTreeKind.LEAF:
            return None
        if root.kind is PyTreeKind.NAMED_TUPLE:
            return root.node_data, None
        if root.kind is PyTreeKind.DICT:
            return dict, list(root.node_data)
        return root.registration.type, root.node_data

    def compose(self, inner: PyTreeDef) -> PyTreeDef:
        """This structure with the `inner` structure in place of every leaf."""
        if inner._registry is not self._registry:
            raise ValueError("PyTree registries of PyTreeDefs passed to Compose() must match.")
        traversal: list[Node] = []
        for node in self._traversal:
            if node.kind is PyTreeKind.LEAF:
                traversal.extend(inner._traversal)
            else:
                leaves = node.num_leaves * inner.num_leaves
                nodes = node.num_nodes - node.num_leaves + node.num_leaves * inner.num_nodes
                traversal.append(node._replace(num_leaves=leaves, num_nodes=nodes))
        return PyTreeDef(self._registry, tuple(traversal))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PyTreeDef):
            return NotImplemented
        parts, custom = self._compared()
        if parts != other._compared()[0]:  # kinds, arities, registrations, keys: one C loop
            return False
        for i in custom:  # then custom aux data, with `!=` as the C++ (a tuple would use ==)
            try:
                if _node_data_differs(self._traversal[i].node_data,
                                      other._traversal[i].node_data):
                    return False
            except Exception as err:  # e.g. an array as aux data: == has no single answer
                raise ValueError(_METADATA_EQ_ERROR) from err
        return True

    def _compared(self) -> tuple[tuple, tuple[int, ...]]:
        """Made once: per node its kind, arity, registration (compared by identity) and node
        data, custom aux data left out (it may be unhashable); and where the custom nodes are.
        A cache hit compares a fresh treedef with a stored one: node by node in Python took
        0.3 us a node."""
        if self._parts is None:
            custom = (PyTreeKind.CUSTOM, PyTreeKind.DATACLASS)
            parts = tuple((n.kind, n.arity, n.registration,
                           None if n.kind in custom else n.node_data) for n in self._traversal)
            where = tuple(i for i, n in enumerate(self._traversal) if n.kind in custom)
            object.__setattr__(self, "_parts", (parts, where, hash(parts)))
        return self._parts[:2]

    def __reduce__(self) -> tuple:
        """Pickled as its nodes, each node's registration as its type (JAX pickles treedefs
        too); unpickling finds the registrations in the same (named) registry."""
        nodes = tuple((n.kind, n.arity, n.node_data, n.registration and n.registration.type,
                       n.num_leaves, n.num_nodes) for n in self._traversal)
        return rebuild_treedef, (self._registry, nodes)

    def __hash__(self) -> int:  # a jit cache hit hashes one: no call once the parts are made
        parts = self._parts
        if parts is None:
            self._compared()
            parts = self._parts
        return parts[2]

    def __str__(self) -> str:
        stack: list[str] = []
        for node in self._traversal:
            start = len(stack) - node.arity
            children = stack[start:]
            del stack[start:]
            stack.append(_node_str(node, children))
        return f"PyTreeDef({stack[0]})"

    __repr__ = __str__


def rebuild_treedef(registry: PyTreeRegistry, nodes: tuple) -> PyTreeDef:
    """A treedef from the nodes `PyTreeDef.__reduce__` saved."""
    traversal = tuple(Node(kind, arity, data, registry.registration_of(kind, nodetype),
                           num_leaves, num_nodes)
                      for kind, arity, data, nodetype, num_leaves, num_nodes in nodes)
    return PyTreeDef(registry, traversal)


def _node_str(node: Node, children: list[str]) -> str:
    """One node printed as pytree.cc prints it, given its children already printed."""
    kind = node.kind
    joined = ", ".join(children)
    if kind is PyTreeKind.LEAF:
        return "*"
    if kind is PyTreeKind.NONE:
        return "None"
    if kind is PyTreeKind.TUPLE:
        return f"({joined},)" if node.arity == 1 else f"({joined})"
    if kind is PyTreeKind.LIST:
        return f"[{joined}]"
    if kind is PyTreeKind.DICT:
        items = ", ".join(f"{k!r}: {c}" for k, c in zip(node.node_data, children, strict=True))
        return "{" + items + "}"
    if kind is PyTreeKind.NAMED_TUPLE:
        return f"CustomNode(namedtuple[{node.node_data.__name__}], [{joined}])"
    # Custom and dataclass nodes print their type's name and str() of their aux data.
    return f"CustomNode({node.registration.type.__name__}[{node.node_data}], [{joined}])"
