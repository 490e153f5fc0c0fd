"""Errors a learner meets with vmap, asserted by message: each is JAX's text, computed live."""

from __future__ import annotations

import re

import jax
import numpy as np
import pytest

import stages.s05_vmap as s05

f32 = np.float32


def _error(fn, *args) -> tuple[type, str]:
    with pytest.raises(Exception) as info:
        fn(*args)
    return type(info.value), str(info.value)


def _same_error(make, *args, ours, theirs) -> str:
    mine = _error(make(ours), *args)
    want = _error(make(theirs), *args)
    assert mine == want
    return mine[1]


def test_inconsistent_axis_sizes_list_each_size_and_argument(ours, theirs):
    msg = _same_error(lambda lib: lib.vmap(lambda a, b: lib.lax.add(a, b)),
                      np.ones((2, 3), f32), np.ones((3, 3), f32), ours=ours, theirs=theirs)
    assert msg == (
        "vmap got inconsistent sizes for array axes to be mapped:\n"
        "  * one axis had size 2: axis 0 of argument a of type float32[2,3];\n"
        "  * one axis had size 3: axis 0 of argument b of type float32[3,3]"
    )


def test_inconsistent_sizes_count_the_majority_and_name_pytree_paths(ours, theirs):
    msg = _same_error(lambda lib: lib.vmap(lambda a, b, c: a[0], in_axes=(0, 0, 1)),
                      (np.ones((2, 3), f32),), {"q": np.ones((3, 3), f32)},
                      np.ones((4, 3), f32), ours=ours, theirs=theirs)
    assert msg == (
        "vmap got inconsistent sizes for array axes to be mapped:\n"
        "  * most axes (2 of them) had size 3, e.g. axis 0 of argument b['q'] of type "
        "float32[3,3];\n"
        "  * one axis had size 2: axis 0 of argument a[0] of type float32[2,3]"
    )
    msg = _same_error(lambda lib: lib.vmap(lambda *a: a[0], axis_size=5),
                      np.ones((2, 3), f32), np.ones((2, 3), f32), ours=ours, theirs=theirs)
    assert msg == (
        "vmap got inconsistent sizes for array axes to be mapped:\n"
        "  * the `axis_size` argument was 5;\n"
        "  * most axes (2 of them) had size 2, e.g. axis 0 of argument a of type float32[2,3]"
    )


def test_a_second_group_of_equal_sizes_is_some_axes_not_most(ours, theirs):
    msg = _same_error(lambda lib: lib.vmap(lambda a, b, c, d, e: a),
                      np.ones((2, 3), f32), np.ones((3,), f32), np.ones((2,), f32),
                      np.ones((3, 1), f32), np.ones((2, 2), f32), ours=ours, theirs=theirs)
    assert msg == (
        "vmap got inconsistent sizes for array axes to be mapped:\n"
        "  * most axes (3 of them) had size 2, e.g. axis 0 of argument a of type "
        "float32[2,3];\n"
        "  * some axes (2 of them) had size 3, e.g. axis 0 of argument b of type float32[3]"
    )


def test_an_unmapped_argument_is_not_listed_among_the_inconsistent_sizes(ours, theirs):
    # in_axes None for c: it has no mapped axis, so it is neither a size nor an example
    msg = _same_error(lambda lib: lib.vmap(lambda a, b, c: a, in_axes=(0, 0, None)),
                      np.ones(3, f32), np.ones(4, f32), np.ones(5, f32),
                      ours=ours, theirs=theirs)
    assert msg == (
        "vmap got inconsistent sizes for array axes to be mapped:\n"
        "  * one axis had size 3: axis 0 of argument a of type float32[3];\n"
        "  * one axis had size 4: axis 0 of argument b of type float32[4]"
    )


def test_a_negative_in_axis_is_named_as_it_was_given(ours, theirs):
    msg = _same_error(lambda lib: lib.vmap(lambda a, b: a, in_axes=(0, -1)),
                      np.ones((3, 2), f32), np.ones((2, 4), f32), ours=ours, theirs=theirs)
    assert msg == (
        "vmap got inconsistent sizes for array axes to be mapped:\n"
        "  * one axis had size 3: axis 0 of argument a of type float32[3,2];\n"
        "  * one axis had size 4: axis -1 of argument b of type float32[2,4]"
    )


def test_an_in_axis_beyond_the_rank_says_which_rank_it_implies(ours, theirs):
    for axis in (2, -3):
        msg = _same_error(lambda lib, axis=axis: lib.vmap(lambda a: a, in_axes=axis),
                          np.ones((3, 3), f32), ours=ours, theirs=theirs)
        assert msg == (
            f"vmap was requested to map its argument along axis {axis}, which implies that "
            "its rank should be at least 3, but is only 2 (its shape is (3, 3))"
        )


def test_in_axes_tuple_must_have_one_entry_per_positional_argument(ours, theirs):
    msg = _same_error(lambda lib: lib.vmap(lambda a: a, in_axes=(0, 0)), np.ones(3, f32),
                      ours=ours, theirs=theirs)
    assert msg.endswith("but got len(in_axes)=2, len(args)=1")


def test_in_axes_whose_structure_does_not_match_the_arguments(ours, theirs):
    args = ({"x": np.ones(3, f32)}, np.ones(3, f32))
    msg = _same_error(lambda lib: lib.vmap(lambda a, b: a["x"], in_axes=({"y": 0}, 0)), *args,
                      ours=ours, theirs=theirs)
    assert msg.startswith("vmap in_axes specification must be a tree prefix of the "
                          "corresponding value; \n  Mismatch details (1 found):\n"
                          "  pytree structure error: different pytree metadata at key path\n"
                          "    vmap in_axes[0]\n")
    # a tuple where the argument is an array: JAX names its own placeholder class, we ours
    typ, mine = _error(ours.vmap(lambda a, b: a, in_axes=((0, 1), 0)), *args[1:] * 2)
    _, want = _error(theirs.vmap(lambda a, b: a, in_axes=((0, 1), 0)), *args[1:] * 2)
    assert typ is ValueError
    assert mine.replace("stages.s05_vmap.api", "jax._src.api_util") == want


def test_nothing_mapped_and_no_axis_size(ours, theirs):
    msg = _same_error(lambda lib: lib.vmap(lambda a: a, in_axes=None), np.ones(3, f32),
                      ours=ours, theirs=theirs)
    assert msg == ("vmap must have at least one non-None value in in_axes or axis_size must "
                   "be specified")
    _same_error(lambda lib: lib.vmap(lambda: 1.0), ours=ours, theirs=theirs)


def test_bad_axis_spec_types_fail_when_vmap_is_called(ours, theirs):
    for kwargs in ({"in_axes": "x"}, {"in_axes": (0.5,)}, {"out_axes": (0.5,)}):
        mine = _error(lambda kw=kwargs: ours.vmap(lambda a: a, **kw))
        want = _error(lambda kw=kwargs: theirs.vmap(lambda a: a, **kw))
        assert mine == want and mine[0] is TypeError


def test_a_batched_output_cannot_have_out_axes_none(ours, theirs):
    msg = _same_error(lambda lib: lib.vmap(lambda a: {"x": (a, 1.0)},
                                           out_axes={"x": (None, None)}),
                      np.ones(3, f32), ours=ours, theirs=theirs)
    assert msg == "at vmap out_axes['x'][0], got axis spec None but output was batched on axis 0"


def test_out_axes_structure_and_range_errors(ours, theirs):
    msg = _same_error(lambda lib: lib.vmap(lambda a: (a, a), out_axes=(0, 0, 0)),
                      np.ones(3, f32), ours=ours, theirs=theirs)
    assert "different lengths of tuple at key path\n    vmap out_axes\n" in msg
    msg = _same_error(lambda lib: lib.vmap(lambda a: a, out_axes=2), np.ones(3, f32),
                      ours=ours, theirs=theirs)
    assert msg == "axis 2 is out of bounds for array of dimension 1"


def test_a_non_array_output_is_named(ours, theirs):
    msg = _same_error(lambda lib: lib.vmap(lambda a: "hi"), np.ones(3, f32),
                      ours=ours, theirs=theirs)
    assert msg == "Output from batched function 'hi' with type <class 'str'> is not a valid " \
                  "JAX type"


@pytest.mark.parametrize("convert", [
    lambda x: float(x),
    lambda x: int(x * 2),  # a tracer a primitive made: its line is inside this function
    lambda x: bool(x > 0),
    lambda x: np.asarray(x),
    lambda x: range(x.astype(np.int32)),
], ids=["float", "int-of-a-product", "bool", "asarray", "index"])
def test_a_batch_tracer_asked_for_a_value_says_where_it_was_created(convert, ours, theirs):
    """JAX's text, ending in "This BatchTracer with object id N was created on line: <file:line:
    column (function)>", the innermost frame of this file; only the ids differ."""
    mine, want = (_error(lib.vmap(convert), np.ones(3, f32)) for lib in (ours, theirs))
    assert mine[0].__name__ == want[0].__name__
    assert "was created on line:\n  " + __file__ in want[1]
    assert re.sub(r"object id \d+", "object id N", mine[1]) == \
        re.sub(r"object id \d+", "object id N", want[1])


def test_a_leaked_batch_tracer_fails_loudly(ours):
    leaked = []
    ours.vmap(lambda a: leaked.append(a) or a)(np.ones(3, f32))
    with pytest.raises(Exception, match="Encountered an unexpected tracer"):
        ours.lax.sin(leaked[0])


@pytest.mark.parametrize("jac", ["jacfwd", "jacrev", "hessian"])
def test_a_repeated_argnum_fails_like_jax(jac):
    # the repeat finds its argument already taken and passes None: never a doubled Jacobian
    msg = _same_error(lambda lib: getattr(lib, jac)(lambda x, y: x * y * y, argnums=(0, 0)),
                      1.0, 2.0, ours=s05, theirs=jax)
    assert "NoneType" in msg


AXIS_SIZE_ERRORS = {
    "float_size_with_a_mapped_argument": (
        lambda lib: lib.vmap(lambda v: v * 2.0, axis_size=2.0), (np.ones((2, 3), f32),)),
    "float_size_nothing_mapped": (lambda lib: lib.vmap(lambda: 1.0, axis_size=2.0), ()),
    "numpy_float_size": (lambda lib: lib.vmap(lambda: 1.0, axis_size=np.float32(2)), ()),
    "bool_size": (lambda lib: lib.vmap(lambda: 1.0, axis_size=True), ()),
    "float_size_broadcast_array_output": (
        lambda lib: lib.vmap(lambda v: v, in_axes=None, axis_size=2.0), (np.ones((2, 3), f32),)),
    "float_size_broadcast_at_out_axis": (
        lambda lib: lib.vmap(lambda v: v, in_axes=None, out_axes=1, axis_size=2.0),
        (np.ones((2, 3), f32),)),
    "negative_size": (lambda lib: lib.vmap(lambda: 1.0, axis_size=-1), ()),
}


@pytest.mark.parametrize("name", list(AXIS_SIZE_ERRORS))
def test_a_bad_axis_size_fails_like_jax(name, ours, theirs):
    make, args = AXIS_SIZE_ERRORS[name]
    jax.clear_caches()  # JAX's caches take 2.0 for an equal 2 traced before (same hash)
    _same_error(make, *args, ours=ours, theirs=theirs)


def test_an_integer_like_axis_size_is_accepted_like_jax(ours, theirs):
    jax.clear_caches()
    for lib in (ours, theirs):
        out = lib.vmap(lambda: 1.0, axis_size=np.int64(2))()
        assert np.shape(out) == (2,)
