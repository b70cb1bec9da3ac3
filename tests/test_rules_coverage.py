"""Every primitive has its rules: lowering, JVP (or a written exemption), transpose when
linear, batching (or a written exemption)."""
import importlib
import pkgutil

import pytest

import tracejax._src.lax as lax_pkg
from tracejax._src import custom_derivatives, jit
from tracejax._src.core.trace import Primitive
from tracejax._src.interpreters import ad, batching, lowering

# name -> why it needs no such rule
NO_JVP = {
    "custom_lin": "linear by construction; reverse mode transposes it with the user's bwd",
    "xla_call": "handled generically: jvp of the called jaxpr",
    "scatter_apply": "JAX raises 'scatter_apply JVP not implemented' (an arbitrary update "
                     "function has no derivative rule)",
    "select_and_scatter": "JAX has none either; only select_and_scatter_add (max-pool's "
                          "transpose) is differentiated",
    "pmax": "JAX 0.10.2 raises \"Differentiation rule for 'pmax' not implemented\"",
    "pmin": "JAX 0.10.2 raises \"Differentiation rule for 'pmin' not implemented\"",
}
NO_BATCH = {
    "custom_lin": "only ever staged into a linear jaxpr, then transposed",
    "xla_call": "handled generically: batch the called jaxpr",
}
NO_LOWERING = {
    "custom_lin": "never executed forward; transposed away before lowering",
}


def all_primitives():
  prims = {}
  mods = [custom_derivatives, jit, ad]
  for info in pkgutil.iter_modules(lax_pkg.__path__):
    mods.append(importlib.import_module(f"tracejax._src.lax.{info.name}"))
  for m in mods:
    for v in vars(m).values():
      if isinstance(v, Primitive):
        prims[v.name] = v
  return prims


PRIMS = all_primitives()


@pytest.mark.parametrize("name", sorted(PRIMS))
def test_rules_exist(name):
  p = PRIMS[name]
  missing = []
  if name not in NO_LOWERING and not lowering.has_lowering(p):
    missing.append("lowering")
  if name not in NO_JVP and p not in ad.primitive_jvps:
    missing.append("jvp")
  if p in ad.linear_primitives and p not in ad.primitive_transposes:
    missing.append("transpose")
  if name not in NO_BATCH and p not in batching.primitive_batchers:
    missing.append("batching")
  assert not missing, f"{name} lacks: {', '.join(missing)}"
