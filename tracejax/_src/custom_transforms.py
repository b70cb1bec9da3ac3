"""The 2020 custom-derivative API: `custom_transforms`, `defjvp`, `defjvp_all`,
`defvjp`, `defvjp_all`, `custom_gradient`, `jarrett`.

A `custom_transforms` function behaves like the function it wraps (so `jit`,
`vmap`, `grad` see through it) until a rule is attached with one of the `def*`
functions. Then each call is bound as the modern `custom_jvp_call` (a JVP rule,
also used for reverse mode by transposition) or `custom_vjp_call` (a VJP rule;
forward mode is then an error) of `custom_derivatives.py`, whose rules for
evaluation, staging, JVP, transposition and batching do the rest.

Adapting the 2020 rule signatures to that machinery takes two steps here:

* Closure conversion of the function. It is traced once per call, so values it
  closes over (including tracers of an enclosing `vmap` or `jit`) become
  explicit operands, which the enclosing trace then sees. Differentiating with
  respect to such a closed-over value is an error, as it was in 2020: the rule
  speaks only for the positional arguments.
* Closure conversion of the VJP function. `defvjp_all` rules return a Python
  closure `vjp(ct)` over the forward pass's intermediates; it is traced to a
  jaxpr whose constants are the residuals handed to the backward pass, so the
  backward pass stays differentiable (grad of grad) and batchable.
"""
import functools
import inspect

import numpy as np

from tracejax._src import dtypes, tree_util, util
from tracejax._src.core import avals as avals_mod
from tracejax._src.core import ir
from tracejax._src.core.trace import Tracer
from tracejax._src.custom_derivatives import custom_jvp_call_p, custom_vjp_call_p
from tracejax._src.interpreters import ad, batching, staging
from tracejax._src.runtime.array import Array, from_numpy


def _aval(x):
  return avals_mod.raise_to_shaped(x.aval if isinstance(x, Tracer) else avals_mod.get_aval(x))


def _fun_name(fun):
  return util.fun_name(fun)


class CustomTransformsFunction:
  """A function whose differentiation rules can be replaced (see `custom_transforms`)."""

  def __init__(self, fun):
    if not callable(fun):
      raise TypeError(f"custom_transforms requires a callable argument, got {type(fun)}.")
    self.fun = fun
    self._rule = None  # None, ("jvp", custom_jvp) or ("vjp", custom_vjp)
    functools.update_wrapper(self, fun)

  def __repr__(self):
    return f"<jax.custom_transforms function {_fun_name(self.fun)}>"

  def __get__(self, obj, objtype=None):
    return self if obj is None else functools.partial(self, obj)

  def __call__(self, *args, **kwargs):
    if kwargs:
      args = _resolve_kwargs(self.fun, args, kwargs)
    leaves, in_tree = tree_util.tree_flatten(args)
    for i, x in enumerate(leaves):
      if not isinstance(x, Tracer) and not avals_mod.is_valid_jaxtype(x):
        raise TypeError(f"custom_transforms function {_fun_name(self.fun)}: argument leaf "
                        f"{i} has type {type(x)}, which is not a valid JAX type.")
    if self._rule is None:
      return self.fun(*args)  # no rule: transformations see the function itself
    kind, rule = self._rule

    # Closure conversion: what `fun` closes over becomes constants of its jaxpr.
    out_store = []

    def flat_fun(*xs):
      out = self.fun(*tree_util.tree_unflatten(in_tree, xs))
      ol, ot = tree_util.tree_flatten(out)
      out_store[:] = [ot]
      return ol

    jaxpr, consts = staging.trace_to_jaxpr(flat_fun, [_aval(x) for x in leaves])
    out_tree = out_store[0]
    if any(_is_differentiated(c) for c in consts):
      if kind == "jvp":
        raise ValueError("Detected differentiation with respect to closed-over values with "
                         f"custom JVP rule (function {_fun_name(self.fun)}), which isn't "
                         "supported: pass the value as a positional argument instead.")
      raise ValueError(f"Detected differentiation w.r.t. variables from outside the scope of "
                       f"{_fun_name(self.fun)}, but defvjp and defvjp_all only support "
                       "differentiation w.r.t. positional arguments.")
    # Tracers among the constants are passed as operands (leading), so the trace they
    # belong to (an enclosing vmap or jit) processes the call; arrays stay closed over.
    tracer_pos = [i for i, c in enumerate(consts) if isinstance(c, Tracer)]
    tracer_consts = [consts[i] for i in tracer_pos]
    nt = len(tracer_consts)
    const_avals = [_aval(c) for c in tracer_consts]
    arg_avals = [_aval(x) for x in leaves]

    def call(*xs):
      cs = list(consts)
      for i, v in zip(tracer_pos, xs[:nt]):
        cs[i] = v
      return [_to_array(o) for o in ir.eval_jaxpr(jaxpr, cs, *xs[nt:])]

    call.__name__ = call.__qualname__ = _fun_name(self.fun)

    if kind == "jvp":
      def jvp(primals, tangents):
        args_in = tree_util.tree_unflatten(in_tree, list(primals[nt:]))
        tans_in = tree_util.tree_unflatten(in_tree, list(tangents[nt:]))
        out, out_dot = rule(args_in, tans_in)
        ol, ot = tree_util.tree_flatten(out)
        _check_out_tree("JVP", self.fun, out_tree, ot)
        tl, tt = tree_util.tree_flatten(out_dot, is_leaf=lambda x: x is None)
        if tt != ot:
          raise TypeError(f"Custom JVP rule of {_fun_name(self.fun)} returned different tree "
                          f"structures for primals and tangents, but they must be equal: "
                          f"{ot} and {tt}.")
        return ol, [_as_tangent(t, o) for t, o in zip(tl, ol)]

      outs = custom_jvp_call_p.bind(*tracer_consts, *leaves, call=call, jvp=jvp,
                                    num_consts=0, symbolic_zeros=False)
      return tree_util.tree_unflatten(out_tree, outs)

    store = {}

    def fwd(*xs):
      args_in = tree_util.tree_unflatten(in_tree, list(xs[nt:]))
      out, vjp_py = rule(*args_in)
      if not callable(vjp_py):
        raise TypeError(f"Custom VJP rule of {_fun_name(self.fun)} must return a pair "
                        f"(output, vjp_function), got a second element of type "
                        f"{type(vjp_py)}.")
      ol, ot = tree_util.tree_flatten(out)
      _check_out_tree("VJP", self.fun, out_tree, ot)
      ct_avals = [_aval(o).at_least_vspace() for o in ol]

      def flat_vjp(*cts):
        cts_in = vjp_py(tree_util.tree_unflatten(ot, list(cts)))
        return _flatten_arg_cts(self.fun, cts_in, args_in, arg_avals)

      # The VJP closure, traced: its constants are the residuals of the backward pass.
      vjp_jaxpr, res = staging.trace_to_jaxpr(flat_vjp, ct_avals)
      store["vjp"] = vjp_jaxpr
      return ol, list(res)

    def bwd(res, cts):
      cts = [ad.instantiate_zeros(c) for c in cts]
      arg_cts = [_to_array(c) for c in ir.eval_jaxpr(store["vjp"], list(res), *cts)]
      return [ad.zeros_like_aval(a.at_least_vspace()) for a in const_avals] + list(arg_cts)

    outs = custom_vjp_call_p.bind(*tracer_consts, *leaves, call=call, fwd=fwd, bwd=bwd,
                                  num_consts=0)
    return tree_util.tree_unflatten(out_tree, outs)


def _to_array(x):
  """A jaxpr output that is a constant (a literal) as a device array, like other results."""
  if isinstance(x, (Tracer, Array)):
    return x
  a = avals_mod.get_aval(x)
  if a.dtype == dtypes.float0:
    return x  # float0 zeros have no device representation
  return from_numpy(np.asarray(x, a.dtype), weak_type=a.weak_type)


def _is_differentiated(x):
  """Whether `x` is (or wraps) a tracer with a nonzero tangent of an active JVP."""
  while isinstance(x, Tracer):
    if isinstance(x, ad.JVPTracer):
      if type(x.tangent) is not ad.Zero:
        return True
      x = x.primal
    elif isinstance(x, batching.BatchTracer):
      x = x.val
    else:
      return False
  return False


def _check_out_tree(what, fun, expected, got):
  if expected != got:
    raise TypeError(f"Custom {what} rule of {_fun_name(fun)} returned an output with tree "
                    f"structure {got}, but the function's output has tree structure "
                    f"{expected}.")


def _as_tangent(t, primal_out):
  """The tangent `t` of output `primal_out`, with its shape and tangent dtype."""
  want = _aval(primal_out).at_least_vspace()
  if t is None or type(t) is ad.Zero:
    return ad.zeros_like_aval(want)
  return _fit(t, want, "Custom JVP rule returned a tangent", "output")


def _fit(x, want, what, of):
  """`x` (a rule's tangent or cotangent) cast to `want`'s dtype; a scalar is broadcast."""
  from tracejax._src.lax import elementwise, structural
  xa = _aval(x)
  if want.dtype == dtypes.float0:
    return ad.zeros_like_aval(want)
  if xa.shape != want.shape and xa.shape != ():
    raise TypeError(f"{what} of shape {xa.shape} for an {of} of shape {want.shape}.")
  if xa.dtype != want.dtype:
    x = elementwise.convert_element_type(x, want.dtype)
  if xa.shape != want.shape:
    x = structural.broadcast_in_dim(x, want.shape, ())
  return x


def _flatten_arg_cts(fun, cts_in, args_in, arg_avals):
  """Flat cotangents, one per argument leaf, from a VJP function's per-argument tuple."""
  nargs = len(args_in)
  if not isinstance(cts_in, (tuple, list)):
    if nargs != 1:
      raise TypeError(f"The VJP function of {_fun_name(fun)} must return a tuple with one "
                      f"cotangent per positional argument ({nargs}), got {type(cts_in)}.")
    cts_in = (cts_in,)  # TF's custom_gradient style: a bare value for one argument
  if len(cts_in) != nargs:
    raise TypeError(f"The VJP function of {_fun_name(fun)} returned {len(cts_in)} cotangents "
                    f"for {nargs} positional arguments; it must return a tuple with one "
                    "cotangent per positional argument.")
  flat = []
  for k, (c, a) in enumerate(zip(cts_in, args_in)):
    a_leaves, a_tree = tree_util.tree_flatten(a)
    if c is None:
      flat += [None] * len(a_leaves)
      continue
    c_leaves, c_tree = tree_util.tree_flatten(c, is_leaf=lambda x: x is None)
    if c_tree != a_tree:
      raise TypeError(f"The VJP function of {_fun_name(fun)} returned a cotangent for "
                      f"argument {k} with tree structure {c_tree}, which doesn't match the "
                      f"argument's tree structure {a_tree}.")
    flat += c_leaves
  out = []
  for c, aval in zip(flat, arg_avals):
    want = aval.at_least_vspace()
    if c is None or type(c) is ad.Zero or want.dtype == dtypes.float0:
      out.append(ad.zeros_like_aval(want))  # integer arguments get float0 zeros
    else:
      out.append(_fit(c, want, f"The VJP function of {_fun_name(fun)} returned a cotangent",
                      "argument"))
  return out


def _resolve_kwargs(fun, args, kwargs):
  try:
    ba = inspect.signature(fun).bind(*args, **kwargs)
  except (TypeError, ValueError) as e:
    raise TypeError(f"custom_transforms function {_fun_name(fun)}: {e}") from None
  ba.apply_defaults()
  if ba.kwargs:
    raise TypeError(f"custom_transforms function {_fun_name(fun)}: keyword arguments "
                    f"{sorted(ba.kwargs)} could not be resolved to positional arguments.")
  return ba.args


def _check_custom_transforms_type(name, fun):
  if not isinstance(fun, CustomTransformsFunction):
    raise TypeError(f"{name} requires a custom_transforms function as its first argument, "
                    f"but got type {type(fun)}.")


# =============================================================================
# The public functions
# =============================================================================

def custom_transforms(fun):
  """Wrap `fun` so that its differentiation rules can be customized.

  The result behaves like `fun` under every transformation (`jit`, `vmap`,
  `grad`, `jvp`) until a rule is attached with `defjvp`, `defjvp_all`, `defvjp`
  or `defvjp_all`; the rule then applies only to the positional arguments.

  Args:
    fun: the Python function to wrap (pytrees in and out).

  Returns:
    A callable `CustomTransformsFunction`.

  >>> @custom_transforms
  ... def f(x):
  ...   return jnp.sin(x ** 2)
  >>> grad(f)(3.)           # differentiates fun itself: 2 * 3 * cos(9)
  DeviceArray(-5.4667816, dtype=float32)
  >>> defvjp(f, lambda g, ans, x: g * x)
  >>> grad(f)(3.)
  DeviceArray(3., dtype=float32)
  """
  return CustomTransformsFunction(fun)


def defjvp_all(fun, custom_jvp):
  """Set a JVP rule for all the arguments of a `custom_transforms` function at once.

  Args:
    fun: a `custom_transforms` function of signature `a -> b`.
    custom_jvp: `custom_jvp(primals, tangents) -> (primal_out, tangent_out)`, where
      `primals` and `tangents` are tuples with one entry per positional argument.
      The tangent output must be linear in `tangents`: reverse mode transposes it.

  Returns:
    None; `fun` then uses the rule under `jvp`, `grad`, `vjp` and `linearize`.

  >>> f = custom_transforms(lambda x: jnp.sin(x ** 2))
  >>> defjvp_all(f, lambda p, t: (f(p[0]), 2 * p[0] * jnp.cos(p[0] ** 2) * t[0]))
  >>> jvp(f, (3.,), (1.,))
  (DeviceArray(0.4121185, dtype=float32), DeviceArray(-5.4667816, dtype=float32))
  """
  _check_custom_transforms_type("defjvp_all", fun)
  if not callable(custom_jvp):
    raise TypeError(f"defjvp_all requires a callable rule, got {type(custom_jvp)}.")
  fun._rule = ("jvp", custom_jvp)


def defjvp(fun, *jvprules):
  """Set one JVP rule per positional argument of a `custom_transforms` function.

  Args:
    fun: a `custom_transforms` function.
    *jvprules: one per positional argument, each `rule(g, ans, *primals)` giving the
      output tangent contributed by that argument's tangent `g` (`ans` is the
      primal output), or None when the output does not depend on that argument.
      The contributions are summed.

  Returns:
    None.

  >>> f = custom_transforms(lambda x, y: jnp.sin(x ** 2 + y))
  >>> defjvp(f, lambda g, ans, x, y: jnp.cos(x ** 2 + y) * 2 * x * g,
  ...        lambda g, ans, x, y: jnp.cos(x ** 2 + y) * g)
  >>> jvp(f, (2., 3.), (1., 1.))   # cos(7) * 5
  (DeviceArray(0.6569866, dtype=float32), DeviceArray(3.7695112, dtype=float32))
  """
  _check_custom_transforms_type("defjvp", fun)
  for i, r in enumerate(jvprules):
    if r is not None and not callable(r):
      raise TypeError(f"defjvp: rule {i} must be callable or None, got {type(r)}.")

  def custom_jvp(primals, tangents):
    if len(primals) != len(jvprules):
      raise TypeError(f"defjvp: {_fun_name(fun.fun)} was called with {len(primals)} "
                      f"positional arguments but {len(jvprules)} JVP rules were given.")
    ans = fun(*primals)
    total = None
    for rule, p, t in zip(jvprules, primals, tangents):
      if rule is None or not _has_float_leaves(p):
        continue  # integer arguments have no tangents
      contrib = rule(t, ans, *primals)
      total = contrib if total is None else tree_util.tree_map(lambda a, b: a + b, total,
                                                               contrib)
    if total is None:
      total = tree_util.tree_map(lambda o: ad.zeros_like_aval(_aval(o).at_least_vspace()),
                                 ans)
    return ans, total

  defjvp_all(fun, custom_jvp)


def _has_float_leaves(x):
  return any(dtypes.issubdtype(_aval(leaf).dtype, np.inexact)
             for leaf in tree_util.tree_leaves(x))


def defvjp_all(fun, custom_vjp):
  """Set a VJP rule for all the arguments of a `custom_transforms` function at once.

  Args:
    fun: a `custom_transforms` function of signature `a -> b`.
    custom_vjp: `custom_vjp(*primals) -> (primal_out, vjp)`, where `vjp(ct)` maps an
      output cotangent to a tuple with one cotangent per positional argument (None
      for a zero cotangent). `vjp` may close over values of the forward pass; if it
      is itself differentiable, so is the gradient (grad of grad).

  Returns:
    None. Forward mode (`jvp`) of `fun` is then an error, as in JAX.

  >>> f = custom_transforms(lambda x, y: x * y)
  >>> defvjp_all(f, lambda x, y: (x * y, lambda g: (y * g, x * g)))
  >>> vjp(f, 3., 4.)[1](1.)
  (DeviceArray(4., dtype=float32), DeviceArray(3., dtype=float32))
  """
  _check_custom_transforms_type("defvjp_all", fun)
  if not callable(custom_vjp):
    raise TypeError(f"defvjp_all requires a callable rule, got {type(custom_vjp)}.")
  fun._rule = ("vjp", custom_vjp)


def defvjp(fun, *vjprules):
  """Set one VJP rule per positional argument of a `custom_transforms` function.

  Args:
    fun: a `custom_transforms` function.
    *vjprules: one per positional argument, each `rule(g, ans, *primals)` giving that
      argument's cotangent from the output cotangent `g` (`ans` is the primal
      output), or None when the argument's cotangent is zero.

  Returns:
    None.

  >>> f = custom_transforms(lambda x, y: jnp.sin(x ** 2 + y))
  >>> defvjp(f, lambda g, ans, x, y: g * jnp.cos(x ** 2 + y) * 2 * x, None)
  >>> grad(f)(2., 3.)        # 4 * cos(7)
  DeviceArray(3.015609, dtype=float32)
  """
  _check_custom_transforms_type("defvjp", fun)
  for i, r in enumerate(vjprules):
    if r is not None and not callable(r):
      raise TypeError(f"defvjp: rule {i} must be callable or None, got {type(r)}.")

  def custom_vjp(*primals):
    if len(primals) != len(vjprules):
      raise TypeError(f"defvjp: {_fun_name(fun.fun)} was called with {len(primals)} "
                      f"positional arguments but {len(vjprules)} VJP rules were given.")
    ans = fun.fun(*primals)

    def vjpfun(ct):
      return tuple(rule(ct, ans, *primals) if rule is not None else None
                   for rule in vjprules)
    return ans, vjpfun

  defvjp_all(fun, custom_vjp)


def custom_gradient(fun):
  """Define a function and its VJP together, as TensorFlow's `tf.custom_gradient` does.

  Args:
    fun: `fun(*args) -> (out, vjp)`, where `vjp(ct)` returns a tuple with one
      cotangent per positional argument (a bare value is accepted for one argument).
      `vjp` may close over intermediates of the forward computation.

  Returns:
    A `custom_transforms` function computing `out`, whose VJP is `vjp`.

  >>> @custom_gradient
  ... def f(x):
  ...   return x ** 2, lambda g: (g * x,)
  >>> f(3.), grad(f)(3.)
  (DeviceArray(9., dtype=float32), DeviceArray(3., dtype=float32))
  """
  if not callable(fun):
    raise TypeError(f"custom_gradient requires a callable argument, got {type(fun)}.")

  @functools.wraps(fun)
  def primal_fun(*args, **kwargs):
    ans, _ = fun(*args, **kwargs)
    return ans

  primal = custom_transforms(primal_fun)
  defvjp_all(primal, fun)
  return primal


def jarrett(fun):
  """Differentiate an elementwise function by its Jacobian's diagonal ("Jarrett's trick").

  For `fun` whose Jacobian is diagonal (every output element depends only on the
  input elements at the same position, e.g. a composition of elementwise
  functions), the JVP is `sum_i jac_i * t_i`, where `jac_i` is the JVP of `fun`
  along a tangent of ones in argument `i` (all the `jac_i` come from one vmapped
  forward pass). Reverse mode then only stores `jac_i` and transposes a
  multiplication, rather than the whole of `fun`'s linearization.

  Args:
    fun: an elementwise function of floating-point arguments.

  Returns:
    A `custom_transforms` function equal to `fun`, with that JVP rule.

  >>> f = jarrett(lambda x: jnp.sin(jnp.cos(x)))
  >>> grad(lambda x: jnp.sum(f(x)))(jnp.ones(2))   # -cos(cos(1)) * sin(1)
  DeviceArray([-0.72160614, -0.72160614], dtype=float32)
  """
  new_fun = custom_transforms(fun)

  def elementwise_jvp(primals, tangents):
    from tracejax._src.api import jvp, vmap
    leaves, tree = tree_util.tree_flatten(primals)
    for x in leaves:
      if not dtypes.issubdtype(_aval(x).dtype, np.floating):
        raise TypeError("jarrett is only defined for functions of floating-point inputs "
                        f"(that model real numbers), got an input of dtype {_aval(x).dtype}.")
    basis = _elementwise_std_basis(leaves, tree)

    def push(t):
      return jvp(fun, tuple(primals), tuple(t))

    out, jacs = vmap(push, out_axes=(None, 0))(basis)
    t_leaves = tree_util.tree_leaves(tangents)
    jac_leaves, out_tree = tree_util.tree_flatten(jacs)
    t_out = []
    for jac in jac_leaves:  # jac: (number of input leaves, *output shape)
      acc = None
      for i, t in enumerate(t_leaves):
        term = t * jac[i]
        acc = term if acc is None else acc + term
      t_out.append(acc)
    return out, tree_util.tree_unflatten(out_tree, t_out)

  defjvp_all(new_fun, elementwise_jvp)
  return new_fun


def _elementwise_std_basis(leaves, tree):
  """Per input leaf i: a pytree like the inputs, ones in leaf i and zeros elsewhere,
  stacked along a new leading axis of size len(leaves)."""
  n = len(leaves)
  basis_leaves = []
  for j, x in enumerate(leaves):
    a = _aval(x)
    rows = np.zeros((n,) + tuple(a.shape), a.dtype)
    rows[j] = 1
    basis_leaves.append(rows)
  return tree_util.tree_unflatten(tree, basis_leaves)
