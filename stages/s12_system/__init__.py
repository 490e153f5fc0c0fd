"""Stage 12: the complete system. One front door with JAX's names over every stage:
`import stages.s12_system as jax` runs a learner's JAX script unchanged.

  numpy, lax, tree_util, tree     stages 1, 2, 4 and 6 under JAX's module names
  jit, make_jaxpr                 stage 7's jit (stage 8 lowers, stage 9 runs it on PJRT)
  grad, value_and_grad, vjp, ...  stage 4; vmap, jacfwd, jacrev, hessian: stage 5
  devices, device_put             stage 9's client; use_pjrt() makes it jit's backend
  random, nn, optim               this stage: keys and samplers, modules, optimizers
  sharding, shard_map, make_mesh  stage 11's meshes, specs, shardings and shard_map

Reading path (the lesson, in order):
  1. prng.py          threefry-2x32 from uint32 ops: seed, split, fold_in, bits
  2. random.py        jax.random's samplers over it, each one jitted program
  3. nn/module.py     params are data: a Scope per module path, init and apply
  4. nn/layers.py     Dense, Embed, LayerNorm, Dropout, attention, Sequential
  5. optim.py         optax's gradient transformations, chained
  6. checkpoint_io.py params and optimizer state to disk and back

Beside it:
  random_checks.py   the samplers' argument checks, with JAX's errors
  random_discrete.py randint (two words of bits per draw), choice, categorical and gumbel's
                     "highest" floats (from 64 bits), over random.py's samplers (handed
                     over in its `samplers` table: random.py imports it, not back)
  special.py     erf_inv and erfc, the new primitives (normal, exact gelu), a rule in every table
  nn/activation.py   relu, gelu, softmax, log_softmax, one_hot, as jax.nn defines them
  nn/conv.py         Conv as shifted slices times kernel slices, with Flax's strides and paddings
  optim_base.py      GradientTransformation, identity, and the states and counters optim.py
                     and optim_variants.py share (optim.py re-exports them)
  optim_variants.py  optax's masked (adamw's mask=) and Adam with Nesterov momentum (NAdam)
  schedules.py   learning-rate schedules
  checkpoint_paths.py  a checkpoint read without a target: key paths to nested dicts, lists
  numpy.py, lax.py, tree_util.py, tree.py, api.py, sharding.py   the front door's modules
"""

from stages.s02_tracing import ShapedArray, config, make_jaxpr
from stages.s04_autodiff import (
    checkpoint,
    custom_jvp,
    custom_vjp,
    grad,
    jvp,
    linear_transpose,
    linearize,
    remat,
    value_and_grad,
    vjp,
)
from stages.s05_vmap import hessian, jacfwd, jacrev, vmap
from stages.s07_caches import ShapeDtypeStruct, clear_caches, disable_jit, jit
from stages.s09_pjrt import device_put, use_pjrt
from stages.s11_spmd import make_mesh, shard_map

from . import (
    api,
    checkpoint_io,
    lax,
    nn,
    numpy,
    optim,
    optim_base,
    optim_variants,
    prng,
    random,
    random_discrete,
    schedules,
    sharding,
    special,
    tree,
    tree_util,
)
from .api import (
    block_until_ready,
    default_backend,
    device_count,
    device_get,
    devices,
    local_devices,
)

__all__ = [
    "ShapeDtypeStruct",
    "ShapedArray",
    "api",
    "block_until_ready",
    "checkpoint",
    "checkpoint_io",
    "clear_caches",
    "config",
    "custom_jvp",
    "custom_vjp",
    "default_backend",
    "device_count",
    "device_get",
    "device_put",
    "devices",
    "disable_jit",
    "grad",
    "hessian",
    "jacfwd",
    "jacrev",
    "jit",
    "jvp",
    "lax",
    "linear_transpose",
    "linearize",
    "local_devices",
    "make_jaxpr",
    "make_mesh",
    "nn",
    "numpy",
    "optim",
    "optim_base",
    "optim_variants",
    "prng",
    "random",
    "random_discrete",
    "remat",
    "schedules",
    "shard_map",
    "sharding",
    "special",
    "tree",
    "tree_util",
    "use_pjrt",
    "value_and_grad",
    "vjp",
    "vmap",
]
