"""The explainers the course follows, and the stages whose pages answer their questions.

Titles are the explainers' own, word for word: the pages cite them by title. `stages` lists every
stage that answers part of an explainer; a stage not built yet is shown as planned on the home
page. tests/course/test_pages.py checks that the home page's table and every built stage's
"Explainers answered" box agree with this list.
"""

from __future__ import annotations

from typing import NamedTuple


class Explainer(NamedTuple):
    title: str
    stages: tuple[int, ...]


EXPLAINERS: tuple[Explainer, ...] = (
    Explainer("Tracing → jaxpr: the One Trick Behind Every JAX Transform", (1, 2)),
    Explainer("jit(grad(vmap(f))): Why Transform Order Changes the Answer", (4, 5, 7)),
    Explainer("Params Are Data: the Functional Model Behind Flax", (12,)),
    Explainer("The Seam Interface: computation_client.h, Line by Line", (9,)),
    Explainer("The Lazy Tensor: What Happens Between Your Op and sync()", (10,)),
    Explainer("How PJRT_DEVICE Becomes a Client: pjrt_registry.cpp, Line by Line", (9,)),
    Explainer("The PJRT Boundary: One Training Step, Crossing by Crossing", (9, 10)),
    Explainer("Writing torch_xla Notebooks That Survive Colab", (10,)),
    Explainer("torch.compile Meets the Lazy Tensor: dynamo_bridge.py, Line by Line", (10,)),
    Explainer("Where torch_xla Calls PJRT: pjrt_computation_client.cpp, Line by Line", (9,)),
    Explainer("SPMD in torch_xla: A Mesh, an Annotation, and One Virtual Device", (11,)),
    Explainer("From Pending IR to a Device Buffer: xla_graph_executor.cpp, Line by Line", (10,)),
    Explainer("What JAX Hashes Before It Decides Not to Compile: cache_key.py, Line by Line",
              (7, 8)),
    Explainer("Partial Evaluation: Splitting One Traced Call Into Two Programs", (3,)),
    Explainer("linear_util.py, Line by Line", (2,)),
    Explainer("Writing JAX Notebooks That Show Their Work", (2, 7)),
    Explainer("Dispatch and Compilation: The Six Caches Under a jit Call", (2, 7)),
    Explainer("How JAX Builds a Backward Pass Out of a Forward One: ad.py, Line by Line", (3, 4)),
    Explainer("Where vmap Puts the Axis: batching.py, Line by Line", (5,)),
    Explainer("How Every JAX Transform Unpacks Your Data: tree_util.py, Line by Line", (1,)),
    Explainer("Control Flow as Primitives: One Trace, However Many Iterations", (6,)),
    Explainer("shard_map Internals: The Per-Device Body and the Checks Around It", (11,)),
    Explainer("From Jaxpr to StableHLO: One Rule Per Primitive", (8,)),
)

STAGE_TITLES = {
    1: "Pytrees", 2: "Tracing", 3: "Partial evaluation", 4: "Autodiff", 5: "vmap",
    6: "Control flow", 7: "Caches", 8: "Lowering", 9: "PJRT client", 10: "Lazy tensors",
    11: "SPMD", 12: "System",
}


def for_stage(n: int) -> list[str]:
    """The titles of the explainers stage n helps answer, in the list's order."""
    return [e.title for e in EXPLAINERS if n in e.stages]
