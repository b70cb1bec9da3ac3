"""`jax.debug`: `print`, `callback` and `breakpoint`, usable inside `jit`, `vmap`, `grad`.

All three bind `debug_callback_p` (in `callback.py`): an effect that runs a Python
function on the runtime values when the computation runs, never removed as dead
code, seeing primal values under differentiation and one batch element at a time
under `vmap`.
"""
import builtins
import cmd
import inspect
import linecache
import os
import pprint
import sys

import numpy as np

from tracejax._src import tree_util
from tracejax._src.callback import debug_callback_bind
from tracejax._src.core import avals as avals_mod
from tracejax._src.core.trace import Tracer


def _split_args(args, kwargs):
  """(tree, dynamic leaves, {leaf index: static leaf}): array-like leaves are passed
  through the program, anything else (strings, None, functions) is kept aside."""
  leaves, tree = tree_util.tree_flatten((args, kwargs))
  dynamic, static = [], {}
  for i, leaf in enumerate(leaves):
    if isinstance(leaf, Tracer) or avals_mod.is_valid_jaxtype(leaf):
      dynamic.append(leaf)
    else:
      static[i] = leaf
  return tree, dynamic, static


def _rebuild(tree, static, dynamic):
  n = len(static) + len(dynamic)
  it = iter(dynamic)
  leaves = [static[i] if i in static else next(it) for i in range(n)]
  return tree_util.tree_unflatten(tree, leaves)


# ---- jax.debug.callback ----

def debug_callback(callback=None, *args, ordered=False, partitioned=False, **kwargs):
  """Call `callback(*args, **kwargs)` for its side effect when the computation runs.

  Works eagerly and inside `jit`, `vmap` (one call per batch element), `grad`
  (it sees the primal values; its arguments get no gradient) and control flow.
  The call is never removed as dead code. With `ordered=True` it runs in program
  order with the other ordered effects. Array arguments arrive as
  `tracejax.Array`; other leaves (strings, None...) are passed unchanged.
  With `callback=None`, returns a function taking `(callback, *args, **kwargs)`
  (the two-call form: `jax.debug.callback(ordered=True)(fn, x)`).

  Args:
    callback: a Python function; its return value is ignored.
    *args, **kwargs: its arguments (pytrees).
    ordered: whether to order this call with the other ordered effects.
    partitioned: accepted for compatibility (tracejax runs callbacks on one device).

  Returns:
    None (or the function of the two-call form).

  >>> jax.jit(lambda x: jax.debug.callback(print, x + 1))(1.)
  2.0
  """
  def call(callback, *args, **kwargs):
    if not callable(callback):
      raise TypeError("first argument to jax.debug.callback must be callable, but got an "
                      f"object of type {type(callback)}")
    tree, dynamic, static = _split_args(args, kwargs)

    def flat_callback(*dyn):
      a, k = _rebuild(tree, static, dyn)
      callback(*a, **k)

    flat_callback.__qualname__ = getattr(callback, "__qualname__", repr(callback))
    debug_callback_bind(flat_callback, dynamic, ordered)

  if callback is None:
    if args or kwargs:
      raise TypeError("jax.debug.callback with callback=None (the two-call form) takes no "
                      f"other arguments, got args={args} kwargs={kwargs}")
    return call
  call(callback, *args, **kwargs)
  return None


# ---- jax.debug.print ----

class _AnyValue:
  """Stands for any argument while a format string is checked (`{x.y[0]:>8}`...)."""

  def __format__(self, spec):
    return ""

  def __getattr__(self, name):
    return self

  def __getitem__(self, key):
    return self


def _check_format(fmt, args, kwargs):
  """Raise now, as str.format would, for a placeholder with no matching argument."""
  fmt.format(*[_AnyValue()] * len(args), **{k: _AnyValue() for k in kwargs})


def debug_print(fmt=None, *args, ordered=False, partitioned=False, skip_format_check=False,
                **kwargs):
  """Print `fmt.format(*args, **kwargs)` with the runtime values, when the computation runs.

  Unlike `print`, it shows values inside `jit` (not tracers), when the compiled
  program runs: printing is asynchronous, so block on a result (or call
  `jax.effects_barrier()`) before reading the output. Under `vmap` it prints
  once per batch element; under `grad` it prints the primal values, once. NumPy
  print options in effect at the call are used for the values. With
  `fmt=None`, returns a function taking `(fmt, *args, **kwargs)` (the two-call
  form: `jax.debug.print(ordered=True)("x={}", x)`).

  Args:
    fmt: a `str.format` format string (not an f-string: formatting happens later).
    *args, **kwargs: the values to format (pytrees of arrays, or other objects).
    ordered: whether to order this print with the other ordered effects.
    partitioned: accepted for compatibility (tracejax runs callbacks on one device).
    skip_format_check: do not check the placeholders against the arguments now.

  >>> jax.jit(lambda x: jax.debug.print("x = {x}", x=x * 2))(jnp.arange(3.))
  x = [0. 2. 4.]
  """
  def call(fmt, *args, **kwargs):
    if not isinstance(fmt, str):
      raise TypeError(f"jax.debug.print: fmt must be a str, got {type(fmt).__name__} "
                      f"({fmt!r})")
    if not skip_format_check:
      _check_format(fmt, args, kwargs)
    options = np.get_printoptions()

    def format_and_print(*a, **k):
      with np.printoptions(**options):
        text = fmt.format(*a, **k)
      builtins.print(text)

    debug_callback(format_and_print, *args, ordered=ordered, **kwargs)

  if fmt is None:
    if args or kwargs:
      raise TypeError("jax.debug.print with fmt=None (the two-call form) takes no other "
                      f"arguments, got args={args} kwargs={kwargs}")
    return call
  call(fmt, *args, **kwargs)
  return None


# ---- jax.debug.breakpoint ----

_TRACEJAX_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _user_frames(frame, filter_frames, num_frames):
  """The caller's frames, innermost first, without tracejax's own (if filtering)."""
  frames = []
  while frame is not None:
    fname = os.path.abspath(frame.f_code.co_filename)
    if not (filter_frames and (fname.startswith(_TRACEJAX_DIR) or
                               frame.f_code.co_filename.startswith("<frozen"))):
      frames.append(frame)
      if num_frames is not None and len(frames) >= num_frames:
        break
    frame = frame.f_back
  return frames


class _FrameInfo:
  """What the debugger shows of one frame: where it is, and its local values."""

  def __init__(self, filename, lineno, function, local_vars, global_vars):
    self.filename, self.lineno, self.function = filename, lineno, function
    self.locals, self.globals = local_vars, global_vars


class _Debugger(cmd.Cmd):
  """The breakpoint prompt: `p`/`pp` expressions, `l`ist, `w`here, `u`p, `d`own,
  `c`ontinue; any other line is evaluated (or executed) in the frame."""
  prompt = "(jdb) "

  def __init__(self, frames, stdin, stdout):
    super().__init__(stdin=stdin, stdout=stdout)
    self.use_rawinput = False  # read self.stdin (sys.stdin, or what a test put there)
    self.frames, self.index = frames, 0

  @property
  def frame(self):
    return self.frames[self.index]

  def _write(self, text):
    self.stdout.write(text + "\n")
    self.stdout.flush()

  def _eval(self, expr):
    return eval(expr, self.frame.globals, dict(self.frame.locals))

  def _show_error(self):
    etype, value = sys.exc_info()[:2]
    self._write(f"*** {etype.__name__}: {value}")

  def _where(self, index):
    f = self.frames[index]
    return f"{f.filename}({f.lineno}){f.function}()"

  def do_p(self, arg):
    """p expression: print the value of the expression."""
    try:
      self._write(repr(self._eval(arg)))
    except Exception:
      self._show_error()

  def do_pp(self, arg):
    """pp expression: pretty-print the value of the expression."""
    try:
      self._write(pprint.pformat(self._eval(arg)))
    except Exception:
      self._show_error()

  def do_list(self, arg):
    """l(ist): show the source around the current line."""
    f = self.frame
    start = max(1, f.lineno - 5)
    for n in range(start, f.lineno + 6):
      line = linecache.getline(f.filename, n)
      if not line:
        break
      self._write(f"{n:4d} {'->' if n == f.lineno else '  '} {line.rstrip()}")
  do_l = do_list

  def do_where(self, arg):
    """w(here): the frames, outermost last; '>' marks the current one."""
    for i in range(len(self.frames)):
      self._write(f"{'>' if i == self.index else ' '} {self._where(i)}")
  do_w = do_bt = do_where

  def do_up(self, arg):
    """u(p): move to the calling (outer) frame."""
    if self.index + 1 < len(self.frames):
      self.index += 1
      self._write(f"> {self._where(self.index)}")
    else:
      self._write("*** Oldest frame")
  do_u = do_up

  def do_down(self, arg):
    """d(own): move to the called (inner) frame."""
    if self.index > 0:
      self.index -= 1
      self._write(f"> {self._where(self.index)}")
    else:
      self._write("*** Newest frame")
  do_d = do_down

  def do_locals(self, arg):
    """locals: the names and values of the current frame's local variables."""
    for k, v in self.frame.locals.items():
      self._write(f"{k} = {v!r}")

  def do_continue(self, arg):
    """c(ont(inue)): leave the debugger and let the computation go on."""
    return True
  do_c = do_cont = do_continue

  def do_quit(self, arg):
    """q(uit): the same as continue (a running computation cannot be abandoned)."""
    return True
  do_q = do_exit = do_quit

  def do_EOF(self, arg):
    """End of input: continue."""
    self._write("")
    return True

  def default(self, line):
    try:
      code = compile(line, "<jdb>", "single")
      exec(code, self.frame.globals, dict(self.frame.locals))
    except Exception:
      self._show_error()

  def emptyline(self):
    return False

  def run(self):
    self._write(f"Entering jdb:\n> {self._where(0)}")
    self.cmdloop()


def breakpoint(*, backend=None, filter_frames=True, num_frames=None, ordered=False,
               token=None, **kwargs):
  """Stop when the computation runs and open a prompt on the values of the caller's frames.

  The prompt (``(jdb)``) reads commands from `sys.stdin`: ``p expr`` / ``pp
  expr`` evaluate an expression on the frame's values (inside `jit` these are the
  runtime values, not tracers), ``l`` lists the source, ``w`` shows the frames,
  ``u`` / ``d`` move between them, ``locals`` lists the local variables, ``c``
  (or ``q``, or the end of input) continues; any other line is evaluated in the
  frame. Without a terminal the commands are read from whatever `sys.stdin`
  is (a pipe, a file); at its end the computation continues, so a run with no
  input never waits. If `sys.stdin` is None or closed, a note is printed and
  the computation continues. Under `vmap` the prompt opens once per batch
  element. In the frames outside the innermost one, traced values (of an outer
  `jit` or `grad`) are shown as their abstract type.

  Args:
    backend: accepted for compatibility (callbacks run on the host CPU).
    filter_frames: hide tracejax's own frames.
    num_frames: how many frames (innermost first) to capture; None for all.
    ordered: whether to order this breakpoint with the other ordered effects.
    token: accepted for compatibility; must be None.

  >>> def f(x):
  ...   y = jnp.sin(x)
  ...   jax.debug.breakpoint()   # (jdb) p y   -> the runtime value of y
  ...   return y
  """
  if token is not None:
    raise ValueError("jax.debug.breakpoint: token is not supported by tracejax; pass None "
                     "(use ordered=True to order it with other effects).")
  caller = inspect.currentframe().f_back
  frames = _user_frames(caller, filter_frames, num_frames) or [caller]
  infos, traced = [], {}
  for depth, fr in enumerate(frames):
    local_vars = {}
    for name, value in fr.f_locals.items():
      if any(isinstance(leaf, Tracer) for leaf in tree_util.tree_leaves(value)):
        if depth == 0:  # the frame that called breakpoint: its tracers are live
          traced[name] = value  # passed through the program: the prompt sees values
          continue
        value = tree_util.tree_map(
            lambda leaf: _Abstract(leaf.aval) if isinstance(leaf, Tracer) else leaf, value)
      local_vars[name] = value
    infos.append(_FrameInfo(fr.f_code.co_filename, fr.f_lineno, fr.f_code.co_name,
                            local_vars, fr.f_globals))
  del frames

  def open_prompt(values):
    stdin = sys.stdin
    if stdin is None or getattr(stdin, "closed", False):
      builtins.print("jax.debug.breakpoint: no stdin to read commands from; continuing.")
      return
    first = infos[0]
    run_frames = [_FrameInfo(first.filename, first.lineno, first.function,
                             {**first.locals, **values}, first.globals)] + infos[1:]
    _Debugger(run_frames, stdin, sys.stdout).run()

  debug_callback(open_prompt, traced, ordered=ordered)


class _Abstract:
  """A traced value of an outer frame, shown by its type (its value is not known here)."""

  def __init__(self, aval):
    self.aval = aval

  def __repr__(self):
    return f"<traced {self.aval.str_short()}>"



# ---- jax.debug.visualize_array_sharding / inspect_array_sharding ----
#
# JAX draws the table with `rich` (a dependency tracejax does not take for one debugging
# aid). When `rich` cannot color the output (not a terminal, or no matplotlib), JAX draws
# a table with square box lines; tracejax draws that same table itself, character for
# character: the sizes of the blocks follow JAX's (10 lines for the whole array's height,
# 2.5 characters of width per line of height, cells at least `min_width` wide), the
# device ids centred in their block.

def _chunk_index(size, s):
  """Which block of an axis of `size` the slice `s` is."""
  start = 0 if s.start is None else s.start
  stop = size if s.stop is None else s.stop
  return 0 if stop - start in (0, size) else start // (stop - start), stop - start


def _sharding_blocks(shape, sharding):
  """{(row, col): set of device ids}, and the fraction of the array's height and width
  that each row and column covers (heights None for 1-d arrays)."""
  blocks, heights, widths = {}, {}, {}
  for dev, idx in sharding.devices_indices_map(tuple(shape)).items():
    idx = tuple(idx) + (slice(None),) * (len(shape) - len(idx))
    if len(shape) == 2:
      (r, h), (c, w) = _chunk_index(shape[0], idx[0]), _chunk_index(shape[1], idx[1])
      heights[r], widths[c] = h / shape[0], w / shape[1]
    else:
      r, (c, w) = 0, _chunk_index(shape[0], idx[0])
      heights[r], widths[c] = None, w / shape[0]
    blocks.setdefault((r, c), set()).add(dev.id)
  return blocks, heights, widths


def _center(text, width):
  left = (width - len(text)) // 2
  return " " * left + text + " " * (width - len(text) - left)


def render_sharding(shape, sharding, *, scale=1., min_width=9, max_width=80):
  """The text table `visualize_sharding` prints: one box per block of the array, naming
  the devices that hold it (`CPU 0,4` for a block on devices 0 and 4).

  Args:
    shape: the array's shape (1 or 2 dimensions).
    sharding: its `Sharding`.
    scale: the table's size relative to the default (10 lines high).
    min_width, max_width: bounds on a cell's width in characters.

  Returns:
    The table as a string (lines joined by newlines, no trailing newline).

  >>> print(render_sharding((8,), jax.devices()[0] and SingleDeviceSharding(jax.devices()[0])))  # doctest: +SKIP
  ┌───────┐
  │ CPU 0 │
  └───────┘
  """
  shape = tuple(int(d) for d in shape)
  if len(shape) not in (1, 2):
    raise ValueError("`visualize_sharding` only works for shapes with 1 and 2 dimensions.")
  base_height = int(10 * scale)
  base_width = int(base_height * (shape[1] if len(shape) == 2 else 1) / shape[0])
  kind = next(iter(sharding.device_set)).platform.upper()
  blocks, heights, widths = _sharding_blocks(shape, sharding)
  rows, cols = max(r for r, _ in blocks) + 1, max(c for _, c in blocks) + 1
  # Each cell: its text and padding (top, right, bottom, left), as JAX computes them.
  cells = {}
  for (r, c), ids in blocks.items():
    text = f"{kind} " + ",".join(str(i) for i in sorted(ids))
    width = min(max(int(widths[c] * base_width * 2.5), min_width), max_width)
    height = 1 if heights[r] is None else int(heights[r] * base_height)
    left, rem = divmod(width - len(text) - 2, 2)
    top, rem_v = divmod(height - 2, 2)
    cells[r, c] = (text, max(top, 0), max(left + rem, 0), max(top + rem_v, 0), max(left, 0))
  col_w = [max(len(cells[r, c][0]) + cells[r, c][2] + cells[r, c][4] for r in range(rows))
           for c in range(cols)]
  row_h = [max(1 + cells[r, c][1] + cells[r, c][3] for c in range(cols)) for r in range(rows)]
  rule = lambda a, m, b: a + m.join("─" * w for w in col_w) + b
  out = [rule("┌", "┬", "┐")]
  for r in range(rows):
    if r:
      out.append(rule("├", "┼", "┤"))
    for line in range(row_h[r]):
      parts = []
      for c in range(cols):
        text, top, right, bottom, left = cells[r, c]
        if line == top:   # the text, centred in what its padding leaves of the column
          inner = col_w[c] - left - right
          parts.append(" " * left + _center(text, inner) + " " * right)
        else:
          parts.append(" " * col_w[c])
      out.append("│" + "│".join(parts) + "│")
  out.append(rule("└", "┴", "┘"))
  return "\n".join(out)


def visualize_sharding(shape, sharding, *, use_color=True, scale=1., min_width=9,
                       max_width=80, color_map=None):
  """Print a table of which devices hold which block of an array of `shape` laid out by
  `sharding` (1-d and 2-d shapes).

  Args:
    shape: the shape.
    sharding: the `Sharding`.
    use_color, color_map: accepted for compatibility (the table is drawn with box lines,
      as JAX draws it without color).
    scale: the size relative to the default.
    min_width, max_width: bounds on a cell's width.

  >>> visualize_sharding((8,), SingleDeviceSharding(jax.devices()[0]))   # doctest: +SKIP
  """
  print(render_sharding(shape, sharding, scale=scale, min_width=min_width,
                        max_width=max_width))


def visualize_array_sharding(arr, **kwargs):
  """Print a table of which devices hold which block of the 1-d or 2-d array `arr`
  (`jax.debug.visualize_array_sharding`).

  Args:
    arr: an Array (not a tracer: under `jit`, use `inspect_array_sharding`).
    **kwargs: as for `visualize_sharding` (`scale`, `min_width`, `max_width`, ...).

  >>> x = jax.device_put(np.arange(8.), NamedSharding(mesh, P('x')))   # doctest: +SKIP
  >>> jax.debug.visualize_array_sharding(x)                             # doctest: +SKIP
  ┌───────────┬───────────┐
  │CPU 0,1,2,3│CPU 4,5,6,7│
  └───────────┴───────────┘
  """
  if isinstance(arr, Tracer):
    raise TypeError("visualize_array_sharding needs a concrete Array; inside `jit` use "
                    "jax.debug.inspect_array_sharding(x, callback=...)")
  sharding = getattr(arr, "sharding", None)
  if sharding is None:
    raise TypeError(f"visualize_array_sharding needs an Array, got {type(arr).__name__}")
  visualize_sharding(arr.shape, sharding, **kwargs)


def inspect_array_sharding(value, *, callback):
  """Call `callback(sharding)` for each array in the pytree `value`, with the sharding it
  has: eagerly, the Array's; under `jit`, the layout the program gives it: replicated
  when the program runs on one device (reported when it is lowered), else the one XLA's
  partitioner chose (reported while the program compiles, as a NamedSharding over the
  program's mesh with its axes Auto, or a GSPMDSharding when there is no mesh). A
  program compiled once reports nothing on later calls.

  Args:
    value: a pytree of arrays or tracers.
    callback: a function of one `Sharding`.

  >>> @jax.jit
  ... def f(x):
  ...   jax.debug.inspect_array_sharding(x, callback=print)
  ...   return x * 2
  >>> _ = f(np.ones(4))            # doctest: +SKIP
  GSPMDSharding({replicated}, memory_kind=device)
  """
  if not callable(callback):
    raise TypeError(f"inspect_array_sharding callback must be callable, got {callback!r}")
  for leaf in tree_util.tree_leaves(value):
    _inspect_leaf(leaf, callback)


def _inspect_leaf(leaf, callback):
  from tracejax._src.runtime import sharding as sharding_mod
  if not isinstance(leaf, Tracer):
    s = getattr(leaf, "sharding", None)
    if s is None:
      raise TypeError(f"inspect_array_sharding needs arrays, got {type(leaf).__name__}")
    callback(s)
    return
  # Under `jit` (Explicit mesh axes too, as in JAX) the callback gets the layout the
  # program gives the value, known when it is lowered (one device) or compiled.
  _inspect_p().bind(leaf, callback=callback)


def _inspect_lowering(ctx, x, *, callback):
  from tracejax._src.interpreters import lowering, pxla
  from tracejax._src.runtime import backend, sharding as sharding_mod
  n = pxla.lowering_partitions()
  mesh, devices = _lowering_layout(n)
  if mesh is not None and any(t != sharding_mod.AxisType.Auto for t in mesh.axis_types):
    # As JAX: the layout is XLA's choice, described over the mesh's devices and names
    # with Auto axes (what the partitioner sees).
    mesh = sharding_mod.Mesh(mesh.devices, mesh.axis_names)

  def report(hlo):
    if mesh is None:
      callback(sharding_mod.GSPMDSharding(devices, hlo))
    elif hlo.is_manual():
      callback(sharding_mod.NamedSharding(mesh, sharding_mod.PartitionSpec()))
    else:
      callback(sharding_mod.named_from_hlo(mesh, hlo, len(ctx.avals_in[0].shape)))

  if n <= 1:
    # One device runs the whole program: the value is all there, now.
    report(sharding_mod.xc.HloSharding.replicate())
    return []
  # XLA's partitioner chooses the layout after lowering: jaxlib's `InspectSharding`
  # custom-call partitioner calls `report` with it while the program compiles.
  key = sharding_mod.encode_inspect_callback(report)
  _keepalive.append(report)   # the partitioner holds only a raw pointer to it
  op = lowering.hlo.CustomCallOp(
      [x.type], [x], call_target_name=lowering.ir.StringAttr.get("InspectSharding"),
      has_side_effect=lowering.ir.BoolAttr.get(True),
      api_version=lowering.ir.IntegerAttr.get(lowering.ir.IntegerType.get_signless(32), 1),
      called_computations=lowering.ir.ArrayAttr.get([]),
      backend_config=lowering.ir.StringAttr.get(key))
  # A nonce makes the module unique: an executable from the on-disk compilation cache
  # (whose key is the module text, the callback's address included) would skip the
  # partitioner, and with it the callback.
  import uuid
  op.operation.attributes["mhlo.frontend_attributes"] = lowering.ir.DictAttr.get(
      {"inspect_sharding_nonce": lowering.ir.StringAttr.get(uuid.uuid4().hex)})
  return []


_keepalive = []


def _lowering_layout(n):
  """(mesh or None, devices) of the SPMD program of `n` partitions being lowered: the
  mesh its shardings refer to, and the devices partition i runs on."""
  from tracejax._src.interpreters import pxla
  from tracejax._src.runtime import backend, sharding as sharding_mod
  state = pxla._spmd_state
  mesh, devices = state.mesh, state.devices
  if devices is None:
    cur = sharding_mod.current_mesh()
    if cur is not None and cur.size == max(n, 1):
      mesh, devices = cur, cur._flat_devices
    else:
      devices = tuple(backend.devices()[:max(n, 1)]) if n > 1 else (backend.default_device(),)
  return mesh, tuple(devices)


_inspect_prim = []


def _inspect_p():
  """The `inspect_sharding` primitive (made on first use: its rules live in layers this
  module does not import at load). An effect, so that `jit` keeps it."""
  if not _inspect_prim:
    from tracejax._src.core.trace import Primitive
    from tracejax._src.interpreters import ad, batching, lowering, staging
    p = Primitive("inspect_sharding")
    p.multiple_results = True
    p.def_impl(lambda x, *, callback: (callback(x.sharding), [])[1])
    p.def_abstract_eval(lambda aval, *, callback: [])
    lowering.register_lowering(p, _inspect_lowering)
    # Under `grad`/`jvp` the primal is inspected; under `vmap` the whole batched value
    # (its batch axis included), as in JAX.
    ad.primitive_jvps[p] = lambda primals, tangents, *, callback: (
        p.bind(*primals, callback=callback), [])
    batching.primitive_batchers[p] = lambda args, dims, *, callback: (
        p.bind(*args, callback=callback), [])
    staging.effectful_primitives.add(p)
    _inspect_prim.append(p)
  return _inspect_prim[0]
