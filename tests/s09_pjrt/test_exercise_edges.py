"""TransferToDevice's bookkeeping, as torch_xla's PjRtComputationClient keeps it: one
OutboundData sample of the total bytes per call, however many arrays it moves; and a
$TPU_LIBRARY_PATH that names a folder, which the loader cannot open, is passed over."""

from __future__ import annotations

import ctypes
import sys

import numpy as np
import pytest

from stages.s09_pjrt import initialize_pjrt, metrics, pjrt_registry


@pytest.fixture(scope="module")
def four():
    """A client of four CPU devices (the registry's CPU branch, CPU_NUM_DEVICES=4)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CPU_NUM_DEVICES", "4")
        return initialize_pjrt("CPU")


def test_a_transfer_of_several_arrays_is_one_outbound_sample_of_their_total(four, delta):
    # C++: OutboundDataMetric()->AddSample(total_bytes) once, after the loop over the tensors
    xs = [np.ones(3, np.float32), np.arange(4, dtype=np.int32), np.zeros((2, 2), np.float64)]
    d = delta()
    four.transfer_to_device(xs, ["CPU:0", "CPU:1", "CPU:1"])
    assert d.samples("OutboundData") == 1
    assert metrics.metric_data("OutboundData")[2][-1][1] == 12 + 16 + 32
    assert (d.samples("TransferToDeviceTime"), d.count("CreateDataHandles")) == (1, 3)


def test_a_tpu_library_path_that_names_a_folder_is_passed_over(monkeypatch, tmp_path):
    with pytest.raises(OSError):  # dlopen refuses a folder: it is no library to load
        ctypes.CDLL(str(tmp_path))
    monkeypatch.setenv("TPU_LIBRARY_PATH", str(tmp_path))
    monkeypatch.setitem(sys.modules, "libtpu", None)  # `import libtpu` raises ImportError
    assert pjrt_registry.tpu_library_path() == (
        "libtpu.so", [f"$TPU_LIBRARY_PATH={tmp_path} (no such file)",
                      "the libtpu package (not installed)"])
