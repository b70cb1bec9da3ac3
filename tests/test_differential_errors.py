"""Misuse that JAX rejects must be rejected here too, with JAX's error type and message.

Issue 13, items 11-13 and 15-16: each case below was run under real JAX 0.10.2
(/work/jaxvenv, by hand; JAX is never imported here) and its error type and a key
fragment of its message are recorded as literals, with the JAX text in a comment
where ours differs in wording. Cases JAX accepts are checked to be accepted too.
"""
import re

import numpy as np
import pytest

import tracejax as jax
import tracejax.numpy as jnp
from tracejax import lax

X3 = np.arange(3.0, dtype=np.float32)


def raises(exc, fragment):
  return pytest.raises(exc, match=re.escape(fragment))


# ---- item 11: integer_pow with a non-integer exponent ------------------------------------

def test_integer_pow_fractional_exponent_raises():
  # JAX 0.10.2: TypeError "unsupported operand type(s) for &: 'float' and 'int'"
  # (for 1.5, 2.5, -1.5); ours names the argument instead of truncating to 1.
  with raises(TypeError, "integer_pow requires a static integer exponent y, got 1.5"):
    lax.integer_pow(X3, 1.5)
  # JAX 0.10.2: TypeError "'<' not supported between instances of 'str' and 'int'"
  with pytest.raises(TypeError):
    lax.integer_pow(X3, "2")
  with pytest.raises(TypeError):
    jax.jit(lambda x: lax.integer_pow(x, 0.5))(X3)


def test_integer_pow_integral_exponents_accepted():
  # JAX 0.10.2 accepts 2.0 (-> [0., 1., 4.]), np.int32(2) and True.
  np.testing.assert_allclose(lax.integer_pow(X3, 2.0), X3 ** 2)
  np.testing.assert_allclose(lax.integer_pow(X3, np.int32(3)), X3 ** 3)
  np.testing.assert_allclose(jax.jit(lambda x: lax.integer_pow(x, 3.0))(X3), X3 ** 3)


# ---- item 12: vmap axes out of range -----------------------------------------------------

@pytest.mark.parametrize("shape,out_axes,msg", [
    ((3,), 3, "axis 3 is out of bounds for array of dimension 1"),    # JAX 0.10.2, verbatim
    ((3,), 1, "axis 1 is out of bounds for array of dimension 1"),    # JAX 0.10.2, verbatim
    ((3, 2), -3, "axis -3 is out of bounds for array of dimension 2"),  # JAX 0.10.2
    ((3, 2), 2, "axis 2 is out of bounds for array of dimension 2"),  # JAX 0.10.2
])
def test_vmap_out_axes_out_of_bounds(shape, out_axes, msg):
  f = jax.vmap(lambda x: x * 2, out_axes=out_axes)
  with raises(ValueError, msg):
    f(jnp.ones(shape))
  with raises(ValueError, msg):
    jax.jit(f)(jnp.ones(shape))


def test_vmap_out_axes_unbatched_output_and_valid_negative():
  # JAX 0.10.2: "axis 5 is out of bounds for array of dimension 2" (an unbatched
  # output is broadcast, so it gains the mapped axis too).
  with raises(ValueError, "axis 5 is out of bounds for array of dimension 2"):
    jax.vmap(lambda x: jnp.ones(2), out_axes=5)(X3)
  x = np.arange(6.0, dtype=np.float32).reshape(3, 2)
  out = jax.vmap(lambda r: r * 2, out_axes=-1)(x)
  np.testing.assert_allclose(out, np.stack([r * 2 for r in x], axis=-1))


@pytest.mark.parametrize("fun,out_axes,in_axes,x,msg", [
    (lambda x: x, None, 0, np.ones(3), "at vmap out_axes, got axis spec None but output "
     "was batched on axis 0"),
    (lambda x: (x, x), (0, None), 0, np.ones(3), "at vmap out_axes[1], got axis spec None "
     "but output was batched on axis 0"),
    (lambda x: {'a': x, 'b': (1., x)}, {'a': 0, 'b': None}, 0, np.ones(3),
     "at vmap out_axes['b'][1], got axis spec None but output was batched on axis 0"),
    (lambda x: x, None, 1, np.ones((2, 3)), "at vmap out_axes, got axis spec None but "
     "output was batched on axis 1"),
])
def test_vmap_out_axes_none_of_batched_output(fun, out_axes, in_axes, x, msg):
  # JAX 0.10.2, verbatim: the output's pytree path and the axis it is batched on.
  with raises(ValueError, msg):
    jax.vmap(fun, in_axes=in_axes, out_axes=out_axes)(x)


def test_vmap_axes_bad_specs():
  # JAX 0.10.2, verbatim.
  with raises(ValueError, "vmap was requested to map its argument along axis 3, which implies "
              "that its rank should be at least 4, but is only 1 (its shape is (3,))"):
    jax.vmap(lambda x: x, in_axes=3)(X3)
  with raises(ValueError, "along axis -2, which implies that its rank should be at least 2"):
    jax.vmap(lambda x: x, in_axes=-2)(X3)
  with raises(TypeError, "vmap out_axes must be an int, None, or (nested) container with "
              "those types as leaves, but got 1.5."):
    jax.vmap(lambda x: x, out_axes=1.5)
  with raises(ValueError, "vmap must have at least one non-None value in in_axes or "
              "axis_size must be specified"):
    jax.vmap(lambda x: x, in_axes=None)(X3)
  # JAX 0.10.2: "vmap in_axes must be an int, None, or a tuple of entries corresponding
  # to the positional arguments passed to the function, but got len(in_axes)=1,
  # len(args)=2" (ours keeps its tree-prefix wording, which tests/test_transformations.py
  # checks; the type agrees).
  with pytest.raises(ValueError):
    jax.vmap(lambda x, y: x + y, in_axes=(0,))(X3, X3)
  # JAX 0.10.2: "at vmap out_axes, got axis spec None but output was batched on axis 0"
  with pytest.raises(ValueError):
    jax.vmap(lambda x: x, out_axes=None)(X3)


# ---- item 13: custom rules returning values of the wrong type ----------------------------

def _cjvp(tangent_out):
  @jax.custom_jvp
  def f(x):
    return x * 2

  @f.defjvp
  def f_jvp(primals, tangents):
    return f(primals[0]), tangent_out(tangents[0])
  return f


def test_custom_jvp_tangent_wrong_shape_or_dtype():
  # JAX 0.10.2, verbatim.
  with raises(TypeError, "Custom JVP rule must produce primal and tangent outputs with "
              "corresponding shapes and dtypes. Expected float32[3] (tangent type of "
              "float32[3]) but got float32[5]."):
    jax.jvp(_cjvp(lambda t: jnp.ones(5)), (X3,), (X3,))
  with raises(TypeError, "Expected float32[3] (tangent type of float32[3]) but got int32[3]."):
    jax.jvp(_cjvp(lambda t: jnp.ones(3, jnp.int32)), (X3,), (X3,))
  with raises(TypeError, "but got float32[]."):  # JAX 0.10.2: a Python 0. of the wrong shape
    jax.jvp(_cjvp(lambda t: 0.), (X3,), (X3,))
  with raises(TypeError, "but got float32[5]."):
    jax.grad(lambda x: _cjvp(lambda t: jnp.ones(5))(x).sum())(X3)


def test_custom_jvp_tangent_accepted_cases():
  # JAX 0.10.2 accepts a weakly typed Python scalar of the right shape, and does not
  # check the dtype of an integer primal's tangent (its tangent type is float0).
  @jax.custom_jvp
  def g(x):
    return x.sum() * 2
  g.defjvp(lambda p, t: (g(p[0]), 0.))
  y, t = jax.jvp(g, (X3,), (X3,))
  assert float(y) == 6.0 and float(t) == 0.0
  f = _cjvp(lambda t: jnp.ones(3))
  y, _ = jax.jvp(f, (jnp.arange(3),), (np.zeros(3, jax.dtypes.float0),))
  np.testing.assert_array_equal(y, [0, 2, 4])


def test_custom_jvp_tangent_tree_mismatch_names_rule():
  # JAX 0.10.2: "Custom JVP rule fj for function f must produce primal and tangent
  # outputs with equal container (pytree) structures, but got PyTreeDef(*) and
  # PyTreeDef((*, *)) respectively."
  @jax.custom_jvp
  def f(x):
    return x * 2

  @f.defjvp
  def fj(p, t):
    return f(p[0]), (t[0], t[0])
  with raises(TypeError, "Custom JVP rule fj for function f must produce primal and tangent "
              "outputs with equal container (pytree) structures"):
    jax.jvp(f, (X3,), (X3,))


def _cvjp(bwd):
  @jax.custom_vjp
  def f(x):
    return x * 2
  f.defvjp(lambda x: (f(x), None), bwd)
  return f


def test_custom_vjp_bwd_wrong_shape():
  # JAX 0.10.2, verbatim.
  msg = ("Custom VJP bwd rule must produce an output with the same type as the args tuple "
         "of the primal function, but at output[0] the bwd rule produced an output of type "
         "float32[5] corresponding to an input of type float32[3], so the shapes do not match")
  f = _cvjp(lambda r, g: (jnp.ones(5),))
  with raises(ValueError, msg):
    jax.grad(lambda x: f(x).sum())(X3)
  with raises(ValueError, msg):
    jax.jit(jax.grad(lambda x: f(x).sum()))(X3)
  f = _cvjp(lambda r, g: (g[:, None],))
  with raises(ValueError, "produced an output of type float32[3,1] corresponding to an input "
              "of type float32[3]"):
    jax.grad(lambda x: f(x).sum())(X3)


def test_custom_vjp_bwd_wrong_shape_nested_path():
  # JAX 0.10.2: "... but at output[0]['a'] the bwd rule produced an output of type
  # float32[5] corresponding to an input of type float32[3], so the shapes do not match"
  @jax.custom_vjp
  def f(x, y):
    return x["a"] * y
  f.defvjp(lambda x, y: (f(x, y), None), lambda r, g: ({"a": jnp.ones(5)}, g))
  with raises(ValueError, "but at output[0]['a'] the bwd rule produced an output of type "
              "float32[5]"):
    jax.grad(lambda x: f({"a": x}, x).sum())(X3)


def test_custom_vjp_bwd_wrong_tree_and_dtype():
  # JAX 0.10.2: "Custom VJP bwd rule must produce an output with the same container
  # (pytree) structure as the args tuple of the primal function, and in particular must
  # produce a tuple of length equal to the number of arguments to the primal function,
  # but got bwd output structure PyTreeDef((*, *)) for primal input structure PyTreeDef((*,))."
  f = _cvjp(lambda r, g: (g, g))
  with raises(TypeError, "and in particular must produce a tuple of length equal to the "
              "number of arguments to the primal function, but got bwd output structure"):
    jax.grad(lambda x: f(x).sum())(X3)
  # JAX 0.10.2 does not check the dtype: an int32 cotangent gives the gradient [1, 1, 1]
  # of dtype int32, and so does tracejax.
  f = _cvjp(lambda r, g: (g.astype(jnp.int32),))
  g = jax.grad(lambda x: f(x).sum())(X3)
  assert g.dtype == np.int32 and g.tolist() == [1, 1, 1]


def test_custom_vjp_bwd_bare_value_for_one_argument():
  # Deliberate difference: JAX 0.10.2 raises the container-structure TypeError above for
  # a bwd returning a bare array; the 2020 documents (the seeds) return one (`return g`),
  # so a bare value is accepted for a one-argument function.
  f = _cvjp(lambda r, g: g * 3)
  np.testing.assert_allclose(jax.grad(lambda x: f(x).sum())(X3), [3.0, 3.0, 3.0])


# ---- item 15: lenient where JAX is strict (and the reverse) ------------------------------

def test_jit_non_hashable_static_argument():
  # JAX 0.10.2, verbatim (first line).
  with raises(ValueError, "Non-hashable static arguments are not supported. An error "
              "occurred while trying to hash an object of type <class 'list'>, [1]."):
    jax.jit(lambda x, n: x, static_argnums=1)(X3, [1])


def test_jit_argnums_and_argnames_checked_at_definition():
  # JAX 0.10.2, verbatim, each raised by jit(...) itself.
  with raises(ValueError, "Jitted function has invalid argnames {'y'} in static_argnames. "
              "Function does not take these args."):
    jax.jit(lambda x: x, static_argnames="y")
  with raises(ValueError, "Jitted function has invalid argnames {'m'} in static_argnames."):
    jax.jit(lambda x, *, n: x, static_argnames="m")
  with raises(ValueError, "Jitted function has donate_argnums=(3,), but only accepts 1 "
              "positional arguments."):
    jax.jit(lambda x: x, donate_argnums=3)
  with raises(ValueError, "Jitted function has donate_argnums=(-2,), but only accepts 1 "
              "positional arguments."):
    jax.jit(lambda x: x, donate_argnums=-2)
  with raises(ValueError, "Jitted function has static_argnums=(3,), but only accepts 1 "
              "positional arguments."):
    jax.jit(lambda x: x, static_argnums=3)
  with raises(ValueError, "static_argnames and donate_argnames cannot intersect. Argument "
              "names {'x'} appear in both static_argnames and donate_argnames"):
    jax.jit(lambda x: x, static_argnums=0, donate_argnums=0)
  # JAX 0.10.2: TypeError "'str' object cannot be interpreted as an integer"
  with pytest.raises(TypeError):
    jax.jit(lambda x: x, static_argnums="x")
  # JAX 0.10.2: TypeError "Expected a callable value, got 3" (jit, grad and vmap)
  for transform in (jax.jit, jax.grad, jax.vmap):
    with raises(TypeError, "Expected a callable value, got 3"):
      transform(3)


def test_jit_argnums_accepted_cases():
  # JAX 0.10.2 accepts these: **kwargs takes any static name, *args any argnum, -1 is x.
  np.testing.assert_allclose(jax.jit(lambda x, **kw: x, static_argnames="m")(X3), X3)
  np.testing.assert_allclose(jax.jit(lambda *xs: xs[0] + 1, donate_argnums=3)(X3), X3 + 1)
  np.testing.assert_allclose(jax.jit(lambda x: x * 2, donate_argnums=-1)(jnp.asarray(X3)),
                             X3 * 2)
  assert jax.jit(lambda x, n: x * n, static_argnames="n")(X3, n=2).tolist() == [0., 2., 4.]


def test_pad_padding_value_dtype():
  # JAX 0.10.2, verbatim.
  with raises(TypeError, "pad operand and padding_value must be same dtype: got float32 and "
              "int32."):
    lax.pad(X3, jnp.int32(0), [(1, 1, 0)])
  # JAX 0.10.2, verbatim.
  with raises(ValueError, "interior padding in padding_config must be nonnegative, got "
              "padding_config ((1, 1, -1),)"):
    lax.pad(X3, 0., [(1, 1, -1)])


def test_while_loop_weak_int_carry_becoming_float():
  # JAX 0.10.2 accepts it: the weak int carry 0 follows the body's float: 3.0, float32.
  r = lax.while_loop(lambda c: c < 3, lambda c: c + 1.5, 0)
  assert r.dtype == np.float32 and float(r) == 3.0


# ---- item 16: errors that read as internals ----------------------------------------------

# JAX 0.10.2: "expected function with aux output to return a two-element tuple, but got
# type <class '...LinearizeTracer'> with value GradTracer(primal=3.0, ...)"
_AUX = "expected function with aux output to return a two-element tuple, but got type"


def test_has_aux_not_a_pair():
  f = lambda x: x.sum()  # noqa: E731
  with raises(TypeError, _AUX):
    jax.grad(f, has_aux=True)(X3)
  with raises(TypeError, _AUX):
    jax.value_and_grad(f, has_aux=True)(X3)
  with raises(TypeError, _AUX):
    jax.vjp(lambda x: x, X3, has_aux=True)
  with raises(TypeError, _AUX):
    jax.jacrev(lambda x: x, has_aux=True)(X3)
  with raises(TypeError, _AUX):
    jax.grad(lambda x: (x.sum(), 1, 2), has_aux=True)(X3)
  # JAX 0.10.2 accepts a list of two.
  g, aux = jax.grad(lambda x: [x.sum(), 1], has_aux=True)(X3)
  assert g.tolist() == [1.0, 1.0, 1.0] and aux == 1


def test_custom_rule_not_returning_a_pair():
  @jax.custom_jvp
  def f(x):
    return x * 2

  @f.defjvp
  def fj(p, t):
    return p[0] * 2
  # JAX 0.10.2, verbatim.
  with raises(TypeError, "Custom JVP rule fj for function f must produce a pair (list or "
              "tuple of length two) representing primal and tangent outputs, but got "
              "[0. 2. 4.]."):
    jax.jvp(f, (X3,), (X3,))

  @jax.custom_vjp
  def h(x):
    return x * 2

  def h_fwd(x):
    return x * 2
  h.defvjp(h_fwd, lambda r, g: (g,))
  # JAX 0.10.2: "Custom VJP fwd rule <lambda> for function f must produce a pair (list or
  # tuple of length two) where the first element represents the primal output (equal to
  # those of the custom_vjp-decorated function f) and the second element represents
  # residuals (...), but instead of a pair the fwd rule <lambda> produced [0. 2. 4.]."
  with raises(TypeError, "Custom VJP fwd rule h_fwd for function h must produce a pair "
              "(list or tuple of length two) where the first element represents the primal "
              "output"):
    jax.grad(lambda x: h(x).sum())(X3)


def test_device_put_unsupported_values():
  # JAX 0.10.2, verbatim.
  with raises(TypeError, "Dtype <U1 is not a valid JAX array type. Only arrays of numeric "
              "types are supported by JAX."):
    jax.device_put(np.array(["a"]))
  with raises(TypeError, "Dtype object is not a valid JAX array type."):
    jax.device_put(np.array([object()]))
  with raises(TypeError, "Dtype datetime64[D] is not a valid JAX array type."):
    jax.device_put(np.array(["2020-01-01"], dtype="datetime64[D]"))
  # JAX 0.10.2: TypeError "Error interpreting argument to <lambda> as an abstract array"
  with raises(TypeError, "Dtype <U1 is not a valid JAX array type."):
    jax.jit(lambda x: x)(np.array(["a"]))
  # JAX 0.10.2: TypeError "Cannot interpret value of type <class 'object'> as an abstract
  # array; it does not have a dtype attribute"
  with pytest.raises(TypeError):
    jax.device_put(object())
  with raises(TypeError, "is not a valid JAX type"):  # JAX 0.10.2: "Argument 'abc' of type
    jax.device_put("abc")                              # <class 'str'> is not a valid JAX type"


def test_vjp_function_cotangent_checks():
  _, f_vjp = jax.vjp(lambda x: x * 2, X3)
  # JAX 0.10.2, verbatim.
  with raises(ValueError, "unexpected JAX type (e.g. shape/dtype) for argument to VJP "
              "function: got int32[3], but expected float32[3] because the corresponding "
              "output of the differentiated function had JAX type float32[3]"):
    f_vjp(jnp.ones(3, jnp.int32))
  with raises(ValueError, "got float16[3], but expected float32[3]"):
    f_vjp(jnp.ones(3, jnp.float16))
  with raises(ValueError, "got float32[4], but expected float32[3]"):
    f_vjp(jnp.ones(4))
  with raises(ValueError, "got float32[3,1], but expected float32[3]"):
    f_vjp(jnp.ones((3, 1)))
  # JAX 0.10.2: ValueError "unexpected tree structure.\n\nThe argument to a VJP function
  # returned by `jax.vjp` must match the pytree structure of the differentiated function"
  with raises(ValueError, "unexpected tree structure"):
    f_vjp((jnp.ones(3),))
  # JAX 0.10.2: TypeError "The function returned by `jax.vjp` applied to <lambda> was
  # called with 2 arguments, but functions returned by `jax.vjp` must be called with a
  # single argument ..."
  with raises(TypeError, "must be called with a single argument"):
    f_vjp(X3, X3)
  # JAX 0.10.2 accepts a NumPy float64 cotangent (canonicalised with x64 off), a Python
  # float for a scalar output, and integer cotangents for an integer output.
  np.testing.assert_allclose(f_vjp(np.ones(3))[0], [2.0, 2.0, 2.0])
  _, s_vjp = jax.vjp(lambda x: (x * 2).sum(), X3)
  np.testing.assert_allclose(s_vjp(1.0)[0], [2.0, 2.0, 2.0])
  with raises(ValueError, "got int32[], but expected float32[]"):  # JAX 0.10.2: Python int
    s_vjp(1)
  _, i_vjp = jax.vjp(lambda x: (x * 2, jnp.arange(2)), X3)
  np.testing.assert_allclose(i_vjp((X3, jnp.zeros(2, jnp.int32)))[0], X3 * 2)


def test_fori_loop_float_bounds_as_jax():
  # JAX 0.10.2: fori_loop(0., 3., lambda i, x: x + i, 0.) -> 3.0 (float steps of 1 from
  # `lower`); bounds (0., 2.5) run 2 trips; mixed bound dtypes raise
  # TypeError "lower and upper arguments to fori_loop must have equal types, got int32 and
  # float32".
  from tracejax import lax
  assert float(lax.fori_loop(0., 3., lambda i, x: x + i, 0.)) == 3.0
  assert float(lax.fori_loop(0., 2.5, lambda i, x: x + 1., 0.)) == 2.0
  assert float(jax.jit(lambda a, b: lax.fori_loop(a, b, lambda i, x: x + i, 0.))(0., 3.)) == 3.0
  with pytest.raises(TypeError, match="lower and upper arguments to fori_loop must have "
                     "equal types, got int32 and float32"):
    lax.fori_loop(0, 3., lambda i, x: x, 0.)
