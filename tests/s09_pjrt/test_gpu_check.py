"""`make gpu-check`'s script, run here on the CPU client (its --device CPU mode): every row
agrees with jax.jit, and without a GPU the plain run says why and succeeds."""

from __future__ import annotations

import jax
import pytest

from shared import gpu_check


def test_the_check_runs_its_table_on_the_cpu_client(monkeypatch, capsys):
    monkeypatch.setenv("PJRT_DEVICE", "CPU")
    assert gpu_check.main(["--device", "CPU", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "values (ours vs jax.jit)" in out and "ours ms/call" in out
    assert "MLP 784-512-512-10 train step, batch 128  equal bits" in out
    assert "finale: char transformer train step" in out  # stage 12's training step
    assert "6 of 6 programs agree with jax.jit" in out


def test_without_a_gpu_it_says_so_and_succeeds(monkeypatch, capsys):
    if any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("this machine has a GPU: `make gpu-check` runs the real check")
    monkeypatch.setenv("PJRT_DEVICE", "CPU")
    assert gpu_check.main([]) == 0
    out = capsys.readouterr().out
    assert "gpu-check: SKIPPED, no NVIDIA GPU here." in out
    assert "the jax_plugins.xla_cuda13 package (not installed)" in out
