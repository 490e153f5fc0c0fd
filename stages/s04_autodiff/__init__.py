"""Stage 4: autodiff. jvp, linearize, transpose, vjp, grad, custom rules, checkpoint.

JAX: jax/_src/interpreters/ad.py, jax/_src/api.py (the autodiff half), custom_derivatives.py,
ad_checkpoint.py. Importing the stage registers its rules (jvp_rules.py, transpose_rules.py).
"""

from . import ad, ad_checkpoint, ad_util, custom_derivatives, jvp_rules, transpose_rules
from .ad_checkpoint import checkpoint, checkpoint_name, remat
from .ad_util import stop_gradient
from .api import grad, jvp, linear_transpose, linearize, value_and_grad, vjp
from .custom_derivatives import custom_jvp, custom_vjp

__all__ = [
    "ad",
    "ad_checkpoint",
    "ad_util",
    "checkpoint",
    "checkpoint_name",
    "custom_derivatives",
    "custom_jvp",
    "custom_vjp",
    "grad",
    "jvp",
    "jvp_rules",
    "linear_transpose",
    "linearize",
    "remat",
    "stop_gradient",
    "transpose_rules",
    "value_and_grad",
    "vjp",
]
