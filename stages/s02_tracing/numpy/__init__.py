"""A small jax.numpy: NumPy's API spelled in lax primitives, with JAX's promotion and weak types.

JAX: jax/_src/numpy/, seen as `jax.numpy`. Every function promotes its arguments (util.py) and
then calls lax, so a jaxpr shows the `convert_element_type` and `broadcast_in_dim` equations jnp
inserts. Importing the package installs the tracer operators (array_methods.py).

  util.py           dtype promotion and broadcasting (promote_dtypes, broadcast_to, ...)
  ufuncs.py         elementwise functions: add, multiply, sin, where, clip, ...
  reductions.py     sum, mean, max, min, any, all, argmax, argmin, cumsum over numpy-style axes
  lax_numpy.py      creating arrays, reshape, transpose, stack, ...
  tensor_contractions.py  dot and matmul
  array_methods.py  `x + y`, `x[1:]`, `x.sum()` on tracers: installed on ShapedArray
  indexing.py       index arrays, masks and `x.at[...]` as gather/scatter; take, take_along_axis
  einsum.py         einsum as a chain of dot_generals
  lax_numpy_more.py linspace, eye, tril/triu, outer, roll, flip, tile, repeat, split, diag
  math_more.py      round, var, std, count_nonzero, isclose, allclose, log2, log10
  searching.py      nonzero, flatnonzero, argwhere, where(condition) alone; bincount
  sorting.py        sort and argsort, through lax.sort's stable variadic sort
"""

from . import (  # noqa: F401
    array_methods,
    einsum,
    indexing,
    lax_numpy,
    lax_numpy_more,
    math_more,
    reductions,
    searching,
    sorting,
    tensor_contractions,
    ufuncs,
    util,
)
from .einsum import einsum  # noqa: F811
from .indexing import take, take_along_axis
from .lax_numpy import *  # noqa: F403
from .lax_numpy_more import *  # noqa: F403
from .math_more import *  # noqa: F403
from .reductions import *  # noqa: F403
from .searching import *  # noqa: F403
from .sorting import *  # noqa: F403
from .tensor_contractions import *  # noqa: F403
from .ufuncs import *  # noqa: F403
from .util import *  # noqa: F403

__all__ = [*lax_numpy.__all__, *lax_numpy_more.__all__, *math_more.__all__,
           *reductions.__all__, *searching.__all__, *sorting.__all__,
           *tensor_contractions.__all__, *ufuncs.__all__,
           *util.__all__, "einsum", "take", "take_along_axis"]
