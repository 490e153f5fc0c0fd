"""Two processes x two CPU devices on loopback, as JAX runs on several hosts: one global mesh,
each process feeding its own rows; the numbers of one process. A process that dies makes the
other end with the coordination service's error, in bounded time."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from tests.s11_spmd.conftest import OURS, ROOT, cpu_devices

WORKER = Path(__file__).with_name("distributed_worker.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(mode: str, heartbeat: int = 100) -> list[subprocess.Popen]:
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT), HEARTBEAT=str(heartbeat))
    env.pop("CPU_NUM_DEVICES", None)
    return [subprocess.Popen([sys.executable, str(WORKER), str(port), str(pid), mode],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                             cwd=ROOT) for pid in (0, 1)]


def test_a_data_parallel_step_over_two_processes_gives_one_process_numbers():
    procs = _launch("train")
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-2000:] for _, err in outs]
    reports = [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]
    assert reports[0]["all"] == reports[1]["all"] == ["CPU:0", "CPU:1", "CPU:2", "CPU:3"]
    assert [r["local"] for r in reports] == [["CPU:0", "CPU:1"], ["CPU:2", "CPU:3"]]
    assert reports[0]["losses"] == reports[1]["losses"]
    from shared.spmd_programs import data_parallel_mlp

    with cpu_devices(4):  # the same steps in one process over four devices
        one = data_parallel_mlp(OURS, 4)
    np.testing.assert_allclose(reports[0]["losses"], one["values"][0], rtol=1e-5)
    np.testing.assert_allclose(reports[0]["w"], one["values"][-2], rtol=1e-4, atol=1e-6)


def test_a_process_that_dies_ends_the_other_with_a_clear_error_in_bounded_time():
    procs = _launch("die", heartbeat=5)
    start = time.monotonic()
    _, err1 = procs[1].communicate(timeout=120)
    _, err0 = procs[0].communicate(timeout=120)  # not a hang: bounded by the heartbeat
    elapsed = time.monotonic() - start
    assert procs[1].returncode == 3  # the crash
    assert procs[0].returncode != 0
    assert "Terminating process because the JAX distributed service detected fatal " \
           "errors" in err0
    assert "stopped sending heartbeats" in err0
    assert elapsed < 90
