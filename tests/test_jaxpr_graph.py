"""tracejax.experimental.jaxpr_graph: DOT structure, the matplotlib fallback, the CLI."""
import os
import re
import subprocess
import sys

import pytest

import tracejax as jax
import tracejax.numpy as jnp
from tracejax import lax
from tracejax.experimental import jaxpr_graph


def f(x, y):
  z = lax.cond(x[0] > 0, lambda a: a * 2.0, lambda a: a - 1.0, y)
  c, ys = lax.scan(lambda c, a: (c + a, c * a), 0.0, z)
  return c + jnp.sum(ys)


def _parse(dot):
  nodes = dict(re.findall(r'^\s*(n\d+) \[label="((?:[^"\\]|\\.)*)"', dot, re.M))
  edges = re.findall(r'^\s*(n\d+) -> (n\d+) \[label="([^"]*)"(, style=dashed)?\]', dot, re.M)
  clusters = re.findall(r'subgraph (cluster_\d+) \{\n\s*label="([^"]*)"', dot)
  return nodes, edges, clusters


def test_dot_structure_cond_and_scan():
  closed = jax.make_jaxpr(f)(jnp.ones(3), jnp.ones(3))
  dot = jaxpr_graph.jaxpr_to_dot(closed, name="f")
  assert dot.startswith('digraph "f" {') and dot.rstrip().endswith("}")
  assert dot.count("{") == dot.count("}")
  nodes, edges, clusters = _parse(dot)
  # Main jaxpr: 2 inputs + one node per equation + 1 output.
  top = closed.jaxpr
  labels = list(nodes.values())
  assert sum(lab.startswith("in ") for lab in labels) == 2 + 2 + 2  # main, branches, body
  assert [lab for lab in labels if lab.startswith("cond")] == ["cond"]
  assert sum(lab.split("\\n")[0] == "scan" for lab in labels) == 1
  n_eqns = len(top.eqns) + sum(len(b.jaxpr.eqns) if hasattr(b, "jaxpr") else len(b.eqns)
                               for e in top.eqns for b in e.params.get("branches", ()))
  assert sum(not lab.startswith(("in ", "out ", "const ")) for lab in labels) >= n_eqns
  assert sorted(lab for _, lab in clusters) == ["cond: branch 0", "cond: branch 1",
                                                "scan: body"]
  # Edges carry avals and connect known nodes; every cluster output feeds its equation.
  assert all(s in nodes and d in nodes for s, d, _, _ in edges)
  assert ("f32[3]" in {lab for _, _, lab, _ in edges}) and "bool[]" in dot
  cond_id = next(k for k, v in nodes.items() if v == "cond")
  scan_id = next(k for k, v in nodes.items() if v.startswith("scan"))
  dashed = [(s, d, lab) for s, d, lab, st in edges if st]
  assert sorted(lab for s, d, lab in dashed if d == cond_id) == ["branch 0", "branch 1"]
  assert sorted(lab for s, d, lab in dashed if d == scan_id) == ["body", "body"]
  # The output node is fed by the last equation (add), labelled with its aval.
  out_id = next(k for k, v in nodes.items() if v == "out 0: f32[]")
  assert [(nodes[s], lab) for s, d, lab, _ in edges if d == out_id] == [("add", "f32[]")]
  # max_depth=0: no clusters.
  assert "subgraph" not in jaxpr_graph.jaxpr_to_dot(closed, max_depth=0)


def test_dot_while_and_jit_clusters():
  def g(x):
    y = jax.jit(jnp.sin)(x)
    return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.0), (0, y))[1]
  _, _, clusters = _parse(jaxpr_graph.jaxpr_to_dot(jax.make_jaxpr(g)(1.0)))
  assert {lab for _, lab in clusters} >= {"while: cond", "while: body"}
  assert any(lab.endswith(": call") or "pjit" in lab for _, lab in clusters)


def test_bad_input():
  with pytest.raises(TypeError, match="Jaxpr or ClosedJaxpr"):
    jaxpr_graph.jaxpr_to_dot(lambda x: x)
  with pytest.raises(ValueError, match="path must end"):
    jaxpr_graph.render(jax.make_jaxpr(jnp.sin)(1.0), "x.jpg")
  with pytest.raises(ValueError, match="--args"):
    jaxpr_graph.parse_arg_specs("f32[3],q7[2]")


def test_matplotlib_fallback_writes_png(tmp_path):
  pytest.importorskip("matplotlib")
  out = tmp_path / "f.png"
  engine = jaxpr_graph.render(jax.make_jaxpr(f)(jnp.ones(3), jnp.ones(3)), out,
                              engine="matplotlib")
  assert engine == "matplotlib"
  assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 5000


def test_auto_engine_without_dot(tmp_path, monkeypatch):
  pytest.importorskip("matplotlib")
  import shutil
  monkeypatch.setattr(shutil, "which", lambda name: None)  # as if Graphviz were absent
  out = tmp_path / "g.svg"
  assert jaxpr_graph.render(jax.make_jaxpr(jnp.sin)(1.0), out) == "matplotlib"
  assert b"<svg" in out.read_bytes()


def test_command_line(tmp_path):
  script = tmp_path / "prog.py"
  script.write_text("import jax.numpy as jnp\n\ndef loss(w, x):\n"
                    "  return jnp.sum(jnp.tanh(w * x) ** 2)\n\n"
                    "if __name__ == '__main__':\n  raise SystemExit('not as main')\n")
  out = tmp_path / "loss.dot"
  proc = subprocess.run([sys.executable, "-m", "tracejax.experimental.jaxpr_graph",
                         f"{script}:loss", "--args", "f32[3],f32[3]", "-o", str(out)],
                        capture_output=True, text=True, timeout=120)
  assert proc.returncode == 0, proc.stderr
  assert f"wrote {out}" in proc.stdout
  assert "tanh" in out.read_text() and "in 1: f32[3]" in out.read_text()
  bad = subprocess.run([sys.executable, "-m", "tracejax.experimental.jaxpr_graph",
                        f"{script}:nope", "--args", "f32[3]"],
                       capture_output=True, text=True, timeout=120)
  assert bad.returncode == 2 and "no function 'nope'" in bad.stderr


def test_tracejax_graph_subcommand(tmp_path):
  pytest.importorskip("matplotlib")
  script = tmp_path / "prog2.py"
  script.write_text("import jax\nfrom jax import lax\n\ndef f(x, y):\n"
                    "  return lax.cond(x[0] > 0, lambda a: a * 2.0, lambda a: a, y)\n")
  out = tmp_path / "f.png"
  proc = subprocess.run([sys.executable, "-m", "tracejax", "graph", f"{script}:f",
                         "--args", "f32[3],f32[3]", "-o", str(out), "--engine", "matplotlib"],
                        capture_output=True, text=True, timeout=120)
  assert proc.returncode == 0, proc.stderr
  assert f"wrote {out} (matplotlib)" in proc.stdout
  assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_graphviz_engine(tmp_path):
  import shutil
  if shutil.which("dot") is None:
    pytest.skip("Graphviz's dot program is not installed")
  out = tmp_path / "f.svg"
  assert jaxpr_graph.render(jax.make_jaxpr(f)(jnp.ones(3), jnp.ones(3)), out) == "graphviz"
  svg = out.read_text()
  assert "<svg" in svg and "cond: branch 0" in svg and "scan: body" in svg
