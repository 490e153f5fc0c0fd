"""The docs pictures (shared/diagrams): each renders to a valid, non-empty SVG from real objects.

The pages draw these at build time; here each drawing function runs on the same kind of object
a page hands it (a jaxpr from make_jaxpr, a treedef from tree_flatten, a batching log, ...) and
the result is parsed as XML. test_pages.py checks the pictures in the built site.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import jax
import numpy as np
import pytest

import stages.s01_pytrees as tu
from shared.diagrams import figure, jaxpr_svg, printed_names, split_roles
from shared.diagrams.jaxpr import Panel, cotangent_edges, panels_svg
from shared.diagrams.layout import layered
from shared.diagrams.pictures import (
    batch_axis_svg,
    cache_stack_svg,
    cost_bars_svg,
    scan_residuals_svg,
    stage_map_svg,
    trace_stack_svg,
)
from shared.diagrams.pytree import pytree_svg
from stages.s02_tracing import lax, make_jaxpr
from stages.s03_partial_eval import partial_eval as pe
from stages.s04_autodiff import ad, jvp, vjp
from stages.s07_caches import util as cache_util

SVG = "{http://www.w3.org/2000/svg}"


def check_svg(text: str) -> ET.Element:
    """Parse one picture and check it has a size, a title and something drawn."""
    root = ET.fromstring(text)
    assert root.tag == SVG + "svg"
    x0, y0, w, h = map(float, root.get("viewBox").split())
    assert w > 20 and h > 20
    assert float(root.get("width")) == w and float(root.get("height")) == h
    assert (root.findtext(SVG + "title") or "").strip()
    drawn = [e for e in root.iter() if e.tag in {SVG + t for t in ("rect", "text", "path")}]
    assert len(drawn) > 3
    return root


def texts(root: ET.Element) -> list[str]:
    return [e.text or "" for e in root.iter(SVG + "text")]


def f(x):
    return lax.mul(lax.sin(x), lax.cos(x))


W = np.arange(6, dtype=np.float32).reshape(3, 2)


def layer(x):
    return lax.tanh(lax.add(lax.dot_general(x, W, (((1,), (0,)), ((), ()))), 1.0))


def test_a_jaxpr_is_drawn_with_one_box_per_equation_named_as_printed():
    closed = make_jaxpr(layer)(np.ones((4, 3), np.float32))
    root = check_svg(jaxpr_svg(closed, "layer"))
    labels = texts(root)
    printed = str(closed)
    for line in ("c:f32[4,2]", "dot_general b a", "d:f32[4,2]", "add c 1.0", "tanh d",
                 "a:f32[3,2]", "constvar"):
        assert line in labels
    for name in ("a:f32[3,2]", "b:f32[4,3]", "c:f32[4,2]", "d:f32[4,2]", "e:f32[4,2]"):
        assert name in printed  # the picture's names are the printer's


@pytest.mark.parametrize("build", [
    lambda: make_jaxpr(lambda x, t: jvp(f, (x,), (t,)))(0.5, 1.0),
    lambda: make_jaxpr(lambda x: (lax.sin(x), lax.neg(x))[1])(1.0),
    lambda: jax.make_jaxpr(lambda x: jax.lax.mul(jax.lax.sin(x), x))(1.0),
], ids=["ours_jvp", "ours_unused_binder", "jax_jaxpr"])
def test_printed_names_match_the_printer(build):
    closed = build()
    names = printed_names(closed)
    printed = str(closed)
    jaxpr = closed.jaxpr
    for v in [*jaxpr.invars, *(o for e in jaxpr.eqns for o in e.outvars)]:
        name = names[id(v)]
        if name != "_":
            assert f"{name}:{v.aval.str_short(short_dtypes=True)}" in printed


def test_split_roles_follow_the_rule_known_only_if_every_input_is_known():
    closed = make_jaxpr(lambda x, y: lax.add(lax.mul(lax.sin(x), lax.cos(y)), x))(1.0, 2.0)
    roles = split_roles(closed, [False, True])
    ours = [roles[("eqn", i)] for i in range(len(closed.jaxpr.eqns))]
    assert ours == ["known", "unknown", "unknown", "unknown"]  # sin x; cos y, mul, add
    known, unknown, _, res = pe.partial_eval_jaxpr_nounits(closed, [False, True], False)
    assert len(known.jaxpr.eqns) == ours.count("known")  # the splitter agrees


def test_the_two_programs_of_a_split_are_drawn_with_their_residuals():
    closed = make_jaxpr(lambda x, y: lax.add(lax.mul(lax.sin(x), lax.cos(y)), x))(1.0, 2.0)
    known, unknown, _, res = pe.partial_eval_jaxpr_nounits(closed, [False, True], False)
    n = len(res)
    svg = panels_svg([[Panel("traced", closed), Panel("known", known),
                       Panel("unknown", unknown, below=True)]], "split",
                     links=[((1, ("out", i)), (2, ("in", i)), f"residual {i}")
                            for i in range(n)], arrows=[(0, 1, "split")])
    labels = texts(check_svg(svg))
    assert [f"residual {i}" for i in range(n)] == [t for t in labels if t.startswith("residual")]


def test_transposed_edges_carry_the_cotangents_of_the_reverse_walk():
    y, f_vjp = vjp(f, np.float32(0.5))
    linear, log = f_vjp.jaxpr, []
    undefined = [ad.UndefinedPrimal(v.aval) for v in linear.jaxpr.invars]
    (ct,) = ad.backward_pass(linear.jaxpr, linear.consts, undefined, [np.float32(1.0)],
                             on_accumulate=lambda *entry: log.append(entry))
    labels = cotangent_edges(f_vjp.jaxpr, log, fmt="{:.6f}")
    x = f_vjp.jaxpr.jaxpr.invars[0]
    into_x = [float(v) for (var, _), v in labels.items() if var == id(x)]
    assert len(into_x) == 2  # x is read by two equations, each sends a cotangent back
    assert sum(into_x) == pytest.approx(float(ct), abs=1e-5)
    assert float(ct) == pytest.approx(np.cos(1.0), rel=1e-5)
    check_svg(jaxpr_svg(f_vjp.jaxpr, "transposed", backwards=True, edge_labels=labels))


@pytest.mark.parametrize("flatten", [tu.tree_flatten, jax.tree_util.tree_flatten],
                         ids=["ours", "jax"])
def test_a_pytree_is_drawn_from_its_treedef_with_its_leaves_in_order(flatten):
    params = {"dense": {"w": np.ones((2, 3)), "b": np.zeros(3)}, "scale": 0.5, "cache": None}
    leaves, treedef = flatten(params)
    labels = texts(check_svg(pytree_svg(treedef, leaves, "params")))
    assert ["leaf 0", "leaf 1", "leaf 2"] == [t for t in labels if t.startswith("leaf")]
    assert {"'cache'", "'dense'", "'scale'", "'b'", "'w'", "None"} <= set(labels)
    assert f"treedef = {treedef}" in labels


def test_trace_stacks_batch_axes_scans_and_the_stage_map_render():
    check_svg(trace_stack_svg(
        [("vmap(grad(f))", [("JVPTrace", "grad"), ("BatchTrace", "vmap"),
                            ("EvalTrace", "runs")]),
         ("grad(vmap(f))", [("BatchTrace", "vmap"), ("JVPTrace", "grad"),
                            ("EvalTrace", "runs")]),
         ("JAX", [("LinearizeTrace", "grad"), ("EvalTrace", "runs")])],
        "stacks", footers=[["x: BatchTracer"]]))
    root = check_svg(batch_axis_svg([("sin", [((3, 5, 4), 1)], ((3, 5, 4), 1)),
                                     ("mul", [((5, 4), 0), ((4,), None)], ((5, 4), 0))], "axes"))
    assert "batch on axis 1" in texts(root)
    check_svg(scan_residuals_svg([1.0, 0.84, 0.77, 0.11], [0.84, 0.91, 0.14],
                                 [1.0, 0.14, 0.13, 0.11], "scan"))
    root = check_svg(stage_map_svg({n: f"stage {n}" for n in range(1, 13)}, {1, 2},
                                   {1: "stages/01/", 2: "stages/02/"}))
    links = [a.get("href") for a in root.iter(SVG + "a")]
    assert links == ["stages/01/", "stages/02/"]  # only built stages link


def test_the_cache_stack_is_drawn_from_the_layers_with_the_key_each_compares():
    layers = [(name, cache_util.registry[name].key_doc, "hit", "miss")
              for name in cache_util.LAYERS[:5]]
    aside = [("primitive", cache_util.registry["primitive"].key_doc, "joins at layer 1")]
    root = check_svg(cache_stack_svg(layers, "stack", bottom="compile", aside=aside))
    labels = texts(root)
    assert [t for t in labels if " \u00b7 " in t] == [
        f"{i} \u00b7 {name}" for i, name in enumerate(cache_util.LAYERS, start=1)]
    drawn = " ".join(labels)
    for name in cache_util.LAYERS:  # each key's words are there, wrapped over lines
        words = cache_util.registry[name].key_doc.split()
        assert all(w in drawn for w in words), name


def test_cost_bars_stack_the_parts_in_order_with_their_total_and_width_by_amount():
    parts = [("execute", 3.0, "neutral"), ("client", 0.2, "input"), ("stage 7", 5.0, "unknown")]
    root = check_svg(cost_bars_svg([("jax", [("all", 3.5, "output")]), ("ours", parts)], "cost"))
    labels = texts(root)
    assert "3.5 us" in labels and "8.2 us" in labels  # each bar's total
    assert "execute 3.0" in labels and "stage 7 5.0" in labels  # wide parts: labelled inside
    assert "client 0.2" in labels  # a narrow part: labelled under its bar
    widths = [float(r.get("width")) for r in root.iter(SVG + "rect")
              if r.get("height") == "26"]
    assert widths == [3.5 * 40, 3.0 * 40, 0.2 * 40, 5.0 * 40]  # in order, 40 px per unit


def test_a_figure_wraps_the_svg_with_a_caption_in_which_backticks_mark_code():
    html = figure(jaxpr_svg(make_jaxpr(lax.sin)(1.0), "sin"), "the `sin` <jaxpr>")
    assert html.startswith('<figure class="course-figure"><svg')
    assert "<figcaption>the <code>sin</code> &lt;jaxpr&gt;</figcaption>" in html


def test_the_layout_keeps_nodes_of_a_layer_apart_and_edges_between_layers():
    sizes = {n: (40.0 + 10 * (n % 3), 20.0) for n in range(8)}
    edges = [(0, 2), (1, 2), (0, 3), (2, 4), (3, 4), (1, 5), (4, 6), (5, 6), (0, 7)]
    lay = layered(sizes, edges, node_gap=10)
    rows: dict[float, list[int]] = {}
    for n, (_, y) in lay.centers.items():
        rows.setdefault(y, []).append(n)
    for row in rows.values():
        spans = sorted((lay.centers[n][0] - sizes[n][0] / 2, lay.centers[n][0] + sizes[n][0] / 2)
                       for n in row)
        for (_, right), (left, _) in zip(spans, spans[1:], strict=False):
            assert left >= right + 10 - 1e-6
    for (a, b), route in zip(edges, lay.routes, strict=True):
        assert route[0][1] < route[-1][1]  # every edge runs downwards
        assert lay.centers[a][1] < lay.centers[b][1]


def test_a_sequence_diagram_has_a_lane_per_party_and_an_arrow_per_call_in_order():
    from shared.diagrams.flow import Message, sequence_svg

    messages = [Message(0, 1, "transfer_to_device", "TransferToDeviceTime"),
                Message(1, 2, "execute_sharded", "ExecuteTime"),
                Message(2, 0, "not ready yet", kind="return"),
                Message(0, 1, "transfer_from_device", "blocks", kind="blocking")]
    root = check_svg(sequence_svg(["step", "client", "PJRT"], messages, "one step",
                                  groups=[(0, 0, "inputs down"), (1, 3, "run")]))
    labels = texts(root)
    assert [t for t in labels if t in {m.label for m in messages}] == [m.label for m in messages]
    assert {"step", "client", "PJRT", "inputs down", "run", "ExecuteTime"} <= set(labels)
    paths = [p for p in root.iter(SVG + "path") if p.get("marker-end")]
    assert len(paths) == len(messages)
    assert [p.get("stroke-width") for p in paths][-1] == "2.6"  # the blocking call stands out
    assert paths[2].get("stroke-dasharray")  # a return is dashed


def test_a_flowchart_asks_its_questions_in_order_and_ends_in_the_otherwise_box():
    from shared.diagrams.flow import Branch, flowchart_svg

    branches = [Branch("plugins on and not CPU?", ["a registered plugin"]),
                Branch("CPU?", ["CPU client", "CPU_NUM_DEVICES"]), Branch("TPU?", ["libtpu"])]
    root = check_svg(flowchart_svg(branches, ["Unknown PJRT_DEVICE"], "registry",
                                   start="PJRT_DEVICE"))
    labels = texts(root)
    questions = [t for t in labels if t.endswith("?")]
    assert questions == [b.question for b in branches]
    assert labels.count("yes") == labels.count("no") == 3
    assert labels.index("Unknown PJRT_DEVICE") > labels.index("TPU?")
    diamonds = [p for p in root.iter(SVG + "path") if p.get("d", "").endswith("Z")]
    assert len(diamonds) == 3


def test_a_lowering_is_drawn_equation_by_equation_with_the_ssa_values_bound():
    import stages.s08_lowering as s08
    from shared.diagrams.lowering import lowering_svg, main_body, record_lowering

    def g(x):
        return lax.reduce_sum(lax.mul(lax.tanh(x), 2.0), (0,)), x

    closed = make_jaxpr(g)(np.ones(3, np.float32))
    record = record_lowering(closed,
                             lambda c: s08.lower_jaxpr(c, "g", keep_unused=True).as_text())
    assert record.text == s08.lower_jaxpr(closed, "g", keep_unused=True).as_text()
    _, ops, returned = main_body(record.text)
    assert [op for row in record.rows for op in row.ops] == ops  # every op, once, in order
    assert [row.binds for row in record.rows] == [[("b", "%0")], [("c", "%2")], [("d", "%3")]]
    assert record.rows[1].ops[0].startswith("%cst = stablehlo.constant")  # the literal 2.0
    assert record.inputs.binds == [("a", "%arg0")] and returned == ["%3", "%arg0"]
    assert record.outputs.binds == [("d", "%3"), ("a", "%arg0")]
    labels = texts(check_svg(lowering_svg(record, "g lowered")))
    assert {"b:f32[3] = tanh a", "%0 = stablehlo.tanh %arg0", "c \u21a6 %2",
            "return %3, %arg0"} <= set(labels)
