"""Registration: the six ways to make a class a pytree node, and their errors, against jax.

Every test defines its own classes: a type can be registered only once per process.
"""

from __future__ import annotations

import collections
import dataclasses
import functools

import jax.tree_util as jtu
import pytest

import stages.s01_pytrees as tu


def _same_structure(tree):
    leaves, treedef = tu.tree_flatten(tree)
    jax_leaves, jax_treedef = jtu.tree_flatten(tree)
    assert leaves == jax_leaves
    assert str(treedef) == str(jax_treedef)
    return leaves, treedef


def test_register_pytree_node_flattens_with_the_given_functions():
    class Box:
        def __init__(self, a, b):
            self.a, self.b = a, b

    for lib in (tu, jtu):
        lib.register_pytree_node(Box, lambda x: ((x.a, x.b), "meta"), lambda m, c: Box(*c))
    leaves, treedef = _same_structure([Box(1, (2, 3)), 4])
    assert str(treedef) == "PyTreeDef([CustomNode(Box[meta], [*, (*, *)]), *])"
    rebuilt = tu.tree_unflatten(treedef, [10, 20, 30, 40])
    assert (rebuilt[0].a, rebuilt[0].b, rebuilt[1]) == (10, (20, 30), 40)


def test_unflatten_func_gets_the_children_as_a_tuple_like_jax():
    got = []

    class Spy:
        def __init__(self, *xs):
            self.xs = xs

    def unflatten(aux, children):
        got.append(type(children))
        return Spy(*children)

    for lib in (tu, jtu):
        lib.register_pytree_node(Spy, lambda s: (list(s.xs), None), unflatten)
        lib.tree_unflatten(lib.tree_structure(Spy(1, 2)), [3, 4])
    assert got == [tuple, tuple]  # ours, then jax


def test_a_flatten_function_may_return_its_children_as_an_iterator_as_in_jax():
    """The children are counted while they are walked, so any iterable will do: a generator
    has no len()."""
    class Gen:
        def __init__(self, a, b):
            self.a, self.b = a, b

    for lib in (tu, jtu):
        lib.register_pytree_node(Gen, lambda g: ((c for c in (g.a, g.b)), None),
                                 lambda _, c: Gen(*c))
    leaves, treedef = _same_structure(Gen(1, [2, 3]))
    assert (leaves, str(treedef)) == ([1, 2, 3], "PyTreeDef(CustomNode(Gen[None], [*, [*, *]]))")


def test_register_pytree_node_class_uses_the_methods():
    @tu.register_pytree_node_class
    @jtu.register_pytree_node_class
    class Vec:
        def __init__(self, xs, unit):
            self.xs, self.unit = xs, unit

        def tree_flatten(self):
            return self.xs, self.unit

        @classmethod
        def tree_unflatten(cls, unit, xs):
            return cls(list(xs), unit)

    leaves, treedef = _same_structure(Vec([1, 2], "m"))
    assert str(treedef) == "PyTreeDef(CustomNode(Vec[m], [*, *]))"
    assert tu.tree_unflatten(treedef, [5, 6]).xs == [5, 6]


def test_register_pytree_with_keys_names_the_children():
    class Named:
        def __init__(self, **kids):
            self.kids = kids

    for lib in (tu, jtu):
        lib.register_pytree_with_keys(
            Named,
            lambda n, lib=lib: (tuple((lib.GetAttrKey(k), v) for k, v in n.kids.items()),
                                tuple(n.kids)),
            lambda names, values: Named(**dict(zip(names, values, strict=True))),
        )
    tree = Named(w=1, b=2)
    _same_structure(tree)
    paths = [tu.keystr(p) for p, _ in tu.tree_flatten_with_path(tree)[0]]
    assert paths == [jtu.keystr(p) for p, _ in jtu.tree_flatten_with_path(tree)[0]]
    assert paths == [".w", ".b"]


def test_register_pytree_with_keys_class_prefers_tree_flatten_when_present():
    calls = []

    def make(lib):
        @lib.register_pytree_with_keys_class
        class Keyed:
            def __init__(self, a):
                self.a = a

            def tree_flatten_with_keys(self):
                calls.append("keys")
                return ((lib.GetAttrKey("a"), self.a),), None

            def tree_flatten(self):
                calls.append("plain")
                return (self.a,), None

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(*children)

        return Keyed

    ours = make(tu)
    tu.tree_flatten(ours(1))
    assert calls == ["plain"]
    assert tu.keystr(tu.tree_flatten_with_path(ours(1))[0][0][0]) == ".a"
    assert calls == ["plain", "keys"]


def test_register_dataclass_with_explicit_fields_keeps_their_order():
    class Plain:  # not a dataclass: the field lists are required
        def __init__(self, a, b, c):
            self.a, self.b, self.c = a, b, c

    for lib in (tu, jtu):
        lib.register_dataclass(Plain, data_fields=["b", "a"], meta_fields=["c"])
    leaves, treedef = _same_structure(Plain(1, 2, "static"))
    assert leaves == [2, 1]
    assert str(treedef) == "PyTreeDef(CustomNode(Plain[('static',)], [*, *]))"
    rebuilt = tu.tree_unflatten(treedef, [20, 10])
    assert (rebuilt.a, rebuilt.b, rebuilt.c) == (10, 20, "static")
    assert tu.tree_structure(Plain(1, 2, "static")).node_data() == (Plain, ("static",))


def test_register_dataclass_decorator_reads_static_metadata():
    @tu.register_dataclass
    @jtu.register_dataclass
    @dataclasses.dataclass
    class Layer:
        w: object
        b: object
        act: str = dataclasses.field(default="relu", metadata=dict(static=True))

    leaves, treedef = _same_structure(Layer(1, 2))
    assert str(treedef) == "PyTreeDef(CustomNode(Layer[('relu',)], [*, *]))"
    assert tu.tree_unflatten(treedef, [3, 4]) == Layer(3, 4)
    assert tu.tree_structure(Layer(1, 2)) != tu.tree_structure(Layer(1, 2, "tanh"))


def test_register_dataclass_static_false_metadata_is_a_data_field():
    @tu.register_dataclass
    @jtu.register_dataclass
    @dataclasses.dataclass
    class Layer:
        w: object
        act: str = dataclasses.field(default="relu", metadata=dict(static=False))

    leaves, treedef = _same_structure(Layer(1))
    assert leaves == [1, "relu"]
    assert str(treedef) == "PyTreeDef(CustomNode(Layer[()], [*, *]))"


def test_register_dataclass_drop_fields_leaves_a_field_out():
    @dataclasses.dataclass
    class Cached:
        x: int
        cache: object = None

    for lib in (tu, jtu):
        lib.register_dataclass(Cached, data_fields=["x"], meta_fields=[], drop_fields=["cache"])
    _same_structure(Cached(1, cache="ignored"))


def _dataclass_errors():
    @dataclasses.dataclass
    class WithInitFalse:
        a: int
        b: int = dataclasses.field(init=False, default=3)

    @dataclasses.dataclass
    class Two:
        a: int
        b: int

    class NotADataclass:
        pass

    return [
        ("one-list-only", (WithInitFalse,), dict(data_fields=["a"], meta_fields=None)),
        ("unexpected", (WithInitFalse,), dict(data_fields=["a", "b"], meta_fields=[])),
        ("missing", (WithInitFalse,), dict(data_fields=[], meta_fields=[])),
        ("not-a-dataclass", (NotADataclass,), {}),
        ("overlap", (Two,), dict(data_fields=["a", "b"], meta_fields=["a"])),
        # the values are printed with repr: a string keeps its quotes
        ("data-fields-a-string", (Two,), dict(data_fields="a", meta_fields=None)),
        ("meta-fields-a-string", (Two,), dict(data_fields=None, meta_fields="")),
        ("a-string-for-the-type", ("Two",), {}),
    ]


@pytest.mark.parametrize("args, kwargs", [c[1:] for c in _dataclass_errors()],
                         ids=[c[0] for c in _dataclass_errors()])
def test_register_dataclass_errors_equal_jax(args, kwargs):
    with pytest.raises((TypeError, ValueError)) as jax_info:
        jtu.register_dataclass(*args, **kwargs)
    with pytest.raises(type(jax_info.value)) as info:
        tu.register_dataclass(*args, **kwargs)
    assert str(info.value) == str(jax_info.value)


def test_register_static_makes_a_node_with_no_children():
    @tu.register_static
    class Config:
        def __repr__(self):
            return "Config()"

    leaves, treedef = tu.tree_flatten([Config(), 1])
    assert leaves == [1]
    assert str(treedef) == "PyTreeDef([CustomNode(Config[Config()], []), *])"
    assert tu.tree_leaves_with_path([Config(), 1])[0][0] == (tu.SequenceKey(1),)


def test_duplicate_registration_error_equals_jax(same_error):
    class Once:
        pass

    flatten, unflatten = (lambda o: ((), None)), (lambda a, c: Once())
    for lib in (tu, jtu):
        lib.register_pytree_node(Once, flatten, unflatten)
    text = same_error(lambda: tu.register_pytree_node(Once, flatten, unflatten),
                      lambda: jtu.register_pytree_node(Once, flatten, unflatten))
    assert text.startswith("Duplicate custom PyTreeDef type registration for <class '")


@pytest.mark.parametrize("builtin", [tuple, list, dict, type(None), collections.OrderedDict,
                                     collections.defaultdict], ids=lambda t: t.__name__)
def test_builtin_node_types_cannot_be_registered_again(same_error, builtin):
    flatten, unflatten = (lambda o: ((), None)), (lambda a, c: None)
    same_error(lambda: tu.register_pytree_node(builtin, flatten, unflatten),
               lambda: jtu.register_pytree_node(builtin, flatten, unflatten))


def test_duplicate_dataclass_registration_error_equals_jax(same_error):
    @dataclasses.dataclass
    class Twice:
        x: int

    for lib in (tu, jtu):
        lib.register_dataclass(Twice)
    text = same_error(lambda: tu.register_dataclass(Twice), lambda: jtu.register_dataclass(Twice))
    assert text.startswith("Duplicate custom dataclass PyTreeDef type registration for")


def test_registering_a_namedtuple_class_overrides_the_namedtuple_rule():
    Pt = collections.namedtuple("Pt", ["a", "b"])
    for lib in (tu, jtu):
        lib.register_pytree_node(Pt, lambda p: (tuple(p), None), lambda _, c: Pt(*c))
    _, treedef = _same_structure(Pt(1, 2))
    assert str(treedef) == "PyTreeDef(CustomNode(Pt[None], [*, *]))"


def test_registration_reaches_every_registry():
    class Everywhere:
        pass

    tu.register_pytree_node(Everywhere, lambda e: ((), None), lambda a, c: Everywhere())
    for registry in (tu.default_registry, tu.none_leaf_registry):
        assert registry.flatten(Everywhere())[0] == []


def test_register_dataclass_reaches_every_registry_as_in_jax():
    from jax._src import tree_util as jax_tree_util

    from stages.s01_pytrees import registration

    @dataclasses.dataclass
    class Pt:
        a: object
        b: object

    for lib in (tu, jtu):
        lib.register_dataclass(Pt, data_fields=["a", "b"], meta_fields=[])
    # the none_leaf_registry knows the class too, and keeps its None field as a leaf
    for name, leaves in [("none_leaf_registry", [1, None]), ("dispatch_registry", [1])]:
        ours = getattr(registration, name).flatten(Pt(1, None))
        theirs = getattr(jax_tree_util, name).flatten(Pt(1, None))
        assert ours[0] == theirs[0] == leaves, name
        assert str(ours[1]) == str(theirs[1]), name


@pytest.mark.parametrize("make", [
    lambda P: P(max, 1),
    lambda P: P(max, 1, key=None),
    lambda P: P(P(max, 1), 2),  # the inner Partial is the function: its 1 is no leaf
    lambda P: P(functools.partial(max, 1), 2),
], ids=["plain", "keyword", "partial_of_partial", "partial_of_functools_partial"])
def test_partial_is_a_pytree_whose_arguments_are_the_leaves_as_jaxs(make):
    ours, theirs = make(tu.Partial), make(jtu.Partial)
    assert tu.tree_leaves(ours) == jtu.tree_leaves(theirs)
    assert str(tu.tree_structure(ours)) == str(jtu.tree_structure(theirs)).replace(
        "jax.tree_util.Partial", "Partial")
    assert ours(0) == theirs(0)


def test_a_partial_of_a_functools_partial_shows_its_parts_as_jaxs():
    def add(a, b, c=0):
        return a + b + c

    ours = tu.Partial(functools.partial(add, 1, c=3), 2)
    theirs = jtu.Partial(functools.partial(add, 1, c=3), 2)
    parts = lambda p: (p.func.func, p.func.args, p.func.keywords, p.args, p())
    assert parts(ours) == parts(theirs) == (add, (1,), {"c": 3}, (2,), 6)
    # the function is aux data, so a tree_map keeps it, parts and all
    assert parts(tu.tree_map(lambda x: x * 10, ours)) == parts(
        jtu.tree_map(lambda x: x * 10, theirs)) == (add, (1,), {"c": 3}, (20,), 24)


def test_is_tree_node_equals_jax():
    class Registered:
        pass

    class SubRegistered(Registered):
        pass

    class FakeNamedTuple(tuple):  # a tuple with _fields counts as a namedtuple
        _fields = ("a",)

    class SubList(list):
        pass

    Nt = collections.namedtuple("Nt", ["a"])
    for lib in (tu, jtu):
        lib.register_pytree_node(Registered, lambda r: ((), None), lambda a, c: Registered())
    for typ in (int, str, object, list, tuple, dict, type(None), collections.OrderedDict,
                collections.defaultdict, Nt, type("SubNt", (Nt,), {}), FakeNamedTuple, SubList,
                Registered, SubRegistered, 5, [1], Nt(1)):
        assert tu.is_tree_node(typ) == jtu.is_tree_node(typ), typ
    assert tu.is_tree_node(tu.Partial) and jtu.is_tree_node(jtu.Partial)
    from jax._src.tree_util import none_leaf_registry

    assert tu.none_leaf_registry.is_node(type(None)) is none_leaf_registry.is_node(type(None))
