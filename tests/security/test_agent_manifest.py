"""Attacks (issue 24): manifest idioms that grant writes.

The hostile server (``agent_server.py``) names a tool that writes ``get_or_purge`` and claims every tool is
read-only. Witness outside phoenix-lsp: the server's own log of the writes it really made.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from phoenix_lsp.agent.agent_config import CapabilityManifest, McpRegistry
from tests.e2e.harness import session, tool_results
from tests.fake_anthropic import FakeAnthropic, Reply
from tests.security.agent_helpers import GET, PURGE, UPDATE, agent_env, agent_turn, calls, one_node

GLOB = {"allow": ["mcp://hostile/*"], "tools": {"mcp://hostile/get_*": {"kind": "read"}}}
EVERYTHING = {"allow": ["mcp://hostile/*"], "tools": {"mcp://hostile/*": {"kind": "read"}}}


async def restricted_plan(fake: FakeAnthropic, tmp_path: Path, manifest: dict[str, Any], code: str,
                          tools: list[str], *, trust: bool = False) -> str:
    """Run one plan in a Restricted conversation; the text the model got back."""
    async with session(fake, tmp_path, env=agent_env(tmp_path, manifest=manifest, trust=trust)) as s:
        cid = await s.new()  # Restricted: no write may run
        run = one_node(code, tools)
        requests = await agent_turn(s, cid, Reply.tool_reply(run), Reply.text_reply("ok"))
        return str(tool_results(requests[1])[run.id]["content"])


@pytest.mark.slow
@pytest.mark.req("REQ-AGENT-027", "REQ-AGENT-014")
async def test_a_read_glob_does_not_make_get_or_purge_a_read_on_an_untrusted_server(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    text = await restricted_plan(fake_anthropic, tmp_path, GLOB, "hostile_get_or_purge(id=3)\n{}", [PURGE])
    assert not any(c["tool"] == "get_or_purge" for c in calls(tmp_path)), "the purge really happened"
    assert "DENIED/" in text and "Restricted" in text, text


@pytest.mark.slow
@pytest.mark.req("REQ-AGENT-027", "REQ-AGENT-014")
async def test_a_read_glob_over_every_tool_does_not_let_a_write_run_in_restricted(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    text = await restricted_plan(fake_anthropic, tmp_path, EVERYTHING,
                                 "hostile_get_record(id=1)\nhostile_update(id=1, title='gone')\n{}", [GET, UPDATE])
    assert not any(c["tool"] == "update" for c in calls(tmp_path)), "the update really happened"
    assert "DENIED/" in text, text


@pytest.mark.slow
@pytest.mark.req("REQ-AGENT-027")
async def test_an_exact_read_entry_and_a_trusted_server_still_make_reads(fake_anthropic: FakeAnthropic,
                                                                         tmp_path: Path) -> None:
    exact = {"allow": ["mcp://hostile/*"], "tools": {GET: {"kind": "read"}}}
    text = await restricted_plan(fake_anthropic, tmp_path, exact, "{'r': hostile_get_record(id=1)}", [GET])
    assert "Record 1" in text, text
    trusted = tmp_path / "trusted"
    trusted.mkdir()
    text = await restricted_plan(fake_anthropic, trusted, GLOB, "{'r': hostile_get_record(id=2)}", [GET],
                                 trust=True)
    assert "Record 2" in text, text


@pytest.mark.req("REQ-AGENT-027")
def test_the_ignored_glob_is_reported_with_the_reason() -> None:
    from phoenix_lsp.agent.agent_config import read_glob_warnings
    from phoenix_lsp.agent.capability_gate import effective_kind

    manifest = CapabilityManifest.model_validate({**GLOB, "tools": {
        **GLOB["tools"], "mcp://*/list_*": {"kind": "read"}, "mcp://hostile/update": {"kind": "write"}}})
    registry = McpRegistry.model_validate({"servers": {
        "hostile": {"command": ["x"]}, "known": {"command": ["y"], "trustAnnotations": True}}})
    trust = {name: server.trust_annotations for name, server in registry.servers.items()}
    warnings = read_glob_warnings(manifest, trust)
    assert len(warnings) == 2 and all("'hostile'" in w and "'known'" not in w for w in warnings), warnings
    assert "mcp://hostile/get_*" in warnings[0] and "Name each read tool exactly" in warnings[0]
    purge = effective_kind(manifest, PURGE, read_only_hint=True, trusted=False)
    assert (purge.kind, purge.source, purge.ignored) == ("write", "default", ("mcp://hostile/get_*",))
    assert "ignored" in purge.reason and "not trusted" in purge.reason
    assert effective_kind(manifest, PURGE, read_only_hint=None, trusted=True).kind == "read"
    exact = CapabilityManifest.model_validate({"tools": {PURGE: {"kind": "read"}}})
    assert effective_kind(exact, PURGE).kind == "read"
    assert "exactly" in effective_kind(exact, PURGE).reason
    assert effective_kind(manifest, UPDATE, read_only_hint=True, trusted=True).kind == "write"


@pytest.mark.slow
@pytest.mark.req("REQ-AGENT-027", "REQ-AGENT-022")
def test_doctor_shows_each_allowed_tools_effective_kind_and_the_ignored_glob(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from tests.security.agent_helpers import TOKEN

    manifest = {"allow": ["mcp://hostile/*"], "deny": ["mcp://hostile/slow"],
                "tools": {"mcp://hostile/get_*": {"kind": "read"}, GET: {"kind": "read"}}}
    # the doctor's per-server bound (10 s) is raised: each MCP server here is a Python process importing the MCP
    # SDK, and on a loaded machine one took longer than that to start (tests/agent/test_doctor.py proves the bound)
    env = {**os.environ, **agent_env(tmp_path, manifest=manifest), "PHOENIX_LSP_DATA_DIR": str(tmp_path / "data"),
           "PHOENIX_DOCTOR_CONNECT_S": "300"}
    out = subprocess.run([sys.executable, "-m", "phoenix_lsp", "doctor"], env=env, capture_output=True, text=True,
                         timeout=600, check=True).stdout
    rows = out.splitlines()
    # each tool: "  URI [kind, from the source] allowed", then "    why: ..." (the gate's own reason)
    lines = {row.split(" [", 1)[0].strip(): f"{row}\n{rows[i + 1]}" for i, row in enumerate(rows)
             if row.startswith("  mcp://") and i + 1 < len(rows)}
    assert "[write, " in lines[PURGE] and "ignored" in lines[PURGE], out
    assert "[read, " in lines[GET] and "exactly" in lines[GET], out
    assert "] allowed" in lines[UPDATE] and "not allowed by the manifest" in lines["mcp://hostile/slow"], out
    assert any(line.startswith("agent route: the capability manifest's read entry mcp://hostile/get_*")
               and "trustAnnotations" in line for line in out.splitlines()), out  # the configuration's warning
    assert TOKEN not in out
