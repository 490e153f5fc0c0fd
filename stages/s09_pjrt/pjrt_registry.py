"""How PJRT_DEVICE becomes a client: one chain of branches, tried in a fixed order.

torch_xla: torch_xla/csrc/runtime/pjrt_registry.cpp (`InitializePjRt`, `PjRtPlugin`,
`RegisterPjRtPlugin`), torch_xla/__init__.py (`_setup_tpu_vm_library_path`) and
torch_xla/experimental/plugins.py. The order: registered plugins when PJRT_DYNAMIC_PLUGINS is on
(for anything but CPU), then CPU, TPU, TPU_LEGACY (refused), XPU, NEURON, and an error naming the
device; ours tries CUDA after TPU_LEGACY, where torch_xla's own CUDA branch sat before 2.9. Every
branch but CPU loads a vendor's shared library through the PJRT C API (`make_c_api_client`); a
CUDA machine therefore runs the very code path a TPU's libtpu takes. CUDA, which torch_xla now
reaches only as a plugin, is found here as JAX finds it: the `jax_plugins.xla_cuda13` (or 12)
package that the jax-cuda PJRT plugin installs.
"""

from __future__ import annotations

import abc
import importlib
import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import pjrt_computation_client as pjrt
from .pjrt_computation_client import PjRtComputationClient

DEVICE_TYPES = ("CPU", "TPU", "CUDA", "XPU", "NEURON")  # the branches, in order
CUDA_PLUGIN_PACKAGES = ("jax_plugins.xla_cuda13", "jax_plugins.xla_cuda12")


def env_bool(name: str, default: bool) -> bool:
    """torch_xla's sys_util::GetEnvBool: "true"/"false", else any non-zero integer."""
    value = os.environ.get(name)
    if value is None:
        return default
    if value in ("true", "false"):
        return value == "true"
    try:
        return int(value) != 0
    except ValueError:
        return False


class PjRtPlugin(abc.ABC):
    """A device runtime in a shared library: the three questions torch_xla asks of it."""

    @abc.abstractmethod
    def library_path(self) -> str:
        """Where the .so is."""

    def client_create_options(self) -> dict[str, Any]:
        """Options handed to the plugin's client factory."""
        return {}

    def requires_xla_coordinator(self) -> bool:
        """Whether processes must meet through a distributed key-value store first."""
        return False


class LibraryPlugin(PjRtPlugin):
    """The placeholder the table starts with: any plugin at $PJRT_LIBRARY_PATH (for tests)."""

    def library_path(self) -> str:
        return os.environ.get("PJRT_LIBRARY_PATH", "")


class CudaPlugin(PjRtPlugin):
    """JAX's CUDA PJRT plugin, found by its package."""

    def library_path(self) -> str:
        return find_cuda_plugin()

    def client_create_options(self) -> dict[str, Any]:
        return pjrt.gpu_plugin_options()


_plugins: dict[str, PjRtPlugin] = {"LIBRARY": LibraryPlugin()}


def register_pjrt_plugin(name: str, plugin: PjRtPlugin) -> None:
    """Make `PJRT_DEVICE=<name>` load `plugin` when PJRT_DYNAMIC_PLUGINS is on."""
    _plugins[name] = plugin


def registered_plugins() -> list[str]:
    return sorted(_plugins)


def use_dynamic_plugins() -> None:
    """Turn the plugin branch on (torch_xla: plugins.use_dynamic_plugins)."""
    os.environ["PJRT_DYNAMIC_PLUGINS"] = "1"


def register_installed_plugins() -> list[str]:
    """Register the plugins installed as packages: here, JAX's CUDA plugin if it is there."""
    found = []
    if search_cuda_plugin()[0] is not None:
        register_pjrt_plugin("CUDA", CudaPlugin())
        found.append("CUDA")
    return found


# ------------------------------------------------------------------ finding libraries

def search_cuda_plugin(packages: Sequence[str] = CUDA_PLUGIN_PACKAGES
                       ) -> tuple[str | None, list[str]]:
    searched = []
    for package in packages:
        try:
            spec = importlib.util.find_spec(package)  # imports the namespace `jax_plugins` only
        except (ImportError, ValueError):
            spec = None
        if spec is None or not spec.submodule_search_locations:
            searched.append(f"the {package} package (not installed)")
            continue
        path = Path(list(spec.submodule_search_locations)[0]) / "xla_cuda_plugin.so"
        if path.is_file():
            return str(path), searched
        searched.append(f"{path} (no such file)")
    return None, searched


def find_cuda_plugin() -> str:
    """The CUDA plugin's .so, or an error naming every place looked at, in order."""
    path, searched = search_cuda_plugin()
    if path is None:
        raise RuntimeError("PJRT_DEVICE=CUDA: no CUDA PJRT plugin found. Searched, in order: "
                           + "; ".join(searched)
                           + ". Install it with `pip install jax[cuda13]`.")
    return path


# --8<-- [start:tpu_library_path]
def tpu_library_path() -> tuple[str, list[str]]:
    """The libtpu to load, and the places looked at before it: $TPU_LIBRARY_PATH, then the
    `libtpu` package, then plain "libtpu.so", which the loader looks for on its own path."""
    # EXERCISE 9.2 (tpu-search): the three places, in order, each noted when it fails
    searched = []
    env = os.environ.get("TPU_LIBRARY_PATH")
    if env and os.path.isfile(env):
        return env, searched
    searched.append(f"$TPU_LIBRARY_PATH={env} (no such file)" if env
                    else "$TPU_LIBRARY_PATH (not set)")
    try:
        libtpu = importlib.import_module("libtpu")
    except ImportError:
        searched.append("the libtpu package (not installed)")
    else:
        path = libtpu.get_library_path()
        if os.path.isfile(path):
            return path, searched
        searched.append(f"the libtpu package: {path} (no such file)")
    return "libtpu.so", searched
    # END EXERCISE
# --8<-- [end:tpu_library_path]


def _c_api_client(device_type: str, library_path: str, searched: Sequence[str] = (),
                  options: dict[str, Any] | None = None) -> PjRtComputationClient:
    """Load, initialize, make the client; a failure names everything that was tried."""
    try:
        client = pjrt.make_c_api_client(device_type.lower(), library_path, options)
    except Exception as err:
        tried = [*searched, f"{library_path} ({type(err).__name__}: {err})"]
        raise RuntimeError(f"PJRT_DEVICE={device_type}: could not start its PJRT plugin. "
                           "Searched, in order: " + "; ".join(tried)) from err
    return PjRtComputationClient(client, device_type)


# --8<-- [start:initialize_pjrt]
def initialize_pjrt(device_type: str) -> PjRtComputationClient:
    """A new client for `device_type`, through the first branch that takes it."""
    # EXERCISE 9.3 (registry): torch_xla's branches, in torch_xla's order
    if env_bool("PJRT_DYNAMIC_PLUGINS", False) and device_type != "CPU":
        plugin = _plugins.get(device_type)
        if plugin is None:
            raise RuntimeError(
                f"No PjRtPlugin registered for: {device_type}. Make sure the environment "
                "variable PJRT_DEVICE is set to a correct device name. Registered: "
                f"{', '.join(registered_plugins())}.")
        if plugin.requires_xla_coordinator():
            raise NotImplementedError(f"the {device_type} plugin needs a distributed "
                                      "coordinator; this course runs one process")
        return _c_api_client(device_type, plugin.library_path(),
                             options=plugin.client_create_options())
    if device_type == "CPU":
        asynchronous = env_bool("PJRT_CPU_ASYNC_CLIENT", True)
        num_devices = int(os.environ.get("CPU_NUM_DEVICES", "1"))
        return PjRtComputationClient(pjrt.make_cpu_client(asynchronous, num_devices), "CPU")
    if device_type == "TPU":
        return _c_api_client("TPU", *tpu_library_path())
    if device_type == "TPU_LEGACY":
        raise ValueError("TPU_LEGACY client is no longer available.")
    if device_type == "CUDA":
        return _c_api_client("CUDA", find_cuda_plugin(), options=pjrt.gpu_plugin_options())
    if device_type == "XPU":
        return _c_api_client("XPU", os.environ.get("XPU_LIBRARY_PATH", "libxpu.so"))
    if device_type == "NEURON":
        return _c_api_client("NEURON",
                             os.environ.get("NEURON_LIBRARY_PATH", "libneuronpjrt.so"))
    raise ValueError(f"Unknown PJRT_DEVICE: '{device_type}'; valid choices: "
                     f"{', '.join(DEVICE_TYPES)} (or, with PJRT_DYNAMIC_PLUGINS=1, a "
                     f"registered plugin: {', '.join(registered_plugins())})")
    # END EXERCISE
# --8<-- [end:initialize_pjrt]
