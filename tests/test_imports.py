"""The import graph of ``phoenix_lsp`` (REQ-PROTO-053), read from the source by ``scripts/imports.py``, the script
anyone can run to see it: no circle, the runtime and the adapters never import each other, and imports are lazy
only on the boot line (the modules that answer ``initialize``), where start-up lightness (REQ-PROTO-050) is kept."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.req("REQ-PROTO-053")

#: the modules that speak a protocol to a client (server/adapter.py's other side)
ADAPTERS = {f"phoenix_lsp.server.{name}" for name in ("lsp", "plain", "edits", "sight", "confirm", "transport")} | {
    f"phoenix_lsp.server.acp.{name}" for name in ("agent", "client", "session", "updates", "asking", "files", "prompt",
                                                                 "sender", "mcp")} | {
    f"phoenix_lsp.server.run.{name}" for name in ("client", "files", "prompt", "exits")}
RUNTIME = "phoenix_lsp.server.runtime"
PROTOCOL = "phoenix_lsp.protocol"

#: what runs before ``initialize`` is answered: the command line (with its parser), the server with its dispatchers,
#: and the sandbox probe the InitializeResult reports
BOOT = ("import sys; import phoenix_lsp.cli as cli; cli._parser(); import phoenix_lsp.server.app; "
        "from phoenix_lsp.sandbox import probe; print(' '.join(sorted(sys.modules)))")

_MCP = ("the MCP SDK takes about 0.7 s to import: it loads with the first MCP call, not in initialized, where the "
        "agent route is set up without it (agent_route.setup_route)")
#: lazy imports below the boot line, each with why it stays lazy
ALLOWED: dict[tuple[str, str], str] = {
    ("phoenix_lsp.agent.engine", "phoenix_lsp.agent.monty_engine"):
        "the engine is chosen by configuration (REQ-AGENT-007): monty's worker machinery loads only when chosen",
    ("phoenix_lsp.sandbox.denylist", "phoenix_lsp.store.paths"):
        "the store package (SQLite, migrations) is heavy to import; the deny-read list needs only its default "
        "data directory",
    ("phoenix_lsp.server.agent_route", "phoenix_lsp.agent.mcp_hub"): _MCP,
    ("phoenix_lsp.server.conversation_agent", "phoenix_lsp.agent.mcp_tools"): _MCP,
}
#: imports inside functions in the whole package (the standard library's and other packages' too), each with its
#: reason on its line (``# lazy: ...``): start-up (the boot line, each command of cli.py) or an optional dependency
MOST_INSIDE = 20


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


def test_the_wire_models_import_only_the_core() -> None:
    """The wire models (``protocol/``, with the agent route's contracts) sit below every room that speaks them:
    the schema is generated from them alone, so no import runs back up into the agent route or the server."""
    upward = [f"{e.source} -> {e.target} (line {e.line})" for e in _script().edges()
              if (e.source == PROTOCOL or e.source.startswith(PROTOCOL + "."))
              and not e.target.startswith((PROTOCOL, "phoenix_lsp.core"))]
    assert upward == [], "protocol/ imports above itself:\n" + "\n".join(upward)


def test_imports_are_lazy_only_on_the_boot_line() -> None:
    """Laziness lives in the modules that answer initialize; the features load once, on the boot line
    (``lifecycle.load``), and everything they import is imported at the top, but for ``ALLOWED``."""
    loaded = subprocess.run([sys.executable, "-c", BOOT], capture_output=True, text=True, check=True, cwd=ROOT)
    boot_line = set(loaded.stdout.split())
    assert "phoenix_lsp.server.runtime" not in boot_line and "pydantic" not in boot_line  # REQ-PROTO-050
    below = {f"phoenix_lsp.server.{name}" for name in ("served", "requests", "plain", "commands", "confirm", "errors")}
    assert sorted(boot_line & below) == [], "the features load on the boot line, not before initialize"
    assert [m for m in boot_line if m.startswith("phoenix_lsp.server.features.")] == [
        "phoenix_lsp.server.features.lifecycle"]
    lazy = {(e.source, e.target) for e in _script().edges() if e.how != "top"}
    below_line = {pair for pair in lazy if pair[0] not in boot_line}
    assert sorted(below_line - set(ALLOWED)) == [], "lazy imports below the boot line: import them at the top"
    assert sorted(set(ALLOWED) - below_line) == [], "ALLOWED names imports that are no longer lazy: remove them"


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


def test_imports_inside_functions_are_few_and_each_says_why() -> None:
    """``python scripts/imports.py --inside`` lists them: at most ``MOST_INSIDE``, each with ``# lazy:`` and its
    reason on its line, so an import moved into a function for no reason of start-up or an optional dependency
    is seen."""
    within = _script().inside()
    listing = "\n".join(f"{i.path.relative_to(ROOT)}:{i.line}: {i.text}" for i in within)
    assert len(within) <= MOST_INSIDE, f"{len(within)} imports inside functions, at most {MOST_INSIDE}:\n{listing}"
    silent = [f"{i.path.relative_to(ROOT)}:{i.line}: {i.text}" for i in within if not i.reason]
    assert silent == [], "imports inside functions without '# lazy: <reason>' on their line:\n" + "\n".join(silent)


def test_the_count_sees_every_import_inside_a_function(tmp_path: Path) -> None:
    """Standard library, other packages and the package's own, in a method, a nested function and through
    ``import_module``; an import at the top or under TYPE_CHECKING is not one; the reason is read from the line."""
    package = tmp_path / "phoenix_lsp"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text(
        "import json\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import os\n"
        "def f():\n    import re  # lazy: a reason\n    def g():\n        from . import b\n"
        "class C:\n    def m(self):\n        import importlib\n        importlib.import_module('x')\n")
    (package / "b.py").write_text("")
    found = _script().inside(tmp_path)
    assert [(i.path.name, i.line, i.reason) for i in found] == [
        ("a.py", 6, "a reason"), ("a.py", 8, ""), ("a.py", 11, ""), ("a.py", 12, "")]


def test_each_package_file_over_300_lines_says_why() -> None:
    """``python scripts/imports.py --sizes`` lists them: a file over 300 lines is split by job, or its module
    docstring has a line starting "Over 300 lines:" with the reason it is one file."""
    script = _script()
    silent = [f"{path.relative_to(ROOT)} ({count} lines)" for path, count, reason in script.sizes() if not reason]
    assert silent == [], (f"over {script.LONG} lines without '{script.OVER}: <reason>' in the module docstring "
                          "(split the file by job, or say why it is one):\n" + "\n".join(silent))


def test_the_size_check_reads_the_reason_from_the_docstring(tmp_path: Path) -> None:
    package = tmp_path / "phoenix_lsp"
    package.mkdir()
    (package / "__init__.py").write_text("")
    filler = "x = 1\n" * 300
    (package / "said.py").write_text('"""A module.\n\nOver 300 lines: one table.\n"""\n' + filler)
    (package / "silent.py").write_text('"""A module; over 300 lines: not at a line\'s start."""\n' + filler)
    (package / "comment.py").write_text("# Over 300 lines: a comment is no docstring\n" + filler)
    (package / "short.py").write_text("x = 1\n" * 300)
    found = {path.name: reason for path, _, reason in _script().sizes(tmp_path)}
    assert found == {"said.py": "one table.", "silent.py": "", "comment.py": ""}
