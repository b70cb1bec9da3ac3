"""The ahead-of-time stages of a jitted function, and jit's compile diagnostics.

`jit(f).trace(*args)` returns a `Traced` (the jaxpr, input and output types),
`.lower()` a `Lowered` (the StableHLO module), `.compile()` a `Compiled` (an XLA
executable, callable with arguments of the types it was compiled for). These are
the stages of today's JAX (`jax.stages`); `jit.py` only constructs them.

The same module holds what jit logs about its work, under logger names of the
`jax` hierarchy (so handlers written for JAX see them): tracing, lowering and
compile times (WARNING with `jax_log_compiles`, else DEBUG) and, with
`jax_explain_cache_misses`, why a call had to trace again.
"""
import abc
import inspect
import logging
import os
import sys
import time

import numpy as np

from tracejax._src import tree_util
from tracejax._src.config import config
from tracejax._src.core import avals as avals_mod
from tracejax._src.core.trace import Tracer
from tracejax._src import dispatch
from tracejax._src.interpreters import lowering
from tracejax._src.runtime import backend
from tracejax._src.runtime import sharding
from tracejax._src.runtime.array import Array

# ---- logging ----

_dispatch_logger = logging.getLogger("jax._src.dispatch")
_pxla_logger = logging.getLogger("jax._src.interpreters.pxla")
_pe_logger = logging.getLogger("jax._src.interpreters.partial_eval")


def _log_level():
  return logging.WARNING if config.jax_log_compiles else logging.DEBUG


def log_traced(name, seconds):
  """Log the time jit took to trace `name` ("Finished tracing f for jit in ... sec")."""
  level = _log_level()
  if _dispatch_logger.isEnabledFor(level):
    _dispatch_logger.log(level, "Finished tracing %s for jit in %.9f sec", name, seconds)


def lower_jaxpr(jaxpr, name, donated=None):
  """StableHLO text of a jitted function's jaxpr, with jit's lowering log messages."""
  level = _log_level()
  if _pxla_logger.isEnabledFor(level):
    in_avals = tuple(v.aval for v in jaxpr.invars)
    mapping = "(" + ", ".join(["UnspecifiedValue"] * len(in_avals)) + \
        ("," if len(in_avals) == 1 else "") + ")"
    _pxla_logger.log(level, "Compiling jit(%s) with global shapes and types %r. "
                     "Argument mapping: %s.", name, in_avals, mapping)
  t0 = time.perf_counter()
  text, _ = lowering.lower_jaxpr(jaxpr, name=f"jit_{name}", donated=donated)
  if _dispatch_logger.isEnabledFor(level):
    _dispatch_logger.log(level, "Finished jaxpr to MLIR module conversion jit(%s) in %.9f sec",
                         name, time.perf_counter() - t0)
  return text


# ---- argument descriptions ----

class ArgInfo:
  """The type of one argument leaf of a stage, and whether it is donated.

  >>> import numpy as np
  >>> info = ArgInfo(avals_mod.ShapedArray((2,), np.float32), False)
  >>> info.shape, info.dtype
  ((2,), dtype('float32'))
  """
  __slots__ = ("_aval", "donated")

  def __init__(self, aval, donated):
    self._aval, self.donated = aval, bool(donated)

  shape = property(lambda self: self._aval.shape)
  dtype = property(lambda self: self._aval.dtype)

  def __repr__(self):
    return f"ArgInfo(_aval={self._aval!r}, donated={self.donated})"

  def __eq__(self, other):
    return (type(other) is ArgInfo and self._aval == other._aval and
            self.donated == other.donated)

  def __hash__(self):
    return hash((self._aval, self.donated))


def leaf_names(sig, dyn_positions, dyn, dkw):
  """A readable name per flat argument leaf: the parameter name plus the path inside it.

  `dyn_positions[i]` is the position, among all positional arguments, of `dyn[i]`
  (static ones removed); `sig` is the function's signature or None.
  """
  params = list(sig.parameters.values()) if sig is not None else []
  names = []
  for pos, arg in zip(dyn_positions, dyn):
    base = f"args[{pos}]"
    if pos < len(params):
      p = params[pos]
      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
        base = p.name
      elif p.kind is p.VAR_POSITIONAL:
        base = f"{p.name}[{pos - params.index(p)}]"
    elif params and params[-1].kind is params[-1].VAR_POSITIONAL:
      base = f"{params[-1].name}[{pos - len(params) + 1}]"
    names += [base + tree_util.keystr(path) for path, _ in tree_util.tree_flatten_with_path(arg)[0]]
  for path, _ in tree_util.tree_flatten_with_path(dkw)[0]:
    k, rest = path[0], path[1:]
    names.append(str(getattr(k, "key", k)) + tree_util.keystr(rest))
  return names


def _shape_dtype_structs(out_tree, avals):
  # ShapeDtypeStruct lives in api.py, the layer above this one; imported on use only.
  from tracejax._src.api import ShapeDtypeStruct
  return tree_util.tree_unflatten(
      out_tree, [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in avals])


class _StageInfo:
  """What every stage knows about its function's signature (shared, read-only)."""
  __slots__ = ("fun_name", "in_tree", "out_tree", "in_avals", "out_avals", "donated",
               "arg_names", "donate_argnums")

  def __init__(self, fun_name, in_tree, out_tree, in_avals, out_avals, donated, arg_names,
               donate_argnums):
    self.fun_name, self.in_tree, self.out_tree = fun_name, in_tree, out_tree
    self.in_avals, self.out_avals = tuple(in_avals), tuple(out_avals)
    self.donated = tuple(donated) if donated else (False,) * len(self.in_avals)
    self.arg_names, self.donate_argnums = arg_names, tuple(donate_argnums)


class _Stage:
  """The signature properties the three stages share."""

  _info: _StageInfo

  @property
  def in_tree(self):
    """The PyTreeDef of `(dynamic positional args, dynamic kwargs)`."""
    return self._info.in_tree

  @property
  def out_tree(self):
    return self._info.out_tree

  @property
  def in_avals(self):
    """The input avals as the tree `(args, kwargs)`."""
    return tree_util.tree_unflatten(self._info.in_tree, list(self._info.in_avals))

  @property
  def args_info(self):
    """An `ArgInfo` (aval, donated) per input leaf, as the tree `(args, kwargs)`."""
    i = self._info
    return tree_util.tree_unflatten(
        i.in_tree, [ArgInfo(a, d) for a, d in zip(i.in_avals, i.donated)])

  @property
  def out_info(self):
    """The outputs' shapes and dtypes: a tree of `ShapeDtypeStruct`s."""
    return _shape_dtype_structs(self._info.out_tree, self._info.out_avals)

  @property
  def donate_argnums(self):
    return self._info.donate_argnums


# ---- the stages ----

class Wrapped(abc.ABC):
  """A function transformed by `jit`, before any stage: call it, `.trace` or `.lower` it.

  `jit` registers its function types as (virtual) subclasses:

  >>> from tracejax import jit
  >>> isinstance(jit(lambda x: x), Wrapped)
  True
  """

  @abc.abstractmethod
  def __call__(self, *args, **kwargs):
    """Trace, compile and run for these arguments (or reuse the compiled program)."""

  @abc.abstractmethod
  def trace(self, *args, **kwargs):
    """The `Traced` stage for these arguments."""

  @abc.abstractmethod
  def lower(self, *args, **kwargs):
    """The `Lowered` stage for these arguments."""


class Traced(_Stage):
  """A jitted function traced to a jaxpr for one argument signature.

  `jaxpr` is a ClosedJaxpr; `lower()` gives the `Lowered` stage.

  >>> from tracejax import jit
  >>> t = jit(lambda x: x * 2.0).trace(1.0)
  >>> t.fun_name, t.out_info.shape
  ('<lambda>', ())
  """

  def __init__(self, closed_jaxpr, info, spmd=None):
    # `spmd`: where the program runs (interpreters/pxla.py `stage_spmd`): an SPMD layout
    # (`SpmdLayout`), a Device for a single-device program placed there, or None (the
    # default device).
    self._closed_jaxpr, self._info, self._spmd = closed_jaxpr, info, spmd
    self._compiled = None

  def __call__(self, *args, **kwargs):
    """Run for arguments of the traced types (compiled on the first call), as `Compiled`."""
    if self._compiled is None:
      self._compiled = self.lower().compile()
    return self._compiled(*args, **kwargs)

  @property
  def jaxpr(self):
    return self._closed_jaxpr

  @property
  def fun_name(self):
    return self._info.fun_name

  @property
  def out_avals(self):
    return tree_util.tree_unflatten(self._info.out_tree, list(self._info.out_avals))

  def lower(self, *, lowering_platforms=None):
    """Lower the jaxpr to StableHLO; returns a `Lowered`.

    Args:
      lowering_platforms: None, or a sequence holding the default backend's name.
    """
    if lowering_platforms is not None:
      plats = tuple(lowering_platforms)
      if plats != (backend.default_platform(),):
        raise ValueError(f"lowering_platforms={plats} is not supported: tracejax lowers "
                         f"for the default backend {backend.default_platform()!r} only.")
    cj = self._closed_jaxpr
    if any(isinstance(c, Tracer) for c in cj.consts):
      raise TypeError(f"Cannot lower {self._info.fun_name}: it closes over values traced by "
                      "an enclosing transformation. Pass them as arguments instead.")
    donated = list(self._info.donated) if any(self._info.donated) else None
    lay = self._spmd
    if lay is not None and hasattr(lay, "in_shardings"):   # partitioned over devices
      from tracejax._src.interpreters import pxla   # (imported when first needed)
      low = pxla.lower_spmd(cj.jaxpr, cj.consts, f"jit_{self._info.fun_name}", lay.devices,
                            lay.in_shardings, lay.out_shardings, lay.mesh, donated)
      return Lowered(low.text, cj.consts, self._info, low)
    text = lower_jaxpr(cj.jaxpr, self._info.fun_name, donated)
    return Lowered(text, cj.consts, self._info, device=lay)


# What `Lowered.compile(compiler_options=...)` takes: XLA option names to values.
CompilerOptions = dict[str, str | bool | int | float]

# 'mhlo' is the 2022 name (seed 059 calls `compiler_ir('mhlo')`); jaxlib 0.10.2 no
# longer has the MHLO dialect, so it is served the StableHLO module it evolved into.
_DIALECTS = (None, "stablehlo", "hlo", "mhlo")


def _check_dialect(dialect):
  if dialect not in _DIALECTS:
    raise ValueError(f"unknown dialect: {dialect}. Expected one of 'stablehlo', 'hlo'.")


class Lowered(_Stage):
  """A jitted function lowered to StableHLO for one argument signature.

  >>> import numpy as np
  >>> from tracejax import jit
  >>> lo = jit(lambda x: x + 1.0).lower(np.zeros(3, np.float32))
  >>> "stablehlo.add" in lo.as_text()
  True
  >>> lo.compile()(np.zeros(3, np.float32))
  DeviceArray([1., 1., 1.], dtype=float32)
  """

  def __init__(self, text, consts, info, spmd=None, device=None):
    # `spmd`: a pxla `SpmdLowering` (an SPMD program: `text` carries its shardings);
    # `device`: where a single-device program runs (None: the default device).
    self._text, self._consts, self._info, self._spmd = text, list(consts), info, spmd
    self._device = device

  def as_text(self, dialect=None, *, debug_info=False):
    """The program as text.

    Args:
      dialect: None or 'stablehlo' (MLIR text, the default) or 'hlo' (XLA HLO text,
        before XLA's optimizations).
      debug_info: accepted for JAX compatibility; tracejax's modules carry no locations.
    """
    _check_dialect(dialect)
    if dialect == "hlo":
      return backend.stablehlo_to_hlo(self._text, return_tuple=False).as_hlo_text()
    return self._text

  def compiler_ir(self, dialect=None):
    """The program as an object: an MLIR `ir.Module` ('stablehlo', the default) or
    jaxlib's XlaComputation ('hlo')."""
    _check_dialect(dialect)
    if dialect == "hlo":
      return backend.stablehlo_to_hlo(self._text, return_tuple=False)
    return backend.parse_module(self._text)

  def cost_analysis(self):
    """XLA's cost estimate of the unoptimized program: a dict with 'flops',
    'transcendentals', 'bytes accessed', ..."""
    return backend.module_cost_analysis(self._text)

  def compile(self, compiler_options=None, *, device_assignment=None):
    """Compile with XLA; returns a `Compiled`.

    Args:
      compiler_options: None or a dict of XLA option names to values, e.g.
        `{"xla_cpu_enable_fast_math": True}`.
      device_assignment: None, or a one-device sequence: the device to compile for
        (default: where the call would run: its committed arguments' device, else the
        default device); for an SPMD program, its devices in order.
    """
    if self._spmd is not None:
      from tracejax._src.interpreters import pxla
      low = self._spmd
      if device_assignment is not None and tuple(device_assignment) != low.devices:
        raise ValueError(f"device_assignment {list(device_assignment)} differs from the "
                         f"devices {list(low.devices)} this program was lowered for")
      return Compiled(None, self._consts, self._info,
                      pxla.compile_lowered_spmd(low, compiler_options))
    device = self._device
    if device_assignment is not None:
      devs = tuple(device_assignment)
      if len(devs) != 1:
        raise ValueError("device_assignment must hold exactly one device for a jit "
                         f"stage, got {len(devs)}.")
      device = devs[0]
    exe = backend.compile(self._text, self._info.out_avals, device=device,
                          compiler_options=compiler_options, name=self._info.fun_name)
    return Compiled(exe, self._consts, self._info)


class Compiled(_Stage):
  """An XLA executable for one argument signature; call it with arguments of those types.

  Static arguments were fixed when tracing: call it with the others only.

  >>> import numpy as np
  >>> from tracejax import jit
  >>> c = jit(lambda x: x * 2.0).lower(np.ones(2, np.float32)).compile()
  >>> c(np.ones(2, np.float32))
  DeviceArray([2., 2.], dtype=float32)
  """

  def __init__(self, exe, consts, info, spmd=None):
    # `spmd`: a pxla `SpmdExecutable` (an SPMD program, holding its constants); else
    # `exe` runs on one device.
    self._spmd, self._info = spmd, info
    if spmd is not None:
      self._exe, self._const_bufs = spmd.exe, []
    else:
      self._exe = exe
      self._const_bufs = [dispatch.to_buffer(c, avals_mod.get_aval(c), exe.device)
                          for c in consts]

  @property
  def input_shardings(self):
    """The sharding each argument is laid out by, as the tree `(args, kwargs)`."""
    return tree_util.tree_unflatten(self._info.in_tree, self._in_shardings())

  @property
  def output_shardings(self):
    """The sharding of each output, as the output tree."""
    if self._spmd is not None:
      outs = list(self._spmd.out_shardings)
    else:
      outs = [sharding.SingleDeviceSharding(self._exe.device)] * len(self._info.out_avals)
    return tree_util.tree_unflatten(self._info.out_tree, outs)

  def _in_shardings(self):
    if self._spmd is not None:
      return list(self._spmd.in_shardings[len(self._spmd.const_bufs):])
    return [sharding.SingleDeviceSharding(self._exe.device)] * len(self._info.in_avals)

  def as_text(self):
    """XLA's optimized HLO of the executable."""
    return backend.executable_hlo_text(self._exe)

  def cost_analysis(self):
    """XLA's cost estimate of the optimized program: a dict with 'flops', ..."""
    return backend.executable_cost_analysis(self._exe)

  def memory_analysis(self):
    """XLA's buffer sizes (`temp_size_in_bytes`, `argument_size_in_bytes`,
    `output_size_in_bytes`, `alias_size_in_bytes`, `generated_code_size_in_bytes`...)."""
    return backend.executable_memory_stats(self._exe)

  def runtime_executable(self):
    """jaxlib's loaded executable."""
    return self._exe.exe

  def __call__(self, *args, **kwargs):
    info = self._info
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    if in_tree != info.in_tree:
      raise TypeError(
          "Function compiled with input pytree does not match the input pytree it was "
          f"called with: compiled for {info.in_tree}, called with {in_tree}. (Static "
          "arguments are fixed at compile time: pass only the others.)")
    bufs = list(self._const_bufs)
    bad = []
    for i, (x, want, donated) in enumerate(zip(leaves, info.in_avals, info.donated)):
      if type(x) is Array:
        got = x.aval
      else:
        try:
          got = avals_mod.get_aval(x)
        except TypeError:
          raise TypeError(f"Argument '{info.arg_names[i]}' of type {type(x)} passed to the "
                          f"compiled function {info.fun_name} is not a valid JAX type.") from None
        if isinstance(x, Tracer):
          raise TypeError(f"Argument '{info.arg_names[i]}' of the compiled function "
                          f"{info.fun_name} is a tracer: a Compiled function runs only on "
                          "concrete values (call the jitted function under transformations).")
      if got.shape != want.shape or got.dtype != want.dtype:
        bad.append(f"Argument '{info.arg_names[i]}' compiled with {want.str_short()} and "
                   f"called with {got.str_short()}")
        continue
      if type(x) is Array:
        bufs.append(x)
      elif donated:  # a private buffer: never donate a cached (shared) one
        bufs.append(backend.device_put(np.asarray(x, want.dtype), self._exe.device))
      else:
        bufs.append(dispatch.to_buffer(x, want, self._exe.device))
    if bad:
      raise TypeError(
          "Argument types differ from the types for which this computation was compiled. "
          "Perhaps you are calling the compiled executable with a different enable_x64 "
          "mode than when it was AOT compiled? The mismatches are:\n" + "\n".join(bad) +
          "\n(A Compiled function runs only on the types it was compiled for; call the "
          "jitted function itself to compile for others.)")
    self._check_shardings(leaves)
    if self._spmd is not None:   # placed on the program's devices (in place when laid out so)
      outs = self._spmd.execute(leaves, info.in_avals)
    else:
      # Arrays elsewhere (uncommitted: the check above let them through) move here.
      dev = self._exe.device
      bufs = bufs[:len(self._const_bufs)] + [
          sharding.on_device(b, a, dev, dispatch.to_buffer) if type(b) is Array else b
          for b, a in zip(bufs[len(self._const_bufs):], info.in_avals)]
      outs = self._exe.execute(bufs)
    return tree_util.tree_unflatten(info.out_tree, outs)

  def _check_shardings(self, leaves):
    """As JAX: a committed Array argument must already be laid out as the program's
    input (uncommitted ones and host values are moved there)."""
    info, bad = self._info, []
    for i, (x, want) in enumerate(zip(leaves, self._in_shardings())):
      if type(x) is not Array or not x._committed:
        continue
      got = x._sharding
      if not sharding.same_layout(got, want, len(info.in_avals[i].shape)):
        bad.append(f"Argument {info.arg_names[i]} with shape {x.aval.str_short()}:\n"
                   f"  Passed sharding: {got!r}\n  Required sharding: {want!r}")
    if bad:
      raise ValueError(
          "Computation was compiled for input shardings that disagree with the shardings "
          f"of arguments passed to it. Here are the {len(bad)} mismatches:\n" +
          "\n".join(bad))


# ---- why a call traced again (`jax_explain_cache_misses`) ----

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _call_site():
  f = sys._getframe(1)
  while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_PKG_DIR):
    f = f.f_back
  if f is None:
    return "<unknown>"
  return f"{f.f_code.co_filename}:{f.f_lineno} ({f.f_code.co_name})"


def _defined_at(fun):
  f = inspect.unwrap(getattr(fun, "func", fun)) if callable(fun) else fun
  code = getattr(f, "__code__", None)
  if code is None:
    return "<unknown>"
  return f"{code.co_filename}:{code.co_firstlineno}"


def _type_str(aval):
  return aval.str_short(short_dtypes=True)


def _differences(key, old, flag_names, names):
  """(how far apart, explanation lines) between cache key `key` and an older one."""
  in_tree, skey, avals, flags = key
  o_tree, o_skey, o_avals, o_flags = old
  lines, score = [], 0
  if flags != o_flags:
    lines.append("Tracing context doesn't match, e.g. due to config or context manager.")
    for n, a, b in zip(flag_names, flags, o_flags):
      if a != b:
        lines.append(f"* {n} differs: now {a} and before {b}")
        score += 1
  if skey != o_skey:
    lines.append("different static arguments:")
    lines.append(f"* now {_static_str(skey)} and before {_static_str(o_skey)}")
    score += 1
  if in_tree != o_tree:
    lines.append("different input pytree:")
    lines.append(f"* now {in_tree} and before {o_tree}")
    score += 1 + len(avals)
  else:
    diffs = []
    for i, (a, b) in enumerate(zip(avals, o_avals)):
      if a == b:
        continue
      sa, sb = _type_str(a), _type_str(b)
      if sa == sb:  # only the weak type differs
        sa += f"{{weak_type={a.weak_type}}}"
        sb += f"{{weak_type={b.weak_type}}}"
      diffs.append(f"* at {names()[i]}, now {sa} and before {sb}")
    if diffs:
      lines.append("different input types:")
      lines += diffs
      score += len(diffs)
  return score, lines


def _static_str(skey):
  return repr(tuple(getattr(k, "obj", k) for k in skey))


def explain_cache_miss(fun, name, key, seen_keys, flag_names, names):
  """Log (WARNING) why jit's tracing cache missed for `key`.

  Args:
    fun: the jitted Python function; name: its name.
    key: the missed key `(in_tree, static key, avals, flag values)`.
    seen_keys: the keys of the same form already in the cache.
    flag_names: the names of the flags in the keys' last element.
    names: a function returning one readable name per argument leaf.
  """
  if not _pe_logger.isEnabledFor(logging.WARNING):
    return
  site = _call_site()
  if not seen_keys:
    msg = (f"TRACING CACHE MISS at {site}:\n  never seen function:\n"
           f"    {name} id={id(fun)} defined at {_defined_at(fun)}")
  else:
    best = min((_differences(key, k, flag_names, names) for k in seen_keys),
               key=lambda d: d[0])
    msg = (f"TRACING CACHE MISS at {site}:\n  for {name} defined at {_defined_at(fun)}\n"
           "  all previously seen cache keys differ. For the closest previous key:\n  " +
           "\n  ".join(best[1]))
  _pe_logger.warning(msg)

