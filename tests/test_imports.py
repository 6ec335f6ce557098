"""The import graph of ``phoenix_lsp`` (REQ-PROTO-053), read from the source by ``scripts/imports.py``, the script
anyone can run to see it: no circle, and the runtime and the adapters never import each other."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.req("REQ-PROTO-053")

#: the modules that speak a protocol to a client (server/adapter.py's other side)
ADAPTERS = {f"phoenix_lsp.server.{name}" for name in ("lsp", "plain", "edits", "sight", "confirm", "transport")}
RUNTIME = "phoenix_lsp.server.runtime"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("imports_script", ROOT / "scripts" / "imports.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_no_import_circle() -> None:
    script = _script()
    circles = script.circles(script.edges())
    assert circles == [], "import circles (python scripts/imports.py shows every edge):\n" + "\n".join(
        " <-> ".join(c) for c in circles)


def test_the_runtime_and_the_adapters_do_not_import_each_other() -> None:
    edges = _script().edges()
    crossing = [e for e in edges
                if (e.source in ADAPTERS and (e.target == RUNTIME or e.target.startswith(RUNTIME + ".")))
                or (e.source.startswith(RUNTIME) and e.target in ADAPTERS)]
    assert crossing == []


def test_the_script_sees_a_circle_and_an_import_inside_a_function(tmp_path: Path) -> None:
    """The check is only as good as the graph: a circle made of an import under TYPE_CHECKING and one inside a
    function is found."""
    package = tmp_path / "phoenix_lsp"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import b\n")
    (package / "b.py").write_text("def f():\n    from .a import x\n")
    script = _script()
    found = script.edges(tmp_path)
    assert {(e.source, e.target, e.how) for e in found} == {
        ("phoenix_lsp.a", "phoenix_lsp.b", "tc"), ("phoenix_lsp.b", "phoenix_lsp.a", "fn")}
    assert script.circles(found) == [["phoenix_lsp.a", "phoenix_lsp.b"]]
