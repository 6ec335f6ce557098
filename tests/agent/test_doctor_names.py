"""`phoenix-lsp doctor` names each allowed MCP tool as the model is given it in the conversation (issue 37), with
its effective kind. A real doctor process and the tracker server of ``tests/tools/tracker_server.py``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tools.tracker import TOKEN, received, tracker_env


@pytest.mark.slow  # starts an MCP server
@pytest.mark.req("REQ-MCP-007")
def test_doctor_lists_each_tool_under_its_name_in_the_conversation_with_its_kind(tmp_path: Path) -> None:
    env = {**os.environ, **tracker_env(tmp_path), "PHOENIX_DATA_DIR": str(tmp_path / "data"), "HOME": str(tmp_path),
           "PHOENIX_DOCTOR_CONNECT_S": "300"}
    manifest = json.loads(Path(env["PHOENIX_CAPABILITIES"]).read_text())
    manifest["deny"] = ["mcp://tracker/crash"]
    Path(env["PHOENIX_CAPABILITIES"]).write_text(json.dumps(manifest))
    out = subprocess.run([sys.executable, "-m", "phoenix_lsp", "doctor"], env=env, capture_output=True, text=True,
                         timeout=900, check=False)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert any(line.startswith("MCP server tracker (stdio, version 1.0.0): started") for line in lines), out.stdout
    assert "    in the conversation: mcp__tracker__list_issues (read)" in lines
    assert "    in the conversation: mcp__tracker__create_issue (write)" in lines
    assert "    in the conversation: mcp__tracker__bash (read)" in lines
    assert not any("mcp__tracker__crash" in line for line in lines), "a denied tool is not offered"
    assert TOKEN not in out.stdout + out.stderr
    assert received(tmp_path) == [], "doctor calls no tool"
