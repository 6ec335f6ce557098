"""`phoenix-lsp doctor` checks the agent route's MCP servers (issue 25): it starts each one with a bounded time,
lists its tools with their kind under the manifest, and names what is wrong and what to change. Real
processes: the doctor command, the issues server of ``issues_server.py``, a server that never answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from phoenix_lsp.agent.doctor import DOCTOR_CONNECT_S
from phoenix_lsp.server.config import Config

from .mcp_helpers import TOKEN, TOKEN_VARIABLE, stdio_entry

ISSUES = Path(__file__).with_name("issues_server.py")
UNSET = "PHX_TEST_DOCTOR_TOKEN_NEVER_SET"


#: the doctor's bound in the test of what it lists: each test server is a Python process importing the MCP SDK
#: (about 1.3 s of CPU), three start at once beside the doctor's own client, and at a load average of 20 on two
#: cores that took more than the default 10 s once; a server that never answers is cut off at the bound in
#: test_a_server_that_never_answers_is_cut_off_at_the_bound
ROOMY_CONNECT_S = "300"


def doctor(tmp_path: Path, servers: dict[str, object], manifest: dict[str, object],
           connect_s: str | None = None) -> str:
    (tmp_path / "registry.json").write_text(json.dumps({"servers": servers}))
    (tmp_path / "capabilities.json").write_text(json.dumps(manifest))
    env = {k: v for k, v in os.environ.items() if k not in (UNSET, "PHOENIX_DOCTOR_CONNECT_S")}
    env.update({"PHOENIX_MCP_REGISTRY": str(tmp_path / "registry.json"),
                "PHOENIX_CAPABILITIES": str(tmp_path / "capabilities.json"), TOKEN_VARIABLE: TOKEN,
                "PHOENIX_DATA_DIR": str(tmp_path / "data"), "HOME": str(tmp_path)})
    if connect_s is not None:
        env["PHOENIX_DOCTOR_CONNECT_S"] = connect_s
    out = subprocess.run([sys.executable, "-m", "phoenix_lsp", "doctor"], env=env, capture_output=True,
                         text=True, timeout=900, check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.slow  # starts three MCP servers
@pytest.mark.req("REQ-AGENT-032", "REQ-AGENT-031")
def test_doctor_starts_each_server_lists_its_tools_with_their_kinds_and_names_what_is_wrong(
        tmp_path: Path) -> None:
    issues = {"command": [sys.executable, str(ISSUES)], "args": ["--data", str(tmp_path / "issues.json")]}
    locked = {**issues, "args": [*issues["args"], "--require-env", "ISSUES_TOKEN"],  # type: ignore[list-item]
              "secretsRef": {"ISSUES_TOKEN": f"env:{UNSET}"}}
    servers = {"issues": issues, "locked": locked, "records": stdio_entry(tmp_path / "records.json")}
    manifest = {"allow": ["mcp://issues/*", "mcp://records/*", "mcp://isues/typo"],
                "deny": ["mcp://records/crash"], "tools": {"mcp://issues/list_issues": {"kind": "read"}}}
    out = doctor(tmp_path, servers, manifest, connect_s=ROOMY_CONNECT_S)
    lines = out.splitlines()
    # the issues server started; each tool with its kind and where the kind came from
    assert any(line.startswith("MCP server issues (stdio, version 1.0.0): started, 7 tools") for line in lines), out
    assert "  mcp://issues/list_issues [read, from the manifest] allowed" in lines
    assert "  mcp://issues/get_issue [write, from the safe default] allowed" in lines
    # ...and why the reads count as writes, with what to change (its readOnlyHint is not trusted)
    problem = next(line for line in lines if line.startswith("  problem:") and "get_issue" in line)
    assert '"kind": "read"' in problem and '"trustAnnotations": true for issues' in problem
    # a trusted server's annotations decide; the manifest's deny shows
    assert "  mcp://records/list_records [read, from the server's readOnlyHint] allowed" in lines
    assert "  mcp://records/crash [read, from the server's readOnlyHint] not allowed by the manifest" in lines
    # what is wrong: the unset variable (its name, not "no tool"), a typo (a server that never answers: below)
    locked_line = next(line for line in lines if line.startswith("MCP server locked"))
    assert "NOT WORKING" in locked_line and UNSET in locked_line and "not set" in locked_line
    assert any("'mcp://isues/typo' matches no tool" in line for line in lines)
    assert TOKEN not in out


@pytest.mark.slow  # waits out the bound twice (10 s, then 2 s)
@pytest.mark.req("REQ-AGENT-032")
def test_a_server_that_never_answers_is_cut_off_at_the_bound(tmp_path: Path) -> None:
    """A server that never answers is NOT WORKING once the doctor's bound has passed, not after its own longer
    connectTimeoutS: 10 s by default, PHOENIX_DOCTOR_CONNECT_S when set. It never answers, so no load on the
    machine can make this pass or fail by timing."""
    silent = {"command": [sys.executable, "-c", "import time; time.sleep(600)"], "connectTimeoutS": 300}
    manifest = {"allow": ["mcp://silent/*"]}
    for connect_s, shown in ((None, "within 10 s"), ("2", "within 2 s")):
        lines = doctor(tmp_path, {"silent": silent}, manifest, connect_s=connect_s).splitlines()
        silent_line = next(line for line in lines if line.startswith("MCP server silent"))
        assert "NOT WORKING" in silent_line and shown in silent_line  # bounded, not its 300 s


@pytest.mark.req("REQ-AGENT-032", "REQ-PROTO-034")
def test_the_doctors_bound_is_a_setting_with_the_doctors_default() -> None:
    assert Config.model_fields["doctor_connect_s"].default == DOCTOR_CONNECT_S == 10.0
