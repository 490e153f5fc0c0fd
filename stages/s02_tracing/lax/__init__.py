"""lax: the primitives every jaxpr is made of, each with a numpy impl and an abstract-eval rule.

JAX: jax/_src/lax/ (lax.py, slicing.py, utils.py; erf is in special.py, cumsum in
control_flow/loops.py), seen as `jax.lax`. Wrappers keep jax.lax's signatures and defaults;
lax never promotes dtypes (numpy/ does, then calls lax).

  utils.py        how a primitive is assembled: standard_primitive, dtype families, Precision
  elementwise.py  arithmetic, one and two operands: sin, exp, integer_pow, add, mul, ...
  kernels.py      numpy stand-ins for XLA's kernels where numpy answers otherwise (integer
                  division, C's remainder, complex max/min/arctan2/logistic, `complex`)
  bitwise.py      not, and, or, xor, the shifts, clz, the comparisons eq, lt, ...; and
                  bitcast_convert_type (the same bits as another dtype)
  structural.py   broadcast_in_dim, reshape, transpose, squeeze, concatenate, pad, iota, rev
  splitting.py    split: an array cut into consecutive pieces (concatenate's transpose)
  tiling.py       tile: an array repeated along each axis
  empty.py        empty2: a value no one reads, filling a split cond's residual slots
  reductions.py   reduce_sum/max/min/or/and/xor, argmax/argmin, cumsum
  lax.py          select_n, convert_element_type (folded when staged), full, dot_general, clamp
  slicing.py      slice, dynamic_slice, dynamic_update_slice, and `for row in tracer`
  cumulative.py   cumprod/cummax/cummin/cumlogsumexp, reduce_prod, associative_scan
  gather.py       gather, its dimension numbers and out-of-bounds modes
  scatter.py      scatter, scatter_add/mul/min/max
  sorting.py      sort (several operands, lexicographic keys, stable)
"""

from . import (
    bitwise,
    elementwise,
    lax,
    reductions,
    slicing,
    structural,
    utils,
)
from . import cumulative as _cumulative_module
from . import empty as _empty_module
from . import gather as _gather_module
from . import scatter as _scatter_module
from . import sorting as _sorting_module
from . import splitting as _splitting_module
from . import tiling as _tiling_module
from .bitwise import *  # noqa: F403
from .cumulative import *  # noqa: F403
from .elementwise import *  # noqa: F403
from .empty import *  # noqa: F403
from .gather import *  # noqa: F403
from .lax import *  # noqa: F403
from .reductions import *  # noqa: F403
from .scatter import *  # noqa: F403
from .slicing import *  # noqa: F403
from .sorting import *  # noqa: F403
from .splitting import *  # noqa: F403
from .structural import *  # noqa: F403
from .tiling import *  # noqa: F403
from .utils import *  # noqa: F403

__all__ = [
    *bitwise.__all__,
    *_cumulative_module.__all__,
    *_empty_module.__all__,
    *elementwise.__all__,
    *_gather_module.__all__,
    *lax.__all__,
    *reductions.__all__,
    *_scatter_module.__all__,
    *slicing.__all__,
    *_sorting_module.__all__,
    *_splitting_module.__all__,
    *_tiling_module.__all__,
    *structural.__all__,
    *utils.__all__,
]
