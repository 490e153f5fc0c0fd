"""jax.numpy as the system sees it: stage 2's numpy facade, under the name learners import.

`import stages.s12_system.numpy as jnp` is `import jax.numpy as jnp`.
"""

import numpy as _np

from stages.s02_tracing.numpy import *  # noqa: F403
from stages.s02_tracing.numpy import __all__ as _stage2_all

pi, e, inf, nan, newaxis = _np.pi, _np.e, _np.inf, _np.nan, None

__all__ = [*_stage2_all, "e", "inf", "nan", "newaxis", "pi"]
