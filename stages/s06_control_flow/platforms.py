"""platform_dependent: a branch per platform, the one of the platform the program runs on.

JAX: jax/_src/lax/control_flow/conditionals.py (`platform_dependent`, `platform_index_p`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def platform_dependent(*args: Any, default: Callable | None = None,
                       **per_platform: Callable) -> Any:
    """`per_platform[platform](*args)` for the platform the program runs on (`default` for
    one not named). Until stage 9 there is one platform, "cpu": the branch is chosen here,
    while tracing, where JAX stages every branch and picks one when it lowers."""
    branches: dict[str, Callable] = {}
    for name, branch in per_platform.items():
        if not callable(branch):
            raise TypeError(f"lax.platform_dependent: the '{name}' branch must be a callable.")
        if name == "gpu":
            raise ValueError("Use 'cuda' or 'rocm' for lax.platform_dependent.")
        branches[name] = branch
    if default is not None and not callable(default):
        raise TypeError("lax.platform_dependent: the 'default' branch must be a callable.")
    branch = branches.get(CURRENT_PLATFORM, default)
    if branch is None:
        platforms = tuple((name,) for name in branches)
        raise NotImplementedError("MLIR translation rule for primitive "
                                  f"'platform_index(platforms={platforms})' not found for "
                                  f"platform {CURRENT_PLATFORM}")
    return branch(*args)


CURRENT_PLATFORM = "cpu"  # the interpreting backends of stages 7-8 run on the host
