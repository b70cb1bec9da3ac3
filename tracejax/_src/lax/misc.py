"""Identity-like primitives that exist for the transformations: stop_gradient."""
from tracejax._src import tree_util
from tracejax._src.core.trace import Primitive
from tracejax._src.interpreters import ad, batching
from tracejax._src.interpreters import lowering as mlir
from tracejax._src import dispatch
import functools


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
