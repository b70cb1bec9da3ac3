"""Identity-like operations that exist for the transformations: stop_gradient, and
the ordering tokens create_token / after_all."""
import functools

import numpy as np

from tracejax._src import dispatch
from tracejax._src import tree_util
from tracejax._src.core.trace import Primitive
from tracejax._src.interpreters import ad, batching
from tracejax._src.interpreters import lowering as mlir
from tracejax._src.lax import structural


# ---- stop_gradient: the identity, with a zero derivative ----

def stop_gradient(x):
  """The identity on a pytree of arrays, but its derivative is zero."""
  def stop(leaf):
    if getattr(leaf, "dtype", None) is not None and leaf.dtype.kind not in "fc" and \
        leaf.dtype.name != "bfloat16":
      return leaf  # integer and bool values have no gradient to stop
    return stop_gradient_p.bind(leaf)
  return tree_util.tree_map(stop, x)


stop_gradient_p = Primitive("stop_gradient")
stop_gradient_p.def_impl(functools.partial(dispatch.apply_primitive, stop_gradient_p))
stop_gradient_p.def_abstract_eval(lambda x: x)
ad.defjvp_zero(stop_gradient_p)
batching.primitive_batchers[stop_gradient_p] = lambda args, dims: (stop_gradient_p.bind(*args),
                                                                   dims[0])
mlir.register_lowering(stop_gradient_p, lambda ctx, x: [x])


# ---- tokens: create_token, after_all ----
#
# In XLA a token orders side effects (infeed, outfeed, host callbacks). tracejax
# has no effectful primitive that takes one, so nothing needs a real token type
# (which would reach into avals, lowering and the runtime): a token here is an
# empty bool array. It passes through jit, vmap and grad like any other value,
# carries no data, and has no gradient. Both functions exist so that programs
# written against the API (2020: `create_token(x)`, today: `create_token()`) run.

def create_token(*_):
  """A new token (an empty bool array). Arguments are accepted and ignored: the 2020
  API took an operand to tie the token to."""
  return structural.full((0,), np.bool_(False))


def after_all(*operands):
  """A token that, in XLA, would come after all the `operands` tokens: here simply a
  new token, since nothing is ordered by them."""
  return create_token(*operands)
