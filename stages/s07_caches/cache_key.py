"""The persistent cache key: one SHA-256 over named ingredients, in a fixed order.

JAX: jax/_src/cache_key.py, `get`. The key answers "have I compiled this exact thing before, for
this exact environment?", so everything that changes the executable goes in, and nothing that
does not: the program without its debug info (source locations and names change nothing the
compiler produces), and the XLA flags without the two dozen that only decide what lands on your
disk (`--xla_dump_to`, ...). The result reads `<module_name>-<64 hex digits>`, e.g.
`jit_f-3b1f...e9`; the module name is for people, the digest for the cache.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from typing import Any

from stages.s02_tracing import config

logger = logging.getLogger(__name__)

_extra_flag_prefixes: list[str] = []


def add_flag_prefixes(flag_prefixes: list[str]) -> None:
    """Also hash command-line arguments starting with these prefixes (JAX: same name)."""
    _extra_flag_prefixes.extend(flag_prefixes)


def custom_hook() -> str:
    """A string hashed last; replace it to split one cache between otherwise equal setups."""
    return ""


def library_version() -> str:
    # JAX hashes jaxlib's version: a new compiler may compile the same program differently
    try:
        return f"under-the-api {metadata.version('under-the-api')}"
    except metadata.PackageNotFoundError:
        return "under-the-api (not installed)"


# Flags that change what is written to disk, never what is compiled: not part of the key.
# JAX 0.10.2's list, verbatim (cache_key.xla_flags_to_exclude_from_cache_key).
xla_flags_to_exclude_from_cache_key = [
    "--xla_dump_compress_protos",
    "--xla_dump_module_metadata",
    "--xla_dump_max_hlo_modules",
    "--xla_dump_include_timestamp",
    "--xla_dump_hlo_pass_re",
    "--xla_dump_hlo_module_re",
    "--xla_dump_hlo_snapshots",
    "--xla_dump_fusion_visualization",
    "--xla_dump_hlo_as_url",
    "--xla_dump_hlo_as_proto",
    "--xla_dump_hlo_as_text",
    "--xla_dump_hlo_as_long_text",
    "--xla_dump_hlo_as_html",
    "--xla_dump_hlo_as_dot",
    "--xla_dump_to",
    "--xla_force_host_platform_device_count",
    "--xla_dump_disable_metadata",
    "--xla_dump_hlo_pipeline_re",
    "--xla_tpu_sdc_checker_streamz_metric",
    "--xla_tpu_sdc_checker_enable_sdc_event_callbacks",
    "--xla_tpu_sdc_checker_enable_coresweep_ng_callbacks",
    "--xla_tpu_sdc_checker_no_logging_if_callbacks_are_present",
    "--xla_gpu_cuda_data_dir",
    "--xla_gpu_experimental_autotune_cache_mode",
]
_excluded_flag_names = {flag.strip("-") for flag in xla_flags_to_exclude_from_cache_key}


# --8<-- [start:entries]
def entries(program: Any, devices: Sequence[Any], compile_options: Any, backend: Any,
            compression_algorithm: str = "zlib") -> list[tuple[str, Callable[[Any], None]]]:
    """The ingredients, in the order they are hashed: (name, fn feeding one into a hash)."""
    return [
        ("computation", lambda h: _hash_computation(h, program)),
        ("jax_lib version", lambda h: _hash_string(h, library_version())),
        ("backend version", lambda h: _hash_platform(h, backend)),
        ("XLA flags", lambda h: _hash_xla_flags(h, _extra_flag_prefixes)),
        ("compile_options", lambda h: _hash_compile_options(h, compile_options)),
        ("accelerator_config", lambda h: _hash_devices(h, devices)),
        ("compression", lambda h: _hash_string(h, compression_algorithm)),
        ("custom_hook", lambda h: _hash_string(h, custom_hook())),
    ]
# --8<-- [end:entries]


def get(program: Any, devices: Sequence[Any], compile_options: Any, backend: Any,
        compression_algorithm: str = "zlib") -> str:
    """`<module_name>-<sha256 hex>` of the ingredients, fed one after another into one hash."""
    # EXERCISE 7.3 (cache-key): one running SHA-256 over every ingredient, in order
    hash_obj = hashlib.sha256()
    for name, hashfn in entries(program, devices, compile_options, backend,
                                compression_algorithm):
        hashfn(hash_obj)
        _log_cache_key_hash(hash_obj, name, hashfn)
    return f"{program.module_name}-{hash_obj.hexdigest()}"
    # END EXERCISE


def ingredient_digests(program: Any, devices: Sequence[Any], compile_options: Any,
                       backend: Any) -> dict[str, str]:
    """Each ingredient hashed alone (what JAX logs at DEBUG), for comparing two keys."""
    digests = {}
    for name, hashfn in entries(program, devices, compile_options, backend):
        h = hashlib.sha256()
        hashfn(h)
        digests[name] = h.hexdigest()
    return digests


def _log_cache_key_hash(hash_obj: Any, last_serialized: str, hashfn: Callable) -> None:
    if logger.isEnabledFor(logging.DEBUG):
        fresh = hashlib.sha256()
        hashfn(fresh)
        logger.debug("get_cache_key hash of serialized %s: %s", last_serialized,
                     fresh.hexdigest())
        logger.debug("get_cache_key hash after serializing %s: %s", last_serialized,
                     hash_obj.hexdigest())


def _hash_computation(hash_obj: Any, program: Any) -> None:
    # JAX runs the strip-debuginfo pass over a clone of the module before serializing it
    include = config.compilation_cache_include_metadata_in_key.value
    hash_obj.update(program.as_bytes(debug_info=include))


def _hash_platform(hash_obj: Any, backend: Any) -> None:
    _hash_string(hash_obj, backend.platform)
    _hash_string(hash_obj, backend.platform_version)


def _hash_xla_flags(hash_obj: Any, extra_flag_prefixes: list[str]) -> None:
    """XLA_FLAGS (and LIBTPU_INIT_ARGS) and `--xla...` arguments, sorted, minus the dump flags."""
    flags = []
    for var in ("XLA_FLAGS", "LIBTPU_INIT_ARGS"):
        flags.extend(os.environ.get(var, "").split())
    for arg in sys.argv:
        if arg.startswith("--xla") or any(arg.startswith(p) for p in extra_flag_prefixes):
            flags.append(arg)
    for flag in sorted(flags):
        if flag.split("=")[0] in xla_flags_to_exclude_from_cache_key:
            logger.debug("Not including XLA flag in cache key: %s", flag)
            continue
        logger.debug("Including XLA flag in cache key: %s", flag)
        _hash_string(hash_obj, flag)


def _hash_compile_options(hash_obj: Any, compile_options: Any) -> None:
    """The options minus the overrides of excluded flags (JAX also clears debug options)."""
    kept = tuple((k, v) for k, v in compile_options.env_option_overrides
                 if k not in _excluded_flag_names)
    hash_obj.update(dataclasses.replace(compile_options, env_option_overrides=kept).serialize())


def _hash_devices(hash_obj: Any, devices: Sequence[Any]) -> None:
    # JAX hashes the topology's fingerprint when the backend has one, else each device kind
    for device in devices:
        _hash_string(hash_obj, device.device_kind)


def _hash_string(hash_obj: Any, s: str) -> None:
    hash_obj.update(s.encode("utf-8").strip())
