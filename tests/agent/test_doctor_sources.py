"""`phoenix-lsp doctor` lists each MCP server with where it came from and whether the user approved it
(REQ-MCP-011): the user-level file's and an approved project server started with their tools, a project server
not approved never started (its command's witness file is absent). Real processes: the doctor command and the
tests' tracker server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from phoenix_lsp.agent.mcp_consent_store import ConsentStore
from phoenix_lsp.agent.mcp_sources import digest
from phoenix_lsp.core.mcp_consent import Consent
from tests.tools.tracker import TOKEN, project_server, starts


@pytest.mark.slow  # starts two MCP servers
@pytest.mark.req("REQ-MCP-011")
def test_doctor_lists_each_server_its_source_and_whether_it_is_approved(tmp_path: Path) -> None:
    work, config, data = tmp_path / "work", tmp_path / "config", tmp_path / "data"
    work.mkdir()
    config.mkdir()
    mine = project_server(tmp_path / "mine-dir", label="mine")
    (tmp_path / "mine-dir").mkdir()
    (config / "mcp.json").write_text(json.dumps({"mcpServers": {"mine": mine}}))
    approved = project_server(tmp_path, label="approved")
    pending = {"command": "sh", "args": ["-c", f"echo ran > {tmp_path / 'pending-ran.txt'}"],
               "env": {"PENDING_TOKEN": "pending-secret-value"}}
    (work / ".mcp.json").write_text(json.dumps({"mcpServers": {"approved": approved, "pending": pending,
                                                               "broken": {"args": []}}}))
    ConsentStore(data).record(digest(work, "approved", approved), Consent.APPROVED, name="approved", folder=work)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PHOENIX_")}
    env.update({"PHOENIX_LSP_DATA_DIR": str(data), "PHOENIX_CONFIG_DIR": str(config), "HOME": str(tmp_path),
                "PHOENIX_DOCTOR_CONNECT_S": "300"})
    out = subprocess.run([sys.executable, "-m", "phoenix_lsp", "doctor"], cwd=work, env=env, capture_output=True,
                         text=True, timeout=900, check=False)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert f"MCP server mine (stdio, from {config / 'mcp.json'}" in text, text
    assert f"MCP server approved (stdio, from {work / '.mcp.json'}, approved by you" in text, text
    assert "mcp__approved__list_issues" in text and "mcp__mine__list_issues" in text
    assert "MCP server pending (from" in text and "not approved yet" in text and "PENDING_TOKEN" in text
    assert "mcpServers.broken" in text
    assert not (tmp_path / "pending-ran.txt").exists(), "doctor started a server the user never approved"
    assert starts(tmp_path) == 1 and starts(tmp_path / "mine-dir") == 1
    assert TOKEN not in text and "pending-secret-value" not in text
