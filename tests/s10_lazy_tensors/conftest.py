"""Each test starts with empty counters, an empty compile cache and eager mode off."""

import pytest

from stages.s10_lazy_tensors import dynamo_bridge, graph_executor, metrics, torch_xla


@pytest.fixture(autouse=True)
def fresh():
    dynamo_bridge.clear_pending_irs()  # nothing pending from an earlier test, nothing run
    graph_executor.clear_computation_cache()
    metrics.clear_all()
    torch_xla.eager_mode(False)
    yield
    torch_xla.eager_mode(False)
