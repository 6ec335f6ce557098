"""REQ-PROTO-055, shown in one place: the published schema with one more event kind and one more tool, and each
consumer's own comparison reports exactly what is missing: the Python tables (``protocol.kinds``), the VS Code
extension's Records (its TypeScript, bundled by esbuild and run by node) and the Neovim plugin's event tables
(``events.check`` in headless Neovim). With the schema as published, every comparison is empty.

Each consumer's own tests (tests/protocol/test_kinds.py, vscode-extension/test/kinds.test.ts,
tests/clients/nvim/test_kinds.py) check the same against the schema, and what an unknown kind does at run time.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from phoenix_lsp.client.events import NESTED, SHOWN
from phoenix_lsp.protocol.kinds import table_problems
from phoenix_lsp.server import plain
from phoenix_lsp.server.acp import updates

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = ROOT / "vscode-extension"
SCHEMA = json.loads((ROOT / "specs" / "protocol.schema.json").read_text())


def _grown() -> dict[str, Any]:
    grown = json.loads(json.dumps(SCHEMA))
    grown["$defs"]["PhoenixEvent"]["discriminator"]["mapping"]["fakeKind"] = "#/$defs/FakeKind"
    grown["$defs"]["ToolName"]["enum"].append("fake_tool")
    return grown


def _kinds(schema: dict[str, Any]) -> tuple[list[str], list[str]]:
    return list(schema["$defs"]["PhoenixEvent"]["discriminator"]["mapping"]), list(schema["$defs"]["ToolName"]["enum"])


def _needs(tool: str) -> str:
    if os.environ.get("PHOENIX_SKIP_CLIENT_TESTS") == "1":
        pytest.skip("PHOENIX_SKIP_CLIENT_TESTS=1: the editor client tests are switched off")
    path = shutil.which(tool)
    if path is None:
        pytest.fail(f"{tool} is not installed: run scripts/install-test-deps.sh (or set PHOENIX_SKIP_CLIENT_TESTS=1)")
    return path


def python_problems(schema: dict[str, Any]) -> list[str]:
    events, tools = _kinds(schema)
    found = []
    for name, table in {"LIVE": updates.LIVE, "EVENTS": plain.EVENTS, "SHOWN": SHOWN, "NESTED": NESTED}.items():
        found += table_problems(name, table, events)
    for name, table in {"KINDS": updates.KINDS, "TITLES": updates.TITLES, "TOOL_WORDS": plain.TOOL_WORDS}.items():
        found += table_problems(name, table, tools)
    return found


TS_ENTRY = """
import { readFileSync } from "node:fs";
import { tableProblems } from "EXT/src/core/kinds";
import { EVENT_HANDLING } from "EXT/src/core/reducer";
import { TOOL_ICONS } from "EXT/src/webview/timeline";
const schema = JSON.parse(readFileSync(process.argv[2], "utf8"));
const events = Object.keys(schema.$defs.PhoenixEvent.discriminator.mapping);
process.stdout.write(JSON.stringify([
  ...tableProblems("EVENT_HANDLING", Object.keys(EVENT_HANDLING), events),
  ...tableProblems("TOOL_ICONS", Object.keys(TOOL_ICONS), schema.$defs.ToolName.enum),
]));
"""


def typescript_problems(schema: dict[str, Any], tmp: Path) -> list[str]:
    node = _needs("node")
    esbuild = EXTENSION / "node_modules" / ".bin" / "esbuild"
    if not esbuild.exists():
        pytest.fail("vscode-extension/node_modules is missing: run scripts/install-vscode-extension-deps.sh")
    entry, bundle, schema_file = tmp / "kinds.ts", tmp / "kinds.js", tmp / "schema.json"
    entry.write_text(TS_ENTRY.replace("EXT", EXTENSION.as_posix()))
    schema_file.write_text(json.dumps(schema))
    subprocess.run([str(esbuild), str(entry), "--bundle", "--platform=node", "--log-level=error",
                    f"--outfile={bundle}"], check=True, cwd=EXTENSION, timeout=120)
    done = subprocess.run([node, str(bundle), str(schema_file)], capture_output=True, text=True, check=True,
                          timeout=120)
    return list(json.loads(done.stdout))


LUA = """
local ok, err = pcall(function()
  local kinds = vim.json.decode(table.concat(vim.fn.readfile("SCHEMA"), "\\n"))
  local events = {}
  for kind in pairs(kinds["$defs"].PhoenixEvent.discriminator.mapping) do table.insert(events, kind) end
  vim.fn.writefile({ vim.json.encode(require("phoenix.events").check(events)) }, "OUT")
end)
if not ok then vim.fn.writefile({ vim.json.encode({ "error: " .. tostring(err) }) }, "OUT") end
vim.cmd("qa!")
"""


def lua_problems(schema: dict[str, Any], tmp: Path) -> list[str]:
    nvim = _needs("nvim")
    schema_file, out, script = tmp / "schema.json", tmp / "lua-out.json", tmp / "kinds.lua"
    schema_file.write_text(json.dumps(schema))
    script.write_text(LUA.replace("SCHEMA", schema_file.as_posix()).replace("OUT", out.as_posix()))
    subprocess.run([nvim, "--headless", "--clean", "--cmd", f"set runtimepath^={ROOT / 'nvim'}",
                    "-c", f"luafile {script}"], capture_output=True, check=False, timeout=120,
                   env={**os.environ, "HOME": str(tmp)})
    return list(json.loads(out.read_text()))


def _missing(problems: list[str]) -> set[str]:
    """The kinds each problem says are not handled."""
    return {p.split("the kind '")[1].split("'")[0] for p in problems if "does not handle the kind" in p}


@pytest.mark.req("REQ-PROTO-055")
def test_one_more_kind_in_the_schema_fails_every_consumers_check(tmp_path: Path) -> None:
    assert python_problems(SCHEMA) == []
    assert typescript_problems(SCHEMA, tmp_path) == []
    assert lua_problems(SCHEMA, tmp_path) == []
    grown = _grown()
    python, typescript, lua = (python_problems(grown), typescript_problems(grown, tmp_path),
                               lua_problems(grown, tmp_path))
    assert len(python) == 7 and _missing(python) == {"fakeKind", "fake_tool"}, python
    assert len(typescript) == 2 and _missing(typescript) == {"fakeKind", "fake_tool"}, typescript
    assert lua == ["events.lua does not handle the kind 'fakeKind': add it to M.handle or M.ignored"], lua
