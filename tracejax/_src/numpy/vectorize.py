"""`jnp.vectorize`: NumPy's generalized-ufunc vectorization, built on `vmap`.

Each loop (broadcast) dimension becomes one `vmap`; an argument that lacks a
loop dimension (or has size 1 there) is passed unmapped (`in_axes=None`), so
nothing is broadcast in memory and batching rules see unbatched operands.
"""
import functools
import re

from tracejax._src.api import vmap
from tracejax._src.numpy import creation, util

_DIMENSION_NAME = r"\w+"
_CORE_DIMENSION_LIST = f"(?:{_DIMENSION_NAME}(?:,{_DIMENSION_NAME})*)?"
_ARGUMENT = rf"\({_CORE_DIMENSION_LIST}\)"
_ARGUMENT_LIST = f"{_ARGUMENT}(?:,{_ARGUMENT})*"
_SIGNATURE = f"^{_ARGUMENT_LIST}->{_ARGUMENT_LIST}$"


def _parse_signature(signature):
  """'(m,n),(n)->(m)' -> ([('m', 'n'), ('n',)], [('m',)])."""
  sig = re.sub(r"\s+", "", signature)
  if not re.match(_SIGNATURE, sig):
    raise ValueError(f"not a valid gufunc signature: {signature!r}")
  ins, outs = sig.split("->")

  def parse(side):
    return [tuple(re.findall(_DIMENSION_NAME, arg)) for arg in re.findall(_ARGUMENT, side)]

  return parse(ins), parse(outs)


def _loop_shape_and_sizes(args, core_dims, context):
  """The broadcast shape of the loop dimensions, and the size of every core dimension."""
  sizes = {}
  loop_shapes = []
  for arg, dims in zip(args, core_dims):
    shp = util.shape(arg)
    nd = len(dims)
    if len(shp) < nd:
      raise ValueError(f"input with shape {shp} does not have enough dimensions for all "
                       f"core dimensions {dims} {context}")
    core = shp[len(shp) - nd:]
    for name, size in zip(dims, core):
      if sizes.setdefault(name, size) != size:
        raise ValueError(f"inconsistent size for core dimension {name!r}: {size} vs "
                         f"{sizes[name]} {context}")
    loop_shapes.append(shp[:len(shp) - nd])
  try:
    loop = util.broadcast_shapes(*loop_shapes) if loop_shapes else ()
  except ValueError:
    raise ValueError(f"the loop dimensions {loop_shapes} of the arguments do not broadcast "
                     f"{context}") from None
  return loop, sizes


def _checked(func, sizes, out_core_dims, context):
  """`func`, with its outputs checked against the output core dimensions."""
  def checked(*args):
    out = func(*args)
    single = len(out_core_dims) == 1
    outs = (out,) if single else out
    if not single and (not isinstance(outs, (tuple, list)) or len(outs) != len(out_core_dims)):
      raise TypeError(f"output must be a tuple of {len(out_core_dims)} arrays, got "
                      f"{type(out).__name__} {context}")
    known = dict(sizes)
    for o, dims in zip(outs, out_core_dims):
      shp = util.shape(o)
      if len(shp) != len(dims):
        raise ValueError(f"output shape {shp} does not match core dimensions {dims} "
                         f"{context}")
      for name, size in zip(dims, shp):
        if known.setdefault(name, size) != size:
          raise ValueError(f"output shape {shp} does not match core dimensions {dims} "
                           f"{context}")
    return out
  return checked


def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
  """A vectorized `pyfunc`: it is mapped with `vmap` over the broadcast loop dimensions.

  Args:
    pyfunc: a function of arrays (it may return a tuple of arrays).
    excluded: positions (ints) and keyword names (strs) of arguments passed through
      unchanged rather than vectorized. `None` arguments are always passed through.
    signature: an optional generalized-ufunc signature such as ``"(n),(n)->()"``
      naming the core dimensions of each input and output; `pyfunc` sees only the
      core dimensions, and the remaining leading dimensions broadcast. Without it,
      `pyfunc` is applied elementwise (every core dimension is empty).

  Keyword arguments that are not excluded are vectorized like extra positional
  arguments (as in NumPy).

  >>> vdot = vectorize(jnp.dot, signature="(n),(n)->()")
  >>> vdot(jnp.ones((3, 4)), jnp.ones(4))
  DeviceArray([4., 4., 4.], dtype=float32)
  """
  excluded = frozenset(excluded)
  for e in excluded:
    if not isinstance(e, (int, str)):
      raise TypeError(f"jnp.vectorize: excluded must hold ints and strs, got {e!r}")
  parsed = _parse_signature(signature) if signature is not None else None

  @functools.wraps(pyfunc)
  def wrapped(*args, **kwargs):
    context = (f"on vectorized function with excluded={excluded!r} and "
               f"signature={signature!r}")
    static_pos = {i for i in excluded if isinstance(i, int)}
    static_pos |= {i for i, a in enumerate(args) if a is None}
    dyn_pos = [i for i in range(len(args)) if i not in static_pos]
    static_kw = {k: v for k, v in kwargs.items() if k in excluded or v is None}
    dyn_kw = [k for k in kwargs if k not in static_kw]
    nargs = len(args)

    def func(*dyn):
      full = list(args)
      for i, v in zip(dyn_pos, dyn[:len(dyn_pos)]):
        full[i] = v
      kw = dict(static_kw)
      kw.update(zip(dyn_kw, dyn[len(dyn_pos):]))
      return pyfunc(*full[:nargs], **kw)

    dyn_args = [creation.asarray(args[i]) for i in dyn_pos]
    dyn_args += [creation.asarray(kwargs[k]) for k in dyn_kw]
    if parsed is None:
      in_core = [()] * len(dyn_args)
      out_core = None
    else:
      in_core, out_core = parsed
      if len(in_core) != len(dyn_args):
        raise TypeError(f"wrong number of positional arguments: expected {len(in_core)}, "
                        f"got {len(dyn_args)} {context}")
    loop, sizes = _loop_shape_and_sizes(dyn_args, in_core, context)
    ranks = {util.ndim(a) - len(d) for a, d in zip(dyn_args, in_core) if util.ndim(a)}
    if len(ranks) > 1:  # the rank-promotion policy applies to the loop dimensions
      util._check_rank_promotion("jnp.vectorize", [util.shape(a) for a in dyn_args])
    f = func if out_core is None else _checked(func, sizes, out_core, context)
    if not dyn_args:
      return f()

    # Shape each argument as (its present loop dims..., core dims): loop dims that it
    # lacks or broadcasts from size 1 are squeezed and become in_axes=None.
    present = []
    squeezed = []
    for arg, dims in zip(dyn_args, in_core):
      shp = util.shape(arg)
      aloop = shp[:len(shp) - len(dims)]
      offset = len(loop) - len(aloop)
      has = [d >= offset and aloop[d - offset] == loop[d] for d in range(len(loop))]
      keep = [d - offset for d in range(offset, len(loop)) if has[d]]
      new_shape = tuple(aloop[i] for i in keep) + shp[len(aloop):]
      squeezed.append(util.reshape(arg, new_shape))
      present.append(has)
    for d in reversed(range(len(loop))):
      f = vmap(f, in_axes=tuple(0 if has[d] else None for has in present))
    return f(*squeezed)

  return wrapped
