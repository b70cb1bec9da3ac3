"""Pictures of jaxprs: Graphviz DOT text, SVG/PNG files, and a command line.

The module is named `jaxpr_graph` (under `experimental`, where JAX keeps
add-ons without a stability promise) because it turns a jaxpr into a *graph*:
JAX has no such module, so the name says what it makes rather than borrowing
one of JAX's names (`jax.experimental.jaxpr_graph` does not collide with any).

The graph has one node per input, per constant, per equation and per output;
an edge follows each variable from where it is made to where it is used,
labelled with its abstract value (`f32[3]`). The jaxprs inside an equation
(the branches of `cond`, the body of `scan`, the cond and body of
`while`, the callee of `xla_call`/`pjit`, `checkpoint`, `custom_jvp_call`,
`custom_vjp_call`) are drawn as clusters next to their equation, with dashed
edges from their outputs into it.

`render` writes a file with Graphviz's `dot` program when it is installed and
falls back to a matplotlib drawing (a layered layout) otherwise.

Command line (also `python -m tracejax graph ...`)::

  python -m tracejax.experimental.jaxpr_graph script.py:function \\
      --args "f32[3],f32[3]" -o out.png
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

import numpy as np

from tracejax._src.core import ir

# Names for the jaxpr-valued parameters of the higher-order primitives.
_SUB_NAMES = {
    "branches": "branch", "jaxpr": "body", "cond_jaxpr": "cond", "body_jaxpr": "body",
    "call_jaxpr": "call", "fun_jaxpr": "fun", "jvp_jaxpr_thunk": "jvp",
    "true_jaxpr": "true", "false_jaxpr": "false",
}

_INPUT, _CONST, _EQN, _OUTPUT = "input", "const", "eqn", "output"


class _Graph:
  """The drawing as data: nodes, edges and (nested) clusters, shared by both renderers."""

  def __init__(self):
    self.nodes = []      # (id, label, kind, cluster id or None)
    self.edges = []      # (src, dst, label, dashed)
    self.clusters = []   # (id, label, parent cluster id or None)

  def node(self, label, kind, cluster):
    nid = f"n{len(self.nodes)}"
    self.nodes.append((nid, label, kind, cluster))
    return nid

  def cluster(self, label, parent):
    cid = f"cluster_{len(self.clusters)}"
    self.clusters.append((cid, label, parent))
    return cid


def _unwrap(jaxpr):
  if isinstance(jaxpr, ir.ClosedJaxpr):
    return jaxpr.jaxpr, jaxpr.consts
  if isinstance(jaxpr, ir.Jaxpr):
    return jaxpr, None
  raise TypeError(f"jaxpr_to_dot: expected a Jaxpr or ClosedJaxpr (e.g. from "
                  f"jax.make_jaxpr(f)(*args)), got {type(jaxpr).__name__}.")


def _aval_str(aval):
  short = getattr(aval, "str_short", None)
  return short(short_dtypes=True) if short is not None else str(aval)


def _literal_str(lit):
  v = np.asarray(lit.val)
  return str(bool(v)) if v.dtype == np.bool_ else (str(v[()]) if v.ndim == 0 else "[...]")


def _param_str(params, limit):
  parts = []
  for k, v in params.items():
    if isinstance(v, (ir.Jaxpr, ir.ClosedJaxpr)) or (
        isinstance(v, (tuple, list)) and v and isinstance(v[0], (ir.Jaxpr, ir.ClosedJaxpr))):
      continue
    if callable(v) or v is None:
      continue
    s = f"{k}={v}"
    parts.append(s if len(s) <= 30 else s[:27] + "...")
  return parts[:limit]


def _sub_jaxprs(eqn):
  """(label, jaxpr or ClosedJaxpr) for every jaxpr-valued parameter of `eqn`."""
  out = []
  for key, v in eqn.params.items():
    name = _SUB_NAMES.get(key, key)
    inner = getattr(v, "jaxpr", None)  # a staged function (custom_jvp/vjp's `call`)
    if not isinstance(v, (ir.Jaxpr, ir.ClosedJaxpr)) and isinstance(
        inner, (ir.Jaxpr, ir.ClosedJaxpr)):
      v = inner
    if isinstance(v, (ir.Jaxpr, ir.ClosedJaxpr)):
      out.append((name, v))
    elif isinstance(v, (tuple, list)):
      subs = [q for q in v if isinstance(q, (ir.Jaxpr, ir.ClosedJaxpr))]
      out += [(f"{name} {i}", q) for i, q in enumerate(subs)]
  return out


def _build(graph, jaxpr, consts, cluster, depth, max_depth, show_params):
  """Adds `jaxpr`'s nodes to `graph` (inside `cluster`); returns its output node ids."""
  producer = {}   # id(Var) -> node id

  for i, v in enumerate(jaxpr.constvars):
    detail = ""
    if consts is not None and i < len(consts):
      value = np.asarray(consts[i]) if np.ndim(consts[i]) == 0 else None
      detail = f" = {value}" if value is not None else ""
    producer[id(v)] = graph.node(f"const {i}: {_aval_str(v.aval)}{detail}", _CONST, cluster)
  for i, v in enumerate(jaxpr.invars):
    producer[id(v)] = graph.node(f"in {i}: {_aval_str(v.aval)}", _INPUT, cluster)

  for eqn in jaxpr.eqns:
    operands = []
    for x in eqn.invars:
      operands.append(_literal_str(x) if isinstance(x, ir.Literal) else "·")
    label = eqn.primitive.name
    if show_params:
      extra = _param_str(eqn.params, show_params)
      if extra:
        label += "\n" + "\n".join(extra)
    if any(isinstance(x, ir.Literal) for x in eqn.invars):
      label += "\n(" + ", ".join(operands) + ")"
    nid = graph.node(label, _EQN, cluster)
    for x in eqn.invars:
      if isinstance(x, ir.Literal):
        continue
      src = producer.get(id(x))
      if src is None:  # a free variable (malformed jaxpr): show it as an input
        src = producer[id(x)] = graph.node(f"free: {_aval_str(x.aval)}", _INPUT, cluster)
      graph.edges.append((src, nid, _aval_str(x.aval), False))
    for v in eqn.outvars:
      producer[id(v)] = nid
    if max_depth is None or depth < max_depth:
      for name, sub in _sub_jaxprs(eqn):
        sub_jaxpr, sub_consts = _unwrap(sub)
        cid = graph.cluster(f"{eqn.primitive.name}: {name}", cluster)
        outs = _build(graph, sub_jaxpr, sub_consts, cid, depth + 1, max_depth, show_params)
        for o in outs:
          graph.edges.append((o, nid, name, True))

  outs = []
  for i, v in enumerate(jaxpr.outvars):
    oid = graph.node(f"out {i}: {_aval_str(v.aval)}", _OUTPUT, cluster)
    if isinstance(v, ir.Literal):
      graph.nodes[-1] = (oid, f"out {i} = {_literal_str(v)}", _OUTPUT, cluster)
    else:
      src = producer.get(id(v))
      if src is not None:
        graph.edges.append((src, oid, _aval_str(v.aval), False))
    outs.append(oid)
  return outs


def _graph_of(jaxpr, max_depth=None, show_params=2):
  jaxpr, consts = _unwrap(jaxpr)
  graph = _Graph()
  _build(graph, jaxpr, consts, None, 0, max_depth, show_params)
  return graph


def _dot_quote(s):
  return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


_DOT_STYLE = {
    _INPUT: 'shape=ellipse, style=filled, fillcolor="#d6eaff"',
    _CONST: 'shape=box, style="filled,dashed", fillcolor="#eeeeee"',
    _EQN: 'shape=box, style="rounded,filled", fillcolor="#fff4d6"',
    _OUTPUT: 'shape=ellipse, style=filled, fillcolor="#d9f2d9", peripheries=2',
}


def jaxpr_to_dot(jaxpr, *, name="jaxpr", rankdir="TB", max_depth=None, show_params=2):
  """Graphviz DOT text for a jaxpr.

  Args:
    jaxpr: a `ClosedJaxpr` (what `jax.make_jaxpr(f)(*args)` returns) or a `Jaxpr`.
    name: the graph's name (and title).
    rankdir: Graphviz layout direction, "TB" (top to bottom) or "LR".
    max_depth: how many levels of sub-jaxprs (cond branches, scan bodies...) to
      draw as clusters; None for all, 0 for none.
    show_params: how many of each equation's parameters to print under its name.

  Returns:
    The DOT source as a string: one node per input, constant, equation and output,
    edges labelled with avals, a `subgraph cluster_N` per sub-jaxpr.

  Example:
    >>> import tracejax as jax
    >>> dot = jaxpr_to_dot(jax.make_jaxpr(lambda x: x * 2.0)(1.0))
    >>> dot.splitlines()[0], "mul" in dot
    ('digraph "jaxpr" {', True)
  """
  if rankdir not in ("TB", "LR", "BT", "RL"):
    raise ValueError(f"jaxpr_to_dot: rankdir must be TB, LR, BT or RL, got {rankdir!r}.")
  graph = _graph_of(jaxpr, max_depth, show_params)
  lines = [f"digraph {_dot_quote(name)} {{",
           f"  rankdir={rankdir};",
           f"  label={_dot_quote(name)}; labelloc=t;",
           '  node [fontname="Helvetica", fontsize=10];',
           '  edge [fontname="Helvetica", fontsize=8, color="#555555"];']
  children = {}
  for cid, _, parent in graph.clusters:
    children.setdefault(parent, []).append(cid)
  members = {}
  for nid, label, kind, cluster in graph.nodes:
    members.setdefault(cluster, []).append((nid, label, kind))
  labels = {cid: label for cid, label, _ in graph.clusters}

  def emit(cluster, indent):
    pad = "  " * indent
    for nid, label, kind in members.get(cluster, ()):
      lines.append(f"{pad}{nid} [label={_dot_quote(label)}, {_DOT_STYLE[kind]}];")
    for cid in children.get(cluster, ()):
      lines.append(f"{pad}subgraph {cid} {{")
      lines.append(f'{pad}  label={_dot_quote(labels[cid])}; style="rounded,dashed"; '
                   'color="#888888";')
      emit(cid, indent + 1)
      lines.append(f"{pad}}}")

  emit(None, 1)
  for src, dst, label, dashed in graph.edges:
    style = ", style=dashed" if dashed else ""
    lines.append(f"  {src} -> {dst} [label={_dot_quote(label)}{style}];")
  lines.append("}")
  return "\n".join(lines) + "\n"


# ---- rendering ----

def _layers(graph):
  """Longest-path layering (the graph is acyclic: jaxprs are in SSA order)."""
  layer = {nid: 0 for nid, *_ in graph.nodes}
  order = {nid: i for i, (nid, *_) in enumerate(graph.nodes)}
  # Nodes are created before the nodes that use them, except a cluster's outputs,
  # which come after their equation's node; relax in creation order until stable.
  edges = sorted(graph.edges, key=lambda e: order[e[1]])
  for _ in range(len(graph.nodes)):
    changed = False
    for src, dst, _, _ in edges:
      if layer[dst] < layer[src] + 1:
        layer[dst] = layer[src] + 1
        changed = True
    if not changed:
      break
  return layer


_MPL_COLORS = {_INPUT: "#d6eaff", _CONST: "#eeeeee", _EQN: "#fff4d6", _OUTPUT: "#d9f2d9"}


def _render_matplotlib(graph, path, title):
  import matplotlib
  matplotlib.use("Agg")  # files only: never needs a display
  from matplotlib import pyplot as plt
  from matplotlib.patches import FancyBboxPatch

  layer = _layers(graph)
  parents = {cid: parent for cid, _, parent in graph.clusters}

  def top(cluster):  # the outermost cluster holding a node (None: the main jaxpr)
    while cluster is not None and parents[cluster] is not None:
      cluster = parents[cluster]
    return cluster

  # Each top-level cluster gets its own band of columns to the right of the main
  # jaxpr, so that boxes drawn around clusters do not overlap other nodes.
  groups = {}
  for nid, _, _, cluster in graph.nodes:
    groups.setdefault(top(cluster), {}).setdefault(layer[nid], []).append(nid)
  pos, x0 = {}, 0.0
  for rows in groups.values():
    cols = max(len(v) for v in rows.values())
    for k, nids in rows.items():
      for i, nid in enumerate(nids):
        pos[nid] = (x0 + (i + (cols - len(nids)) / 2) * 2.6, -k * 1.3)
    x0 += cols * 2.6 + 0.6
  width = x0 / 2.6
  n_layers = max(layer.values()) + 1
  fig, ax = plt.subplots(figsize=(max(6, 2.2 * width), max(4, 1.0 * n_layers + 1)))
  info = {nid: (label, kind, cluster) for nid, label, kind, cluster in graph.nodes}

  # Clusters first (behind), as boxes around their members (nested ones included).

  def inside(cluster, cid):
    while cluster is not None:
      if cluster == cid:
        return True
      cluster = parents[cluster]
    return False

  for cid, label, _ in graph.clusters:
    xs = [pos[n][0] for n, (_, _, c) in info.items() if inside(c, cid)]
    ys = [pos[n][1] for n, (_, _, c) in info.items() if inside(c, cid)]
    if not xs:
      continue
    ax.add_patch(FancyBboxPatch((min(xs) - 1.2, min(ys) - 0.5), max(xs) - min(xs) + 2.4,
                                max(ys) - min(ys) + 1.1, boxstyle="round,pad=0.05",
                                fill=False, linestyle="--", edgecolor="#888888"))
    ax.text(min(xs) - 1.15, max(ys) + 0.5, label, fontsize=7, color="#555555", va="bottom")

  for src, dst, label, dashed in graph.edges:
    (x0, y0), (x1, y1) = pos[src], pos[dst]
    ax.annotate("", xy=(x1, y1 + 0.25), xytext=(x0, y0 - 0.25),
                arrowprops=dict(arrowstyle="->", color="#555555", lw=0.8,
                                linestyle="--" if dashed else "-"))
    ax.text((x0 + x1) / 2, (y0 + y1) / 2, label, fontsize=6, color="#333333",
            ha="center", va="center", backgroundcolor="white")
  for nid, (label, kind, _) in info.items():
    x, y = pos[nid]
    ax.text(x, y, label, ha="center", va="center", fontsize=7,
            bbox=dict(boxstyle="round,pad=0.3", facecolor=_MPL_COLORS[kind],
                      edgecolor="#444444", lw=0.6))
  ax.set_title(title, fontsize=10)
  xs = [p[0] for p in pos.values()]
  ax.set_xlim(min(xs) - 1.6, max(xs) + 1.6)
  ax.set_ylim(-(n_layers - 1) * 1.3 - 0.8, 0.9)
  ax.axis("off")
  fig.tight_layout()
  fig.savefig(path, dpi=110)
  plt.close(fig)


def render(jaxpr, path, *, engine="auto", name=None, **dot_options):
  """Writes a picture of `jaxpr` to `path` (format from the suffix: .svg, .png, .pdf, .dot).

  Args:
    jaxpr: a `ClosedJaxpr` or `Jaxpr`.
    path: the file to write; `.dot` writes the DOT text itself.
    engine: "auto" (Graphviz's `dot` program when `shutil.which("dot")` finds it,
      else matplotlib), "graphviz" or "matplotlib".
    name: a title (default: the file's stem).
    **dot_options: passed to `jaxpr_to_dot` (`rankdir`, `max_depth`, `show_params`).

  Returns:
    The engine that wrote the file: "graphviz", "matplotlib" or "dot-text".

  Example:
    >>> import tracejax as jax, tempfile, os
    >>> out = os.path.join(tempfile.mkdtemp(), "f.png")
    >>> render(jax.make_jaxpr(lambda x: x + 1.0)(1.0), out) in ("graphviz", "matplotlib")
    True
  """
  path = os.fspath(path)
  fmt = os.path.splitext(path)[1].lstrip(".").lower()
  if fmt not in ("svg", "png", "pdf", "dot", "gv"):
    raise ValueError(f"render: path must end in .svg, .png, .pdf or .dot, got {path!r}.")
  if engine not in ("auto", "graphviz", "matplotlib"):
    raise ValueError(f"render: engine must be 'auto', 'graphviz' or 'matplotlib', "
                     f"got {engine!r}.")
  name = name or os.path.splitext(os.path.basename(path))[0]
  if fmt in ("dot", "gv"):
    with open(path, "w") as f:
      f.write(jaxpr_to_dot(jaxpr, name=name, **dot_options))
    return "dot-text"
  dot = shutil.which("dot")
  if engine == "graphviz" and dot is None:
    raise RuntimeError("render: engine='graphviz' needs Graphviz's `dot` program on PATH "
                       "(e.g. `apt-get install graphviz`); engine='auto' falls back to "
                       "matplotlib.")
  if dot is not None and engine != "matplotlib":
    text = jaxpr_to_dot(jaxpr, name=name, **dot_options)
    proc = subprocess.run([dot, f"-T{fmt}", "-o", path], input=text.encode(),
                          capture_output=True, timeout=120)
    if proc.returncode == 0:
      return "graphviz"
    if engine == "graphviz":
      raise RuntimeError(f"render: dot failed: {proc.stderr.decode(errors='replace')}")
  if fmt == "pdf" or fmt == "svg" or fmt == "png":
    opts = {k: v for k, v in dot_options.items() if k in ("max_depth", "show_params")}
    _render_matplotlib(_graph_of(jaxpr, **opts), path, name)
    return "matplotlib"


# ---- command line ----

_DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
           "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8",
           "u32": "uint32", "bool": "bool", "c64": "complex64", "c128": "complex128"}
_SPEC = re.compile(r"\s*([a-z]+[0-9]*)\[([0-9,\s]*)\]\s*")


def parse_arg_specs(text):
  """Abstract arguments from a spec like ``"f32[3],f32[2,3],i32[]"``.

  Args:
    text: comma-separated `dtype[dims]` items (dtype: f16 bf16 f32 f64 i8 i16 i32
      i64 u8 u32 bool c64 c128; `[]` for a scalar).

  Returns:
    A list of `jax.ShapeDtypeStruct`.

  Example:
    >>> [(s.shape, str(s.dtype)) for s in parse_arg_specs("f32[3],i32[]")]
    [((3,), 'float32'), ((), 'int32')]
  """
  from tracejax._src.api import ShapeDtypeStruct
  import ml_dtypes
  specs, pos = [], 0
  text = text.strip()
  while pos < len(text):
    m = _SPEC.match(text, pos)
    if m is None or m.group(1) not in _DTYPES:
      raise ValueError(f"--args: cannot read {text[pos:]!r}; expected items like "
                       f"f32[3] or i32[] (dtypes: {', '.join(_DTYPES)}).")
    dims = tuple(int(d) for d in m.group(2).replace(" ", "").split(",") if d)
    name = _DTYPES[m.group(1)]
    dtype = ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype(name)
    specs.append(ShapeDtypeStruct(dims, dtype))
    pos = m.end()
    if pos < len(text):
      if text[pos] != ",":
        raise ValueError(f"--args: expected ',' at {text[pos:]!r}.")
      pos += 1
  return specs


def _load_function(target):
  if ":" not in target:
    raise ValueError(f"expected SCRIPT.py:FUNCTION or MODULE:FUNCTION, got {target!r}.")
  where, fname = target.rsplit(":", 1)
  from tracejax._src import jax_alias
  jax_alias.install()  # scripts written for JAX (`import jax`) work as they are
  if where.endswith(".py") or os.path.exists(where):
    if not os.path.exists(where):
      raise FileNotFoundError(f"no such file: {where}")
    import runpy
    sys.path.insert(0, os.path.dirname(os.path.abspath(where)))
    namespace = runpy.run_path(where, run_name="__tracejax_graph__")
  else:
    import importlib
    namespace = vars(importlib.import_module(where))
  obj = namespace
  for part in fname.split("."):
    try:
      obj = obj[part] if isinstance(obj, dict) else getattr(obj, part)
    except (KeyError, AttributeError):
      raise ValueError(f"{where} has no function {fname!r}.") from None
  if not callable(obj):
    raise ValueError(f"{target} is not callable.")
  return obj


def main(argv=None):
  """`graph SCRIPT.py:FUNCTION --args SPECS [-o OUT]`: draws FUNCTION's jaxpr.

  Args:
    argv: the arguments after the command name (`sys.argv[1:]` by default).

  Returns:
    The exit status (0 on success).

  Example:
    >>> main(["prog.py:f", "--args", "f32[3],f32[3]", "-o", "f.svg"])  # doctest: +SKIP
    wrote f.svg (graphviz)
    0
  """
  parser = argparse.ArgumentParser(
      prog="python -m tracejax graph",
      description="Trace FUNCTION at the given abstract arguments and write a picture of "
                  "its jaxpr (Graphviz when installed, else matplotlib).")
  parser.add_argument("target", help="SCRIPT.py:FUNCTION or MODULE:FUNCTION")
  parser.add_argument("--args", default="", help='abstract arguments, e.g. "f32[3],f32[3]"')
  parser.add_argument("-o", "--output", help="output file (.png, .svg, .pdf or .dot); "
                      "default FUNCTION.png")
  parser.add_argument("--engine", default="auto", choices=("auto", "graphviz", "matplotlib"))
  parser.add_argument("--rankdir", default="TB", choices=("TB", "LR"))
  parser.add_argument("--print", action="store_true", help="also print the jaxpr")
  opts = parser.parse_args(argv)
  try:
    specs = parse_arg_specs(opts.args)
    fun = _load_function(opts.target)
  except (ValueError, FileNotFoundError, ImportError) as e:
    print(f"tracejax graph: {e}", file=sys.stderr)
    return 2
  from tracejax._src.api import make_jaxpr
  closed = make_jaxpr(fun)(*specs)
  if opts.print:
    print(closed)
  out = opts.output or f"{opts.target.rsplit(':', 1)[1]}.png"
  try:
    engine = render(closed, out, engine=opts.engine, rankdir=opts.rankdir,
                    name=opts.target.rsplit(":", 1)[1])
  except (ValueError, RuntimeError) as e:
    print(f"tracejax graph: {e}", file=sys.stderr)
    return 2
  print(f"wrote {out} ({engine})")
  return 0
