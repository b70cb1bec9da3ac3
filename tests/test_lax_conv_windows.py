"""Convolutions, windowed reductions and cumulative reductions.

Each primitive is checked against a loop-based NumPy reference
(`reference_windowed.py`) with `check_primitive` (eager vs reference, jit vs
eager, abstract eval vs actual); then the documented output-shape oracle of
the Sharp Bits (D-CONV5), derivatives with `check_grads` (forward and
reverse, with respect to every operand), and `vmap` against a Python loop.
"""
import numpy as np
import pytest

import lax_test_util as tu
from tracejax._src.api import grad, jvp, make_jaxpr, vjp, vmap
from tracejax._src import dispatch
from tracejax._src.jit import jit
from tracejax._src.lax import convolution as C
from tracejax._src.lax import elementwise as E
from tracejax._src.lax import reference_windowed as ref
from tracejax._src.lax import windowed as W
from tracejax._src.test_util import check_grads
import tracejax.numpy  # noqa: F401,E402 (tracers' operators: x * y, as any user program has them)

bf16 = tu.bfloat16
f32 = np.dtype(np.float32)


def _rand(shape, dtype=np.float32, seed=0, kind="default"):
  return tu.rand(np.random.default_rng(seed), shape, dtype, kind)


def _r64(*shape, seed=0):
  return np.random.default_rng(seed).normal(size=shape)


def _loop(fun, args, axes, size):
  """What `vmap(fun, in_axes=axes)(*args)` must be: a Python loop, stacked on axis 0."""
  return np.stack([
      np.asarray(fun(*[a if ax is None else np.take(a, k, ax) for a, ax in zip(args, axes)]))
      for k in range(size)])


def _batched(shape, ax, size, dtype=np.float32, seed=0):
  if ax is None:
    return _rand(shape, dtype, seed)
  s = list(shape)
  s.insert(ax % (len(shape) + 1), size)
  return _rand(s, dtype, seed)


# =============================================================================
# Dimension numbers and padding
# =============================================================================

DNUM_CASES = [
    ((4, 4), ("NHWC", "HWIO", "NHWC"), ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))),
    ((3, 3), ("NWC", "WIO", "NWC"), ((0, 2, 1), (2, 1, 0), (0, 2, 1))),
    ((5, 5), ("NHWDC", "HWDIO", "NHWDC"), ((0, 4, 1, 2, 3), (4, 3, 0, 1, 2), (0, 4, 1, 2, 3))),
    ((4, 4), ("NCHW", "OIHW", "NCHW"), ((0, 1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3))),
    ((4, 4), None, ((0, 1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3))),
    # spatial dimensions follow the kernel's order: here W before H
    ((4, 4), ("NHWC", "WHIO", "NCHW"), ((0, 3, 2, 1), (3, 2, 0, 1), (0, 1, 3, 2))),
]


@pytest.mark.parametrize("ranks,spec,expected", DNUM_CASES)
def test_conv_dimension_numbers(ranks, spec, expected):
  dn = C.conv_dimension_numbers((1,) * ranks[0], (1,) * ranks[1], spec)
  assert isinstance(dn, C.ConvDimensionNumbers)
  assert tuple(map(tuple, dn)) == expected
  assert C.conv_dimension_numbers((1,) * ranks[0], (1,) * ranks[1], dn) == dn


def test_conv_dimension_numbers_repr():
  dn = C.conv_dimension_numbers((1, 200, 198, 3), (3, 3, 3, 3), ("NHWC", "HWIO", "NHWC"))
  assert repr(dn) == ("ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), "
                      "rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2))")


@pytest.mark.parametrize("spec,match", [
    (("NHWC", "HWIO"), "must be length 3"),
    (("NHWC", "HWIO", "NHW"), "must have len equal"),
    (("NHWX", "HWIO", "NHWC"), "'N' and 'C' exactly once"),
    (("NHWC", "HWOO", "NHWC"), "'O' and 'I' exactly once"),
    (("NHWC", "HXIO", "NHWC"), "same set of spatial characters"),
    ("NHWC", "must be tuple/list or None"),
])
def test_conv_dimension_numbers_errors(spec, match):
  with pytest.raises(TypeError, match=match):
    C.conv_dimension_numbers((1,) * 4, (1,) * 4, spec)


@pytest.mark.parametrize("in_shape,window,strides,padding,expected", [
    ((200, 198), (3, 3), (1, 1), "SAME", [(1, 1), (1, 1)]),
    ((200, 198), (3, 3), (2, 2), "SAME", [(0, 1), (0, 1)]),
    ((5,), (4,), (1,), "SAME", [(1, 2)]),
    ((5,), (4,), (1,), "SAME_LOWER", [(2, 1)]),
    ((5,), (4,), (3,), "same", [(1, 1)]),
    ((7, 4), (3, 2), (2, 1), "VALID", [(0, 0), (0, 0)]),
    ((2,), (5,), (1,), "SAME", [(2, 2)]),
])
def test_padtype_to_pads(in_shape, window, strides, padding, expected):
  assert C.padtype_to_pads(in_shape, window, strides, padding) == expected


def test_padtype_to_pads_unknown():
  with pytest.raises(ValueError, match="Unknown padding type"):
    C.padtype_to_pads((3,), (2,), (1,), "FULL")


# =============================================================================
# The documented output-shape oracle (FEATURES.md D-CONV1..5)
# =============================================================================

_IMG = np.zeros((1, 200, 198, 3), np.float32)
_IMG[0, 30:40, 20:30, 0] = 1.0
_KER = np.zeros((3, 3, 3, 3), np.float32) + np.array(
    [[1, 1, 0], [1, 0, -1], [0, -1, -1]], np.float32)[:, :, None, None]
_DN = ("NHWC", "HWIO", "NHWC")

ORACLE = [
    ("same", lambda: C.conv_general_dilated(_IMG, _KER, (1, 1), "SAME", (1, 1), (1, 1), _DN),
     (1, 200, 198, 3)),
    ("valid", lambda: C.conv_general_dilated(_IMG, _KER, (1, 1), "VALID", (1, 1), (1, 1), _DN),
     (1, 198, 196, 3)),
    ("same_stride2", lambda: C.conv_general_dilated(_IMG, _KER, (2, 2), "SAME", (1, 1), (1, 1),
                                                    _DN), (1, 100, 99, 3)),
    ("valid_atrous", lambda: C.conv_general_dilated(_IMG, _KER, (1, 1), "VALID", (1, 1),
                                                    (12, 12), _DN), (1, 176, 174, 3)),
    ("lhs_dilation", lambda: C.conv_general_dilated(_IMG, _KER, (1, 1), ((0, 0), (0, 0)),
                                                    (2, 2), (1, 1), _DN), (1, 397, 393, 3)),
    ("transposed", lambda: C.conv_general_dilated(
        _IMG, np.rot90(np.rot90(_KER, axes=(0, 1)), axes=(0, 1)), (1, 1), ((2, 1), (2, 1)),
        (2, 2), (1, 1), C.conv_dimension_numbers(_IMG.shape, _KER.shape, _DN)),
     (1, 400, 396, 3)),
    ("conv_nchw", lambda: C.conv(np.transpose(_IMG, [0, 3, 1, 2]),
                                 np.transpose(_KER, [3, 2, 0, 1]), (1, 1), "SAME"),
     (1, 3, 200, 198)),
    ("general_padding", lambda: C.conv_with_general_padding(
        np.transpose(_IMG, [0, 3, 1, 2]), np.transpose(_KER, [2, 3, 0, 1]), (1, 1),
        ((2, 2), (2, 2)), (1, 1), (1, 1)), (1, 3, 202, 200)),
    ("1d", lambda: C.conv_general_dilated(np.zeros((1, 200, 2), np.float32),
                                          np.ones((3, 2, 2), np.float32), (1,), "SAME", (1,),
                                          (1,), ("NWC", "WIO", "NWC")), (1, 200, 2)),
    ("3d", lambda: C.conv_general_dilated(np.zeros((1, 30, 30, 30, 1), np.float32),
                                          np.ones((3, 3, 3, 1, 1), np.float32), (1, 1, 1),
                                          "SAME", (1, 1, 1), (1, 1, 1),
                                          ("NHWDC", "HWDIO", "NHWDC")), (1, 30, 30, 30, 1)),
]


@pytest.mark.parametrize("fun,shape", [pytest.param(f, s, id=n) for n, f, s in ORACLE])
def test_output_shape_oracle(fun, shape):
  assert make_jaxpr(fun)().out_avals[0].shape == shape
  out = fun()
  assert out.shape == shape and out.dtype == np.float32


def test_oracle_values_edge_kernel():
  # The SAME convolution of the seed's image with its edge kernel, against the reference.
  dn = C.conv_dimension_numbers(_IMG.shape, _KER.shape, _DN)
  out = C.conv_general_dilated(_IMG, _KER, (1, 1), "SAME", (1, 1), (1, 1), dn)
  expected = ref.conv_general_dilated(_IMG, _KER, (1, 1), [(1, 1), (1, 1)], dimension_numbers=dn)
  tu.assert_close(out, expected, f32, 1e-5)


# =============================================================================
# conv_general_dilated against the loop-based reference
# =============================================================================

# (name, lhs shape, rhs shape, strides, padding, lhs_dilation, rhs_dilation, dimension
# numbers, feature_group_count, batch_group_count)
CONV_CASES = [
    ("nchw_valid", (2, 3, 6, 5), (4, 3, 3, 2), (1, 1), "VALID", None, None, None, 1, 1),
    ("nchw_same_stride", (2, 3, 7, 6), (4, 3, 3, 3), (2, 3), "SAME", None, None, None, 1, 1),
    ("same_lower", (1, 2, 6, 5), (2, 2, 2, 4), (1, 1), "SAME_LOWER", None, None, None, 1, 1),
    ("explicit_negative_pad", (2, 3, 7, 6), (4, 3, 3, 2), (1, 2), ((2, -1), (-1, 3)), None,
     None, None, 1, 1),
    ("lhs_rhs_dilation", (1, 2, 5, 6), (3, 2, 2, 3), (2, 1), ((1, 2), (0, 1)), (2, 1), (1, 2),
     None, 1, 1),
    ("nhwc_hwio", (2, 6, 5, 3), (3, 2, 3, 4), (1, 1), "SAME", None, (2, 1),
     ("NHWC", "HWIO", "NHWC"), 1, 1),
    ("mixed_layouts", (5, 2, 6, 3), (4, 3, 2, 3), (1, 2), "VALID", None, None,
     ("WNHC", "OHWI", "CNHW"), 1, 1),
    ("feature_groups", (2, 6, 5, 5), (4, 3, 3, 3), (1, 1), "SAME", None, None, None, 2, 1),
    ("depthwise", (2, 4, 6, 5), (8, 1, 3, 2), (2, 1), ((1, 1), (0, 1)), None, (1, 2), None,
     4, 1),
    ("batch_groups", (4, 3, 6, 5), (6, 3, 2, 2), (1, 1), "VALID", None, None, None, 1, 2),
    ("batch_groups_nhwc", (6, 5, 4, 2), (2, 2, 2, 3), (2, 1), ((1, 0), (0, 1)), (1, 2), None,
     ("NHWC", "HWIO", "NHWC"), 1, 3),
    ("1d", (2, 3, 9), (2, 3, 4), (2,), ((1, 2),), (2,), (1,), None, 1, 1),
    ("3d", (1, 2, 4, 5, 3), (3, 2, 2, 2, 2), (1, 2, 1), "SAME", None, None, None, 1, 1),
    ("empty_output", (1, 2, 2, 2), (1, 2, 3, 3), (1, 1), "VALID", None, None, None, 1, 1),
]


def _conv_fun(strides, padding, lhs_dil, rhs_dil, dn, fgc, bgc, **kw):
  def f(lhs, rhs):
    return C.conv_general_dilated(lhs, rhs, strides, padding, lhs_dil, rhs_dil, dn, fgc, bgc,
                                  **kw)
  return f


def _conv_reference(lhs_shape, rhs_shape, strides, padding, lhs_dil, rhs_dil, dn, fgc, bgc,
                    **kw):
  dnums = C.conv_dimension_numbers(lhs_shape, rhs_shape, dn)
  if isinstance(padding, str):
    lhs_sp = np.take(lhs_shape, dnums.lhs_spec)[2:]
    k_sp = C._dilate_shape(np.take(rhs_shape, dnums.rhs_spec)[2:], rhs_dil or
                           (1,) * len(lhs_sp))
    padding = C.padtype_to_pads(lhs_sp, k_sp, strides, padding)

  def r(lhs, rhs):
    return ref.conv_general_dilated(lhs, rhs, strides, padding, lhs_dil, rhs_dil, dnums, fgc,
                                    bgc, **kw)
  return r


@pytest.mark.parametrize("case", [pytest.param(c[1:], id=c[0]) for c in CONV_CASES])
def test_conv_general_dilated(case):
  lhs_shape, rhs_shape, *params = case
  args = [_rand(lhs_shape, seed=1), _rand(rhs_shape, seed=2)]
  tu.check_primitive(_conv_fun(*params), _conv_reference(lhs_shape, rhs_shape, *params), args,
                     tol=2e-4)


@pytest.mark.parametrize("dtype", [np.dtype(np.int32), np.dtype(np.int8),
                                   np.dtype(np.float16), bf16, np.dtype(np.complex64)],
                         ids=lambda d: np.dtype(d).name)
def test_conv_dtypes(dtype):
  params = ((2, 1), ((1, 0), (1, 1)), None, None, None, 1, 1)
  lhs_shape, rhs_shape = (2, 2, 5, 4), (3, 2, 2, 2)
  args = [_rand(lhs_shape, dtype, 1), _rand(rhs_shape, dtype, 2)]
  tol = {bf16: 1e-1, np.dtype(np.float16): 1e-2, np.dtype(np.complex64): 1e-4}
  tu.check_primitive(_conv_fun(*params), _conv_reference(lhs_shape, rhs_shape, *params), args,
                     tol=tol)


@pytest.mark.parametrize("dtype,pref", [(np.int8, np.int32), (np.float16, np.float32),
                                        (np.int16, np.float32)])
def test_conv_preferred_element_type(dtype, pref):
  params = ((1, 1), "VALID", None, None, None, 1, 1)
  lhs_shape, rhs_shape = (1, 2, 4, 4), (2, 2, 3, 3)
  args = [_rand(lhs_shape, dtype, 1), _rand(rhs_shape, dtype, 2)]
  out = tu.check_primitive(_conv_fun(*params, preferred_element_type=pref),
                           _conv_reference(lhs_shape, rhs_shape, *params,
                                           preferred_element_type=pref), args, tol=1e-2)
  assert out.dtype == np.dtype(pref)


def test_conv_jaxpr_params():
  jaxpr = make_jaxpr(lambda x, w: C.conv(x, w, (1, 2), "SAME"))(
      np.zeros((1, 2, 5, 5), np.float32), np.zeros((3, 2, 3, 3), np.float32))
  text = str(jaxpr)
  assert "conv_general_dilated[" in text
  for piece in ("window_strides=(1, 2)", "padding=((1, 1), (1, 1))", "lhs_dilation=(1, 1)",
                "feature_group_count=1", "batch_group_count=1",
                "dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 1, 2, 3)"):
    assert piece in text, (piece, text)


def test_conv_precision():
  from tracejax._src.lax.dot import Precision
  x, w = _rand((1, 2, 4, 4), seed=1), _rand((3, 2, 2, 2), seed=2)
  base = C.conv(x, w, (1, 1), "VALID")
  for precision in ("highest", Precision.HIGH, (Precision.HIGHEST, Precision.DEFAULT)):
    tu.assert_close(C.conv(x, w, (1, 1), "VALID", precision=precision), base, f32, 1e-5)
  assert "precision=(Precision.HIGHEST, Precision.HIGHEST)" in str(
      make_jaxpr(lambda x: C.conv(x, w, (1, 1), "VALID", precision="highest"))(x))


# ---- conv_transpose ----

@pytest.mark.parametrize("padding,spatial", [("SAME", (8, 6)), ("VALID", (7, 9))])
@pytest.mark.parametrize("strides", [(1, 1), (2, 2), (2, 1)])
def test_conv_transpose_is_conv_gradient(padding, spatial, strides):
  # With transpose_kernel, conv_transpose is the input gradient of the convolution.
  dn = ("NHWC", "HWIO", "NHWC")
  x = _rand((2,) + spatial + (3,), seed=1)
  k = _rand((3, 3, 3, 4), seed=2)
  y, pullback = vjp(lambda x: C.conv_general_dilated(x, k, strides, padding,
                                                     dimension_numbers=dn), x)
  ct = _rand(y.shape, seed=3)
  out = C.conv_transpose(ct, k, strides, padding, dimension_numbers=dn, transpose_kernel=True)
  assert out.shape == x.shape
  tu.assert_close(out, pullback(ct)[0], f32, 1e-4)
  assert out.shape == C.conv_transpose_shape_tuple(ct.shape, (3, 3, 4, 3), strides, padding,
                                                   dn)


def test_conv_transpose_explicit_padding_and_defaults():
  # Explicit pairs pad the stride-dilated input; the default layout is NHWC/HWIO.
  x, k = _rand((1, 4, 3, 2), seed=1), _rand((2, 3, 2, 3), seed=2)
  out = C.conv_transpose(x, k, (2, 3), ((1, 0), (2, 2)), rhs_dilation=(1, 2))
  dn = C.conv_dimension_numbers(x.shape, k.shape, ("NHWC", "HWIO", "NHWC"))
  expected = ref.conv_general_dilated(x, k, (1, 1), ((1, 0), (2, 2)), (2, 3), (1, 2), dn)
  tu.assert_close(out, expected, f32, 1e-4)
  out1d = C.conv_transpose(_rand((2, 5, 3)), _rand((3, 3, 4)), (2,), "SAME")
  assert out1d.shape == (2, 10, 4)


# ---- errors: raised by the wrapper or the shape rule, before anything is compiled ----

_l4 = np.zeros((2, 4, 5, 5), np.float32)
_k4 = np.zeros((6, 2, 3, 3), np.float32)

CONV_ERRORS = [
    ("rank", lambda: C.conv(_l4, np.zeros((6, 4, 3), np.float32), (1, 1), "SAME"), TypeError,
     "ndim to be equal"),
    ("features", lambda: C.conv(_l4, _k4, (1, 1), "SAME"), ValueError,
     "rhs input feature dimension"),
    ("group_divides", lambda: C.conv_general_dilated(_l4, _k4, (1, 1), "SAME",
                                                     feature_group_count=3), ValueError,
     "must divide lhs feature"),
    ("group_out", lambda: C.conv_general_dilated(_l4, np.zeros((3, 1, 3, 3), np.float32),
                                                 (1, 1), "SAME", feature_group_count=4),
     ValueError, "multiple of feature_group_count"),
    ("batch_group", lambda: C.conv_general_dilated(_l4, np.zeros((6, 4, 3, 3), np.float32),
                                                   (1, 1), "SAME", batch_group_count=4),
     ValueError, "batch_group_count must divide"),
    ("both_groups", lambda: C.conv_general_dilated(_l4, np.zeros((4, 2, 3, 3), np.float32),
                                                   (1, 1), "SAME", feature_group_count=2,
                                                   batch_group_count=2),
     ValueError, "At most one"),
    ("string_pad_lhs_dilation", lambda: C.conv_general_dilated(
        _l4, np.zeros((6, 4, 3, 3), np.float32), (1, 1), "SAME", (2, 2)), ValueError,
     "String padding is not implemented"),
    ("bad_padding", lambda: C.conv_general_dilated(_l4, np.zeros((6, 4, 3, 3), np.float32),
                                                   (1, 1), ((1, 1),) * 3), ValueError,
     "padding must have 2 entries"),
    ("strides_len", lambda: C.conv(_l4, np.zeros((6, 4, 3, 3), np.float32), (1,), "SAME"),
     ValueError, "window_strides must have one entry"),
    ("dtypes", lambda: C.conv(_l4, np.zeros((6, 4, 3, 3), np.int32), (1, 1), "SAME"),
     TypeError, "same dtypes"),
    ("padding_string", lambda: C.conv(_l4, np.zeros((6, 4, 3, 3), np.float32), (1, 1),
                                      "FULL"), ValueError, "Unknown padding type"),
    ("negative_pad", lambda: C.conv_general_dilated(_l4, np.zeros((6, 4, 3, 3), np.float32),
                                                    (1, 1), ((-4, -2), (0, 0))), ValueError,
     "Negative padding"),
]


@pytest.mark.parametrize("fn,exc,match", [pytest.param(f, e, m, id=n)
                                          for n, f, e, m in CONV_ERRORS])
def test_conv_errors(fn, exc, match, monkeypatch):
  compiled = []
  real = dispatch._compile_primitive

  def spy(prim, avals, params):
    out = real(prim, avals, params)
    compiled.append(prim.name)
    return out
  monkeypatch.setattr(dispatch, "_compile_primitive", spy)
  with pytest.raises(exc, match=match):
    fn()
  with pytest.raises(exc, match=match):
    jit(fn)()
  assert not compiled


# ---- derivatives with respect to both operands ----

CONV_GRAD_CASES = [
    ("plain", (2, 3, 4, 5), (2, 3, 2, 3), ((1, 1), "VALID", None, None, None, 1, 1), 2),
    ("strided_padded_dilated", (1, 2, 5, 6), (3, 2, 3, 2),
     ((2, 1), ((1, 2), (-1, 1)), (1, 2), (2, 1), None, 1, 1), 2),
    ("nhwc_same_stride", (2, 5, 4, 2), (2, 3, 2, 3),
     ((2, 2), "SAME", None, None, ("NHWC", "HWIO", "NHWC"), 1, 1), 1),
    ("feature_groups", (2, 4, 5, 4), (6, 2, 2, 3),
     ((1, 2), ((1, 0), (0, 1)), None, (1, 2), None, 2, 1), 2),
    ("batch_groups", (4, 2, 5, 4), (6, 2, 3, 2),
     ((2, 1), ((0, 1), (1, 1)), (1, 2), None, None, 1, 2), 2),
    ("1d", (2, 2, 7), (3, 2, 3), ((2,), ((1, 2),), (2,), (1,), None, 1, 1), 1),
    ("3d", (1, 2, 3, 4, 3), (2, 2, 2, 2, 2), ((1, 2, 1), "SAME", None, None, None, 1, 1), 1),
]


@pytest.mark.parametrize("lhs_shape,rhs_shape,params,order",
                         [pytest.param(*c[1:], id=c[0]) for c in CONV_GRAD_CASES])
def test_conv_grads(x64, lhs_shape, rhs_shape, params, order):
  # Order 2 also checks the transposes of the transposes (strides and lhs
  # dilation swap roles, feature and batch groups trade places).
  check_grads(_conv_fun(*params), (_r64(*lhs_shape, seed=1), _r64(*rhs_shape, seed=2)),
              order=order, modes=("fwd", "rev"))


def test_conv_grad_of_convnet(x64):
  # The gradient of a small convnet (two convolutions, a nonlinearity, a sum) with
  # respect to both kernels, against finite differences.
  x = _r64(2, 5, 5, 2)

  def loss(k1, k2):
    dn = ("NHWC", "HWIO", "NHWC")
    h = E.tanh(C.conv_general_dilated(x, k1, (1, 1), "SAME", dimension_numbers=dn))
    y = C.conv_general_dilated(h, k2, (2, 2), "VALID", dimension_numbers=dn)
    return (y * y).sum()

  check_grads(loss, (_r64(3, 3, 2, 3, seed=1), _r64(2, 2, 3, 2, seed=2)), order=1,
              modes=("rev",))


def test_conv_preferred_element_type_grad():
  x, w = _rand((1, 2, 4, 4), np.float16, 1), _rand((2, 2, 3, 3), np.float16, 2)
  f = lambda x, w: C.conv(x, w, (1, 1), "SAME", preferred_element_type=np.float32).sum()
  gx, gw = grad(f, (0, 1))(x, w)
  assert gx.dtype == np.float16 and gw.dtype == np.float16
  gx32, gw32 = grad(lambda x, w: C.conv(x, w, (1, 1), "SAME").sum(), (0, 1))(
      x.astype(np.float32), w.astype(np.float32))
  tu.assert_close(gx, gx32.astype(np.float16), np.float16, 2e-2)
  tu.assert_close(gw, gw32.astype(np.float16), np.float16, 2e-2)


# ---- vmap: one convolution, the vmapped axis folded into batch or features ----

CONV_VMAP_CASES = [
    ("plain", (2, 3, 5, 4), (4, 3, 2, 3), ((2, 1), ((1, 2), (0, 1)), (1, 2), (2, 1), None,
                                          1, 1)),
    ("nhwc", (2, 5, 4, 3), (2, 2, 3, 4), ((1, 1), "SAME", None, None,
                                          ("NHWC", "HWIO", "NHWC"), 1, 1)),
    ("feature_groups", (2, 4, 5, 4), (6, 2, 3, 2), ((1, 1), "VALID", None, None, None, 2, 1)),
    ("batch_groups", (4, 3, 5, 4), (6, 3, 2, 2), ((1, 2), "VALID", None, None, None, 1, 2)),
]


@pytest.mark.parametrize("lhs_shape,rhs_shape,params",
                         [pytest.param(*c[1:], id=c[0]) for c in CONV_VMAP_CASES])
@pytest.mark.parametrize("axes", [(0, 0), (1, None), (None, 0), (None, 3), (2, 1), (-1, None)],
                         ids=str)
def test_conv_vmap(lhs_shape, rhs_shape, params, axes):
  fun = _conv_fun(*params)
  size = 3
  args = [_batched(lhs_shape, axes[0], size, seed=1), _batched(rhs_shape, axes[1], size, seed=2)]
  out = vmap(fun, in_axes=axes)(*args)
  tu.assert_close(out, _loop(fun, args, axes, size), f32, 1e-4)
  text = str(make_jaxpr(vmap(fun, in_axes=axes))(*args))
  assert text.count("conv_general_dilated") == 1 and "while" not in text and "scan" not in text


def test_conv_vmap_of_grad():
  # Per-example kernel gradients: vmap of the transposes (batched cotangent and input).
  w = _rand((3, 2, 2, 2), seed=2)
  xs = _rand((4, 1, 2, 5, 5), seed=1)
  f = lambda w, x: (C.conv(x, w, (1, 1), "SAME") ** 2).sum()
  out = vmap(grad(f), in_axes=(None, 0))(w, xs)
  expected = np.stack([np.asarray(grad(f)(w, xs[i])) for i in range(4)])
  tu.assert_close(out, expected, f32, 1e-3)


def test_conv_jit_matches_eager():
  fun = _conv_fun((2, 1), ((1, 2), (0, 1)), (1, 2), (2, 1), ("NHWC", "HWIO", "NHWC"), 1, 1)
  args = [_rand((2, 5, 4, 3), seed=1), _rand((2, 2, 3, 4), seed=2)]
  tu.assert_close(jit(fun)(*args), fun(*args), f32, 1e-5)


# =============================================================================
# reduce_window
# =============================================================================

# (name, window, strides, padding, base_dilation, window_dilation) on a (5, 7) operand
WINDOWS = [
    ("pool2x2", (2, 2), (2, 2), "VALID", None, None),
    ("same", (3, 2), (1, 1), "SAME", None, None),
    ("strided_padded", (2, 3), (2, 1), ((1, 0), (2, 1)), None, None),
    ("negative_padding", (2, 2), (1, 2), ((-1, 1), (0, -2)), None, None),
    ("dilated", (2, 3), (1, 2), ((1, 1), (0, 2)), (2, 1), (1, 2)),
]

MONOIDS = [("sum", E.add, 0), ("max", E.max, -np.inf), ("min", E.min, np.inf)]


def _explicit(padding, shape, window, strides, wdil):
  if isinstance(padding, str):
    return C.padtype_to_pads(shape, C._dilate_shape(window, wdil or (1,) * len(window)),
                             strides, padding)
  return padding


@pytest.mark.parametrize("name,op,init", MONOIDS, ids=[m[0] for m in MONOIDS])
@pytest.mark.parametrize("window", [pytest.param(w[1:], id=w[0]) for w in WINDOWS])
def test_reduce_window_monoid(name, op, init, window):
  dims, strides, padding, bdil, wdil = window
  x = _rand((5, 7))
  fun = lambda x: W.reduce_window(x, init, op, dims, strides, padding, bdil, wdil)
  pads = _explicit(padding, x.shape, dims, strides, wdil)
  tu.check_primitive(fun, lambda x: ref.reduce_window(x, None, name, dims, strides, pads, bdil,
                                                      wdil), [x])
  assert f"reduce_window_{name}" in str(make_jaxpr(fun)(x))


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.float16, bf16],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name,op,init", MONOIDS, ids=[m[0] for m in MONOIDS])
def test_reduce_window_dtypes(dtype, name, op, init):
  # The identity as a value of the operand's dtype selects the monoid (for
  # integers: the smallest or largest integer, not an infinity).
  init = np.array(ref._MONOIDS[name][1](dtype), dtype)
  x = _rand((4, 5), dtype)
  fun = lambda x: W.reduce_window(x, init, op, (2, 2), (1, 2), ((1, 0), (0, 1)))
  tu.check_primitive(fun, lambda x: ref.reduce_window(x, None, name, (2, 2), (1, 2),
                                                      ((1, 0), (0, 1))), [x],
                     tol={bf16: 3e-2, np.dtype(np.float16): 3e-3})
  assert f"reduce_window_{name}" in str(make_jaxpr(fun)(x))


def test_reduce_window_general_computation():
  # A computation without a primitive of its own: traced on scalars into reduce_window_p.
  x = _rand((5, 6), kind="positive")
  comp = lambda a, b: E.mul(a, b)
  fun = lambda x: W.reduce_window(x, np.float32(1), comp, (2, 3), (1, 2), "SAME", None, (2, 1))
  pads = C.padtype_to_pads(x.shape, (3, 3), (1, 2), "SAME")
  tu.check_primitive(fun, lambda x: ref.reduce_window(x, 1.0, np.multiply, (2, 3), (1, 2),
                                                      pads, None, (2, 1)), [x], tol=1e-5)
  text = str(make_jaxpr(fun)(x))
  assert "reduce_window[" in text and "reduce_window_sum" not in text


def test_reduce_window_non_identity_init():
  # lax.add with a non-zero init is not the sum monoid: each window starts at init.
  x = _rand((4, 4))
  out = W.reduce_window(x, np.float32(10), E.add, (2, 2), (2, 2), "VALID")
  tu.assert_close(out, ref.reduce_window(x, 10.0, np.add, (2, 2), (2, 2), ((0, 0), (0, 0))),
                  f32, 1e-5)
  assert "reduce_window_sum" not in str(make_jaxpr(
      lambda x: W.reduce_window(x, np.float32(10), E.add, (2, 2), (2, 2), "VALID"))(x))


def test_reduce_window_variadic():
  # A pytree of operands: argmax over each window, as (value, index) pairs.
  x = _rand((6, 5))
  idx = np.arange(30, dtype=np.int32).reshape(6, 5)

  def argmax_comp(a, b):
    (va, ia), (vb, ib) = a, b
    pick = E.ge(va, vb)
    return (E.select(pick, va, vb), E.select(pick, ia, ib))

  fun = lambda x, i: W.reduce_window((x, i), (np.float32(-np.inf), np.int32(-1)), argmax_comp,
                                     (3, 2), (3, 1), "VALID")
  vals, where = fun(x, idx)
  expected = ref.reduce_window(x, None, "max", (3, 2), (3, 1), ((0, 0), (0, 0)))
  tu.assert_close(vals, expected, f32)
  np.testing.assert_array_equal(x.reshape(-1)[np.asarray(where)], expected)
  jv, jw = jit(fun)(x, idx)
  tu.assert_close(jv, vals, f32)
  np.testing.assert_array_equal(np.asarray(jw), np.asarray(where))


def test_reduce_window_stax_pools():
  # The pooling layers of stax: max pool and average pool of an NHWC batch.
  x = _rand((2, 6, 6, 3))
  mx = W.reduce_window(x, -np.inf, E.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
  tu.assert_close(mx, x.reshape(2, 3, 2, 3, 2, 3).max(axis=(2, 4)), f32)
  s = W.reduce_window(x, 0., E.add, (1, 3, 3, 1), (1, 1, 1, 1), "SAME")
  ones = W.reduce_window(np.ones((1, 6, 6, 1), np.float32), 0., E.add, (1, 3, 3, 1),
                         (1, 1, 1, 1), "SAME")
  assert s.shape == (2, 6, 6, 3) and float(ones[0, 0, 0, 0]) == 4.0


def test_reduce_window_traced_init_under_jit():
  x = _rand((4, 6))
  f = jit(lambda x, init: W.reduce_window(x, init, E.max, (2, 2), (2, 2), "VALID"))
  tu.assert_close(f(x, np.float32(0.5)),
                  np.maximum(ref.reduce_window(x, None, "max", (2, 2), (2, 2),
                                               ((0, 0), (0, 0))), 0.5), f32)


WINDOW_ERRORS = [
    ("rank", lambda: W.reduce_window(np.zeros((3, 3), np.float32), 0., E.add, (2,), (1,),
                                     "VALID"), TypeError, "wrong number of window_dimensions"),
    ("zero_window", lambda: W.reduce_window(np.zeros((3, 3), np.float32), 0., E.add, (0, 2),
                                            (1, 1), "VALID"), TypeError, "strictly positive"),
    ("tree", lambda: W.reduce_window((np.zeros(3, np.float32),), 0., E.add, (2,), (1,),
                                     "VALID"), ValueError, "same tree structure"),
    ("padding", lambda: W.reduce_window(np.zeros((3,), np.float32), 0., E.add, (2,), (1,),
                                        "FULL"), ValueError, "Unknown padding type"),
    ("dtype", lambda: W.reduce_window(np.zeros((3,), np.float32), np.int32(1), E.mul, (2,),
                                      (1,), "VALID"), TypeError, "inconsistent dtypes"),
    # (a Python scalar keeps its default dtype, as in JAX: 1. is float32, not int32)
    ("py_scalar_dtype", lambda: W.reduce_window(np.zeros((3,), np.int32), 1., E.mul, (2,),
                                                (1,), "VALID"), TypeError,
     r"inconsistent dtypes .*\[dtype\('int32'\)\] and init_value dtypes \[dtype\('float32'\)\]"),
    ("cumsum_axis", lambda: W.cumsum(np.zeros((3,), np.float32), axis=1), ValueError,
     "out-of-bounds"),
    ("cumsum_bool", lambda: W.cumsum(np.zeros((3,), bool)), TypeError, "does not accept"),
    ("cumlogsumexp_int", lambda: W.cumlogsumexp(np.zeros((3,), np.int32)), TypeError,
     "does not accept"),
]


@pytest.mark.parametrize("fn,exc,match", [pytest.param(f, e, m, id=n)
                                          for n, f, e, m in WINDOW_ERRORS])
def test_window_errors(fn, exc, match):
  with pytest.raises(exc, match=match):
    fn()
  with pytest.raises(exc, match=match):
    jit(fn)()


# ---- derivatives ----

WINDOW_GRAD_CASES = [
    ("sum_pool", lambda x: W.reduce_window(x, 0., E.add, (2, 2), (2, 2), "VALID"), 2),
    ("sum_padded_dilated", lambda x: W.reduce_window(x, 0., E.add, (2, 3), (2, 1),
                                                     ((1, 0), (0, 2)), (1, 2), (2, 1)), 2),
    ("sum_negative_padding", lambda x: W.reduce_window(x, 0., E.add, (2, 2), (1, 2),
                                                       ((-1, 1), (0, -1))), 2),
    ("max_pool", lambda x: W.reduce_window(x, -np.inf, E.max, (2, 2), (2, 2), "VALID"), 2),
    ("max_overlapping_padded", lambda x: W.reduce_window(x, -np.inf, E.max, (2, 3), (2, 1),
                                                         ((1, 0), (0, 2))), 2),
    ("max_same", lambda x: W.reduce_window(x, -np.inf, E.max, (3, 3), (1, 1), "SAME"), 2),
    ("min_base_dilation", lambda x: W.reduce_window(x, np.inf, E.min, (2, 2), (1, 2), "SAME",
                                                    (2, 1)), 2),
]


@pytest.mark.parametrize("fun,order", [pytest.param(f, o, id=n)
                                       for n, f, o in WINDOW_GRAD_CASES])
def test_reduce_window_grads(x64, fun, order):
  check_grads(fun, (_r64(5, 6),), order=order, modes=("fwd", "rev"))


def test_reduce_window_general_jvp(x64):
  # The general primitive differentiates through its computation (forward mode).
  comp = lambda a, b: a * b
  fun = lambda x: W.reduce_window(x, 1., comp, (2, 2), (1, 2), ((1, 0), (0, 1)))
  check_grads(fun, (_r64(4, 5),), order=2, modes=("fwd",))


def test_max_pool_gradient_is_select_and_scatter():
  # The max-pool gradient scatters each cotangent to its window's argmax.
  x = _rand((6, 7))
  pool = lambda x: W.reduce_window(x, -np.inf, E.max, (2, 3), (2, 2), ((0, 0), (1, 0)))
  y, pullback = vjp(pool, x)
  ct = _rand(y.shape, seed=1)
  expected = ref.select_and_scatter_add(ct, x, "ge", (2, 3), (2, 2), ((0, 0), (1, 0)))
  tu.assert_close(pullback(ct)[0], expected, f32, 1e-6)
  text = str(make_jaxpr(lambda x, c: vjp(pool, x)[1](c))(x, ct))
  assert "select_and_scatter_add" in text
  # The JVP gathers the tangent at each window's argmax.
  t = _rand(x.shape, seed=2)
  _, t_out = jvp(pool, (x,), (t,))
  assert "select_and_gather_add" in str(make_jaxpr(lambda x, t: jvp(pool, (x,), (t,)))(x, t))
  gathered = W._select_and_gather_add(t, x, E.ge_p, (2, 3), (2, 2), ((0, 0), (1, 0)), None,
                                      None)
  # <scatter(ct), t> == <ct, gather(t)>: the two are each other's transpose.
  np.testing.assert_allclose(np.sum(expected * t), np.sum(ct * np.asarray(gathered)),
                             rtol=1e-5)
  tu.assert_close(t_out, gathered, f32)


def test_min_pool_gradient():
  x = _rand((5, 4))
  pool = lambda x: W.reduce_window(x, np.inf, E.min, (2, 2), (1, 1), "VALID")
  y, pullback = vjp(pool, x)
  ct = _rand(y.shape, seed=1)
  expected = ref.select_and_scatter_add(ct, x, "le", (2, 2), (1, 1), ((0, 0), (0, 0)))
  tu.assert_close(pullback(ct)[0], expected, f32, 1e-6)


# ---- vmap ----

WINDOW_VMAP_CASES = [
    ("sum", lambda x: W.reduce_window(x, 0., E.add, (2, 2), (1, 2), ((1, 0), (0, 1)),
                                      (1, 2))),
    ("max", lambda x: W.reduce_window(x, -np.inf, E.max, (2, 3), (2, 1), "SAME")),
    ("min", lambda x: W.reduce_window(x, np.inf, E.min, (3, 2), (1, 1), "VALID", None,
                                      (1, 2))),
    ("general", lambda x: W.reduce_window(x, np.float32(1), lambda a, b: a * b, (2, 2),
                                          (1, 1), "VALID")),
    ("max_pool_grad", lambda x: grad(lambda x: W.reduce_window(
        x, -np.inf, E.max, (2, 2), (2, 1), "VALID").sum())(x)),
    ("max_pool_jvp", lambda x: jvp(lambda x: W.reduce_window(
        x, -np.inf, E.max, (2, 2), (2, 1), "VALID"), (x,), (x * x,))[1]),
    ("sum_pool_grad", lambda x: grad(lambda x: (W.reduce_window(
        x, 0., E.add, (2, 2), (2, 1), "SAME") ** 2).sum())(x)),
]


@pytest.mark.parametrize("fun", [pytest.param(f, id=n) for n, f in WINDOW_VMAP_CASES])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_reduce_window_vmap(fun, axis):
  x = _batched((4, 5), axis, 3)
  tu.assert_close(vmap(fun, in_axes=axis)(x), _loop(fun, [x], [axis], 3), f32, 1e-5)


def test_select_and_scatter_add_vmap_unbatched_operand():
  # vmap over cotangents only: the operand (which picks positions) is shared.
  x = _rand((4, 6))
  pool = lambda x: W.reduce_window(x, -np.inf, E.max, (2, 2), (2, 2), "VALID")
  _, pullback = vjp(pool, x)
  cts = _rand((3, 2, 3), seed=1)
  out = vmap(lambda c: pullback(c)[0])(cts)
  tu.assert_close(out, np.stack([np.asarray(pullback(c)[0]) for c in cts]), f32)


# =============================================================================
# Cumulative reductions
# =============================================================================

CUMULATIVE = [("cumsum", W.cumsum), ("cumprod", W.cumprod), ("cummax", W.cummax),
              ("cummin", W.cummin), ("cumlogsumexp", W.cumlogsumexp)]


@pytest.mark.parametrize("name,op", CUMULATIVE, ids=[c[0] for c in CUMULATIVE])
@pytest.mark.parametrize("axis,reverse", [(0, False), (1, True), (-1, False), (2, True)])
def test_cumulative(name, op, axis, reverse):
  x = _rand((3, 4, 5), kind="small")
  fun = lambda x: op(x, axis=axis, reverse=reverse)
  tu.check_primitive(fun, lambda x: getattr(ref, name)(x, axis % 3, reverse), [x], tol=1e-5)


CUMULATIVE_DTYPES = [(name, op, np.dtype(dt)) for name, op in CUMULATIVE[:4]
                     for dt in (np.int32, np.uint8, np.float16, bf16, np.complex64)
                     if not (name in ("cummax", "cummin") and dt == np.complex64)]


@pytest.mark.parametrize("name,op,dtype", [pytest.param(n, o, d, id=f"{n}-{d.name}")
                                           for n, o, d in CUMULATIVE_DTYPES])
def test_cumulative_dtypes(name, op, dtype):
  kind = "small" if name == "cumprod" and np.dtype(dtype).kind in "fcV" else "default"
  x = _rand((7,), dtype, kind=kind)
  tu.check_primitive(lambda x: op(x), lambda x: getattr(ref, name)(x, 0, False), [x],
                     tol={bf16: 5e-2, np.dtype(np.float16): 5e-3})


def test_cumulative_edge_shapes():
  for op in (W.cumsum, W.cummax, W.cumprod, W.cumlogsumexp):
    assert op(np.zeros((0, 3), np.float32)).shape == (0, 3)
    np.testing.assert_array_equal(np.asarray(op(np.ones((1,), np.float32))), [1.])
  x = np.array([1., np.inf, -np.inf, 2.], np.float32)
  np.testing.assert_allclose(np.asarray(W.cumlogsumexp(x)), np.logaddexp.accumulate(x))
  np.testing.assert_allclose(np.asarray(W.cumlogsumexp(np.full((3,), -np.inf, np.float32))),
                             [-np.inf] * 3)


CUMULATIVE_GRADS = [(name, op, False, 2) for name, op in CUMULATIVE] + [
    ("cumsum", W.cumsum, True, 1), ("cumprod", W.cumprod, True, 1),
    ("cumlogsumexp", W.cumlogsumexp, True, 1)]


@pytest.mark.parametrize("op,reverse,order", [pytest.param(*c[1:], id=f"{c[0]}-{c[2]}")
                                              for c in CUMULATIVE_GRADS])
def test_cumulative_grads(x64, op, reverse, order):
  x = _r64(3, 5)
  check_grads(lambda x: op(x, axis=1, reverse=reverse), (x,), order=order,
              modes=("fwd", "rev"))


def test_cumsum_transpose_is_reverse_cumsum():
  x = _rand((6,))
  text = str(make_jaxpr(lambda x, c: vjp(lambda x: W.cumsum(x), x)[1](c))(x, x))
  assert "reverse=True" in text
  _, pullback = vjp(lambda x: W.cumsum(x, reverse=True), x)
  tu.assert_close(pullback(x)[0], np.cumsum(x), f32, 1e-5)


def test_cumulative_grads_with_zeros_and_ties(x64):
  # cumprod through zeros needs no division; cummax splits ties but each output's
  # derivative still sums to one, and an element never the max gets nothing.
  g = jit(grad(lambda x: W.cumprod(x).sum()))(np.array([2., 0., 3., 0., 5.]))
  np.testing.assert_allclose(np.asarray(g), [1., 2. + 2 * 3, 0., 0., 0.])
  g = np.asarray(jit(grad(lambda x: W.cummax(x).sum()))(np.array([1., 3., 3., 2.])))
  np.testing.assert_allclose([g[0], g[1] + g[2], g[3]], [1., 3., 0.])


@pytest.mark.parametrize("name,op", CUMULATIVE, ids=[c[0] for c in CUMULATIVE])
@pytest.mark.parametrize("in_axis,axis", [(0, 0), (1, 0), (2, -1), (0, 1)])
def test_cumulative_vmap(name, op, in_axis, axis):
  x = _batched((4, 5), in_axis, 3)
  fun = lambda x: op(x, axis=axis, reverse=axis == 0)
  tu.assert_close(vmap(fun, in_axes=in_axis)(x), _loop(fun, [x], [in_axis], 3), f32, 1e-5)


def test_cumulative_jit_matches_eager_and_vmap_of_grad():
  x = _rand((3, 6), kind="small")
  for _, op in CUMULATIVE:
    f = lambda x: op(x, axis=1)
    tu.assert_close(jit(f)(x), f(x), f32, 1e-6)
  g = jit(grad(lambda x: W.cumprod(x).sum()))
  tu.assert_close(jit(vmap(g))(x), np.stack([np.asarray(g(r)) for r in x]), f32, 1e-5)
