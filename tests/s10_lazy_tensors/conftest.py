"""Each test starts with empty counters, an empty compile cache and eager mode off."""

import pytest

from stages.s10_lazy_tensors import debug_util, graph_executor, metrics, torch_xla


@pytest.fixture(autouse=True)
def fresh():
    torch_xla.sync()  # nothing pending from an earlier test
    graph_executor.computation_cache = graph_executor.ComputationCache(2048)
    debug_util.forget()
    metrics.clear_all()
    torch_xla.eager_mode(False)
    yield
    torch_xla.eager_mode(False)
