"""Stage 4: autodiff. jvp, linearize, transpose, vjp, grad, custom rules, checkpoint.

Reading path (the lesson, in order):
  1. ad_util.py  tangent values: symbolic Zero, add_jaxvals (`add_any`), float0
  2. ad.py       JVPTrace and jvp; linearize = jvp + partial eval; backward_pass
  3. api.py      jvp, linearize, vjp, grad, value_and_grad over pytrees, with JAX's checks

Beside it:
  api_transpose.py       linear_transpose, with JAX's checks (JAX: in api.py)
  jvp_rules.py           defjvp and a jvp rule for every stage-2 primitive (read `_mul_jvp`)
  transpose_rules.py     a transpose rule for every linear primitive (read `_mul_transpose`)
  complex_rules.py       the rules of real, imag, complex, conj, and abs of a complex number
  inverse_trig_rules.py  the jvp rules of atan2
  bit_rules.py           the zero jvp rules of clz and bitcast_convert_type
  split_rules.py         the rules of split (concatenate's transpose), tile and empty2
  gather_rules.py        the jvp and transpose rules of gather and the scatters
  cumulative_rules.py    the jvp rules of cumprod/cummax/cummin/cumlogsumexp and reduce_prod
  custom_derivatives.py  custom_jvp and custom_vjp: flattening the user's rules, binding
  custom_arguments.py    their arguments: keywords to positions, the non-differentiable ones
  custom_calls.py        their two primitives, and one rule per trace type in two tables
  ad_checkpoint.py       checkpoint (remat2) and its rules; the remat policies

JAX: jax/_src/interpreters/ad.py, jax/_src/api.py (the autodiff half), custom_derivatives.py,
ad_checkpoint.py. Importing the stage registers its rules (jvp_rules.py, transpose_rules.py,
complex_rules.py, inverse_trig_rules.py, bit_rules.py, split_rules.py, gather_rules.py,
custom_calls.py).
"""

from . import (
    ad,
    ad_checkpoint,
    ad_util,
    bit_rules,
    complex_rules,
    cumulative_rules,
    custom_arguments,
    custom_calls,
    custom_derivatives,
    gather_rules,
    inverse_trig_rules,
    jvp_rules,
    split_rules,
    transpose_rules,
)
from .ad_checkpoint import checkpoint, checkpoint_name, remat
from .ad_util import stop_gradient
from .api import grad, jvp, linear_transpose, linearize, value_and_grad, vjp
from .custom_derivatives import custom_jvp, custom_vjp

__all__ = [
    "ad",
    "ad_checkpoint",
    "ad_util",
    "bit_rules",
    "checkpoint",
    "checkpoint_name",
    "complex_rules",
    "custom_arguments",
    "custom_calls",
    "cumulative_rules",
    "custom_derivatives",
    "custom_jvp",
    "custom_vjp",
    "gather_rules",
    "grad",
    "inverse_trig_rules",
    "jvp",
    "jvp_rules",
    "linear_transpose",
    "linearize",
    "remat",
    "split_rules",
    "stop_gradient",
    "transpose_rules",
    "value_and_grad",
    "vjp",
]
