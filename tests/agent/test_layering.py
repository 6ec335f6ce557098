"""The pure core knows nothing of the agent engine (it runs no code and spawns nothing)."""

from __future__ import annotations

import ast
import pathlib

import pytest

import phoenix_lsp.core

CORE = pathlib.Path(phoenix_lsp.core.__file__).parent


@pytest.mark.req("REQ-AGENT-007")
def test_the_core_imports_nothing_of_the_agent_engine() -> None:
    for path in CORE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [("." * node.level) + (node.module or "")]
            for name in names:
                assert "agent" not in name.split(".") and "pydantic_monty" not in name, f"{path.name}: {name}"
