"""PJRT_DEVICE becomes a client through torch_xla's branches, in its order. No accelerator is
needed: the TPU and CUDA branches are driven with fake paths, a fake `libtpu` package and a fake
`jax_plugins` package, and fail naming everything they looked at, in order."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from stages.s09_pjrt import pjrt_registry, runtime
from stages.s09_pjrt.pjrt_registry import PjRtPlugin, initialize_pjrt


@pytest.fixture
def clean_env(monkeypatch):
    for name in ("PJRT_DEVICE", "PJRT_DYNAMIC_PLUGINS", "TPU_LIBRARY_PATH", "PJRT_LIBRARY_PATH",
                 "CPU_NUM_DEVICES", "PJRT_CPU_ASYNC_CLIENT", "XPU_LIBRARY_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(pjrt_registry, "_plugins", dict(pjrt_registry._plugins))
    return monkeypatch


@pytest.fixture
def no_libtpu(clean_env):
    clean_env.setitem(sys.modules, "libtpu", None)  # `import libtpu` raises ImportError
    return clean_env


def fake_library(path) -> str:
    path.write_bytes(b"")  # a file the loader refuses: "file too short"
    return str(path)


def fake_libtpu_package(root, library: str) -> None:
    (root / "libtpu").mkdir()
    (root / "libtpu" / "__init__.py").write_text(
        f"def get_library_path():\n    return {library!r}\n")


# ------------------------------------------------------------------ the unknown, the default

@pytest.mark.parametrize("plugins", [None, "0", "false"])
def test_an_unknown_device_is_named_with_the_valid_choices(clean_env, plugins):
    """PJRT_DYNAMIC_PLUGINS off (unset, or a false value as torch_xla's GetEnvBool reads it): no
    plugin is looked for, whatever is registered."""
    if plugins is not None:
        clean_env.setenv("PJRT_DYNAMIC_PLUGINS", plugins)
    with pytest.raises(ValueError) as err:
        initialize_pjrt("GPU")
    assert str(err.value) == (
        "Unknown PJRT_DEVICE: 'GPU'; valid choices: CPU, TPU, CUDA, XPU, NEURON (or, with "
        "PJRT_DYNAMIC_PLUGINS=1, a registered plugin: LIBRARY)")


def test_tpu_legacy_is_gone(clean_env):
    with pytest.raises(ValueError, match=r"^TPU_LEGACY client is no longer available\.$"):
        initialize_pjrt("TPU_LEGACY")


def test_unset_means_cpu_and_is_said_once(clean_env, caplog):
    clean_env.setattr(runtime, "_said_default", False)
    with caplog.at_level(logging.WARNING, logger=runtime.__name__):
        assert runtime.device_type() == "CPU"
        assert runtime.device_type() == "CPU"
    assert [r.getMessage() for r in caplog.records] == ["Defaulting to PJRT_DEVICE=CPU"]
    clean_env.setenv("PJRT_DEVICE", "TPU")
    assert runtime.device_type() == "TPU"


@pytest.mark.parametrize("value,expected", [("1", True), ("true", True), ("0", False),
                                            ("false", False), ("7", True), ("yes", False)])
def test_env_bool_reads_as_torch_xla_reads_it(clean_env, value, expected):
    clean_env.setenv("PJRT_DYNAMIC_PLUGINS", value)
    assert pjrt_registry.env_bool("PJRT_DYNAMIC_PLUGINS", False) is expected


# ------------------------------------------------------------------ CPU

def test_the_cpu_branch_reads_the_device_count_and_async_switch(clean_env):
    clean_env.setenv("CPU_NUM_DEVICES", "3")
    clean_env.setenv("PJRT_CPU_ASYNC_CLIENT", "0")
    client = initialize_pjrt("CPU")
    assert client.get_local_devices() == ["CPU:0", "CPU:1", "CPU:2"]
    assert client.get_device_kind("CPU:2") == "cpu"
    (x,) = client.transfer_to_device([np.ones((64, 64), np.float32)], ["CPU:1"])
    assert x.device == "CPU:1" and x.is_ready()


def test_cpu_with_four_devices_in_a_fresh_process():
    script = textwrap.dedent("""
        import json
        import numpy as np
        import stages.s07_caches as s07
        import stages.s09_pjrt as s09
        from stages.s02_tracing import numpy as jnp
        client = s09.get_computation_client()
        with s09.use_pjrt():
            y = s07.jit(lambda x: jnp.sin(x) * 2.0)(np.ones(3, np.float32))
            z = s09.device_put(y, "CPU:3")
            print(json.dumps({"devices": client.get_all_devices(), "value": y.tolist(),
                              "moved": sorted(d.id for d in z.devices())}))
    """)
    env = dict(os.environ, CPU_NUM_DEVICES="4", PJRT_DEVICE="CPU",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["devices"] == ["CPU:0", "CPU:1", "CPU:2", "CPU:3"]
    np.testing.assert_allclose(out["value"], np.sin(np.ones(3)) * 2.0, rtol=1e-6)
    assert out["moved"] == [3]


# ------------------------------------------------------------------ TPU: three places, in order

def test_tpu_library_path_comes_first_when_it_is_a_file(no_libtpu, tmp_path):
    lib = fake_library(tmp_path / "libtpu.so")
    no_libtpu.setenv("TPU_LIBRARY_PATH", lib)
    assert pjrt_registry.tpu_library_path() == (lib, [])


def test_then_the_libtpu_package(clean_env, tmp_path):
    lib = fake_library(tmp_path / "from_package.so")
    fake_libtpu_package(tmp_path, lib)
    clean_env.delitem(sys.modules, "libtpu", raising=False)
    clean_env.syspath_prepend(str(tmp_path))
    clean_env.setenv("TPU_LIBRARY_PATH", str(tmp_path / "missing.so"))
    assert pjrt_registry.tpu_library_path() == (
        lib, [f"$TPU_LIBRARY_PATH={tmp_path / 'missing.so'} (no such file)"])


def test_a_libtpu_package_whose_library_is_missing_is_noted_and_passed_over(clean_env, tmp_path):
    missing = str(tmp_path / "not_built.so")
    fake_libtpu_package(tmp_path, missing)
    clean_env.delitem(sys.modules, "libtpu", raising=False)
    clean_env.syspath_prepend(str(tmp_path))
    assert pjrt_registry.tpu_library_path() == (
        "libtpu.so", ["$TPU_LIBRARY_PATH (not set)",
                      f"the libtpu package: {missing} (no such file)"])


@pytest.mark.parametrize("env", [None, ""], ids=["unset", "empty"])
def test_then_the_loader_path(no_libtpu, env):
    if env is not None:  # torch_xla reads an empty TPU_LIBRARY_PATH as not set
        no_libtpu.setenv("TPU_LIBRARY_PATH", env)
    assert pjrt_registry.tpu_library_path() == (
        "libtpu.so", ["$TPU_LIBRARY_PATH (not set)", "the libtpu package (not installed)"])


def test_a_tpu_with_no_library_fails_naming_the_three_places_in_order(no_libtpu):
    with pytest.raises(RuntimeError) as err:
        initialize_pjrt("TPU")
    assert re.fullmatch(
        r"PJRT_DEVICE=TPU: could not start its PJRT plugin\. Searched, in order: "
        r"\$TPU_LIBRARY_PATH \(not set\); the libtpu package \(not installed\); "
        r"libtpu\.so \(\w+: .*libtpu\.so: cannot open shared object file.*\)",
        str(err.value), re.S), str(err.value)


def test_a_library_that_is_not_a_plugin_fails_naming_it(clean_env, tmp_path):
    lib = fake_library(tmp_path / "from_package.so")
    fake_libtpu_package(tmp_path, lib)
    clean_env.delitem(sys.modules, "libtpu", raising=False)
    clean_env.syspath_prepend(str(tmp_path))
    with pytest.raises(RuntimeError, match=re.escape(f"{lib} (") + ".*file too short"):
        initialize_pjrt("TPU")


# ------------------------------------------------------------------ CUDA: found by its package

@pytest.fixture
def fake_jax_plugins(clean_env, tmp_path):
    """A `jax_plugins` namespace with an `xla_cuda13` package in it, first on sys.path."""
    package = tmp_path / "jax_plugins" / "xla_cuda13"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for name in [m for m in sys.modules if m == "jax_plugins" or m.startswith("jax_plugins.")]:
        clean_env.delitem(sys.modules, name)
    clean_env.syspath_prepend(str(tmp_path))
    yield package
    sys.modules.pop("jax_plugins", None)  # a namespace made from a temporary directory


def test_the_cuda_plugin_is_found_in_its_package(fake_jax_plugins):
    so = fake_library(fake_jax_plugins / "xla_cuda_plugin.so")
    assert pjrt_registry.find_cuda_plugin() == so
    assert pjrt_registry.register_installed_plugins() == ["CUDA"]
    assert "CUDA" in pjrt_registry.registered_plugins()


def test_a_cuda_package_without_its_library_is_an_error_naming_both_packages(fake_jax_plugins):
    with pytest.raises(RuntimeError) as err:
        initialize_pjrt("CUDA")
    assert str(err.value) == (
        "PJRT_DEVICE=CUDA: no CUDA PJRT plugin found. Searched, in order: "
        f"{fake_jax_plugins / 'xla_cuda_plugin.so'} (no such file); the "
        "jax_plugins.xla_cuda12 package (not installed). Install it with "
        "`pip install jax[cuda13]`.")


def test_cuda_goes_through_the_same_c_api_path_as_a_tpu(fake_jax_plugins):
    so = fake_library(fake_jax_plugins / "xla_cuda_plugin.so")
    with pytest.raises(RuntimeError, match=r"^PJRT_DEVICE=CUDA: could not start its PJRT "
                       r"plugin\. Searched, in order: " + re.escape(so) + ".*file too short"):
        initialize_pjrt("CUDA")


# ------------------------------------------------------------------ dynamic plugins come first

def test_with_dynamic_plugins_an_unregistered_device_is_refused(clean_env):
    clean_env.setenv("PJRT_DYNAMIC_PLUGINS", "1")
    with pytest.raises(RuntimeError, match=r"^No PjRtPlugin registered for: TPU\. Make sure the "
                       r"environment variable PJRT_DEVICE is set to a correct device name\. "
                       r"Registered: LIBRARY\.$"):
        initialize_pjrt("TPU")
    assert initialize_pjrt("CPU").get_local_devices() == ["CPU:0"]  # CPU never is a plugin


def test_a_registered_plugin_wins_over_the_built_in_branch(clean_env, tmp_path):
    lib = fake_library(tmp_path / "vendor.so")

    class Vendor(PjRtPlugin):
        def library_path(self):
            return lib

    pjrt_registry.register_pjrt_plugin("TPU", Vendor())
    clean_env.setenv("PJRT_DYNAMIC_PLUGINS", "true")
    with pytest.raises(RuntimeError, match=re.escape(f"Searched, in order: {lib} (")):
        initialize_pjrt("TPU")


def test_the_library_placeholder_reads_pjrt_library_path(clean_env, tmp_path):
    lib = fake_library(tmp_path / "any.so")
    clean_env.setenv("PJRT_DYNAMIC_PLUGINS", "1")
    clean_env.setenv("PJRT_LIBRARY_PATH", lib)
    with pytest.raises(RuntimeError, match=r"^PJRT_DEVICE=LIBRARY: .*" + re.escape(lib)):
        initialize_pjrt("LIBRARY")


def test_a_plugin_that_needs_a_coordinator_is_refused(clean_env):
    class Distributed(PjRtPlugin):
        def library_path(self):
            return "libnothing.so"

        def requires_xla_coordinator(self):
            return True

    pjrt_registry.register_pjrt_plugin("MULTI", Distributed())
    clean_env.setenv("PJRT_DYNAMIC_PLUGINS", "1")
    with pytest.raises(NotImplementedError, match="^the MULTI plugin needs a distributed "
                                                  "coordinator; this course runs one process$"):
        initialize_pjrt("MULTI")


def test_xpu_and_neuron_load_their_default_libraries(clean_env):
    for device, lib in (("XPU", "libxpu.so"), ("NEURON", "libneuronpjrt.so")):
        with pytest.raises(RuntimeError, match=rf"^PJRT_DEVICE={device}: .*{re.escape(lib)} \("):
            initialize_pjrt(device)


@pytest.mark.parametrize("device, variable", [("XPU", "XPU_LIBRARY_PATH"),
                                              ("NEURON", "NEURON_LIBRARY_PATH")])
def test_xpu_and_neuron_load_the_library_their_variable_names(clean_env, tmp_path, device,
                                                               variable):
    lib = fake_library(tmp_path / f"{device.lower()}.so")
    clean_env.setenv(variable, lib)  # torch_xla: GetEnvString(kEnv...LibraryPath, default)
    with pytest.raises(RuntimeError, match=rf"^PJRT_DEVICE={device}: .*Searched, in order: "
                       rf"{re.escape(lib)} \(.*file too short"):
        initialize_pjrt(device)


class _Stop(Exception):
    """Raised by a spy once it has seen what the registry passes on."""


def test_the_cpu_client_is_asynchronous_unless_said_otherwise(clean_env):
    seen = []

    def spy(asynchronous, num_devices):
        seen.append((asynchronous, num_devices))
        raise _Stop

    clean_env.setattr(pjrt_registry.pjrt, "make_cpu_client", spy)
    with pytest.raises(_Stop):
        initialize_pjrt("CPU")
    clean_env.setenv("PJRT_CPU_ASYNC_CLIENT", "0")
    with pytest.raises(_Stop):
        initialize_pjrt("CPU")
    assert seen == [(True, 1), (False, 1)]  # torch_xla: GetEnvBool(..., true)


def test_a_plugins_client_create_options_reach_its_client(clean_env):
    seen = []

    class WithOptions(PjRtPlugin):
        def library_path(self):
            return "libvendor.so"

        def client_create_options(self):
            return {"visible_devices": "0,1"}

    def spy(device_type, library_path, options=None):
        seen.append((device_type, library_path, options))
        raise _Stop

    pjrt_registry.register_pjrt_plugin("VENDOR", WithOptions())
    clean_env.setenv("PJRT_DYNAMIC_PLUGINS", "1")
    clean_env.setattr(pjrt_registry.pjrt, "make_c_api_client", spy)
    with pytest.raises(RuntimeError, match="could not start its PJRT plugin"):
        initialize_pjrt("VENDOR")
    assert seen == [("vendor", "libvendor.so", {"visible_devices": "0,1"})]


def test_the_cuda_plugin_is_created_with_jaxs_gpu_options(fake_jax_plugins, clean_env):
    so = fake_library(fake_jax_plugins / "xla_cuda_plugin.so")
    options, seen = {"platform_name": "cuda", "visible_devices": "all"}, []

    def spy(device_type, library_path, options=None):
        seen.append((device_type, library_path, options))
        raise _Stop

    clean_env.setattr(pjrt_registry.pjrt, "gpu_plugin_options", lambda: dict(options))
    clean_env.setattr(pjrt_registry.pjrt, "make_c_api_client", spy)
    with pytest.raises(RuntimeError, match="could not start its PJRT plugin"):
        initialize_pjrt("CUDA")
    assert seen == [("cuda", so, options)]


def test_jax_loads_its_plugin_packages_before_we_load_a_plugin(monkeypatch):
    """JAX's CUDA package loads its plugin without asking whether one of that name is loaded:
    after ours it failed ("ALREADY_EXISTS: PJRT_Api already exists for device type cuda") and
    JAX fell back to CPU. So JAX looks first, and we reuse a plugin it loaded."""
    pjrt, calls, loaded = pjrt_registry.pjrt, [], set()

    def jax_discovers():
        calls.append("JAX loads its plugin packages")
        loaded.add("cuda")

    monkeypatch.setattr(pjrt.xla_bridge, "_discover_and_register_pjrt_plugins", jax_discovers)
    monkeypatch.setattr(pjrt.xc, "pjrt_plugin_loaded", lambda name: name in loaded)
    monkeypatch.setattr(pjrt.xc, "load_pjrt_plugin_dynamically",
                        lambda name, path: (calls.append(f"we load {path}"), loaded.add(name)))
    monkeypatch.setattr(pjrt.xc, "pjrt_plugin_initialized", lambda name: True)
    monkeypatch.setattr(pjrt.xc, "make_c_api_client",
                        lambda name, options, distributed: calls.append(f"a {name} client"))
    pjrt.make_c_api_client("cuda", "/site/jax_plugins/xla_cuda13/xla_cuda_plugin.so")
    assert calls == ["JAX loads its plugin packages", "a cuda client"]
    calls.clear()
    pjrt.make_c_api_client("vendor", "/opt/libvendor.so")
    assert calls == ["JAX loads its plugin packages", "we load /opt/libvendor.so",
                     "a vendor client"]
