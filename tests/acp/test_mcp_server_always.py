"""ACP's Always Allow for a whole MCP server (issue 37, REQ-MCP-020), driven by the ACP SDK's client side: an MCP
write's ``session/request_permission`` offers the tool's Always Allow and its server's, under distinct option ids
and names that say which; choosing the server's covers that server's other write without asking, and not another
server's tool. The witnesses are the MCP servers' own logs of the calls they received."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from tests.acp.harness import TIMEOUT, Asked, Editor, agent
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.tools.tracker import SERVER, TOKEN, TOKEN_VARIABLE, log_path, tracker_env
from tests.tools.tracker import received as tracker_received

pytestmark = pytest.mark.slow  # the agent and two MCP servers run as subprocesses


def two_trackers_env(tmp_path: Path) -> dict[str, str]:
    """The tracker, and a second copy of it named ``billing`` with its own log; every tool a write but the
    reads the tracker's manifest names."""
    env = tracker_env(tmp_path)
    registry = json.loads(Path(env["PHOENIX_MCP_REGISTRY"]).read_text())
    registry["servers"]["billing"] = {
        "command": [sys.executable, str(SERVER)], "args": ["--log", str(billing_log(tmp_path))],
        "secretsRef": {"TRACKER_TOKEN": f"env:{TOKEN_VARIABLE}"}, "connectTimeoutS": 60}
    Path(env["PHOENIX_MCP_REGISTRY"]).write_text(json.dumps(registry))
    capabilities = Path(env["PHOENIX_CAPABILITIES"])
    manifest = json.loads(capabilities.read_text())
    manifest["allow"].append("mcp://billing/*")
    capabilities.write_text(json.dumps(manifest))
    return env


def billing_log(tmp_path: Path) -> Path:
    return tmp_path / "billing-calls.jsonl"


def billing_received(tmp_path: Path) -> list[str]:
    path = billing_log(tmp_path)
    return [json.loads(line)["tool"] for line in path.read_text().splitlines() if line] if path.exists() else []


@pytest.mark.req("REQ-MCP-020", "REQ-MCP-004")
async def test_always_allow_for_the_whole_server_covers_its_other_write_and_no_other_server(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    def answer(asked: Asked) -> str | None:
        if asked.tool_call.tool_call_id == "toolu_c1":  # the server's option, found by its name
            return str(next(o.option_id for o in asked.options if o.name == "Always allow every tool of tracker"))
        return str(next(o.option_id for o in asked.options if o.kind == "reject_once"))

    editor = Editor(answer=answer)
    create = ToolUseBlock("mcp__tracker__create_issue", {"title": "one"}, id="toolu_c1")
    close = ToolUseBlock("mcp__tracker__close_issue", {"id": 2}, id="toolu_c2")
    other = ToolUseBlock("mcp__billing__create_issue", {"title": "invoice"}, id="toolu_b1")
    fake_anthropic.enqueue(Reply.tool_reply(create), Reply.tool_reply(close), Reply.tool_reply(other),
                           Reply.text_reply("done"))
    async with agent(fake_anthropic, tmp_path, editor, env=two_trackers_env(tmp_path)) as a:
        session = await a.new()
        sid = session.session_id
        await asyncio.wait_for(a.conn.set_session_mode(session_id=sid, mode_id="unrestricted"), TIMEOUT)
        done = await asyncio.wait_for(a.prompt(sid, "file, close, bill"), TIMEOUT * 3)
        assert done.stop_reason == "end_turn"
    first = editor.asked[0]
    options = {o.option_id: (o.name, o.kind) for o in first.options}
    always = [(name, kind) for name, kind in options.values() if kind == "allow_always"]
    assert always == [("Always allow create_issue", "allow_always"),
                      ("Always allow every tool of tracker", "allow_always")], options
    assert len(options) == len(first.options), "each option has its own id"
    # the tracker's other write ran without a question; the other server's write was asked about (and rejected)
    assert [asked.tool_call.tool_call_id for asked in editor.asked] == ["toolu_c1", "toolu_b1"]
    assert tracker_received(tmp_path) == ["create_issue", "close_issue"]
    assert billing_received(tmp_path) == [], "the tracker's rule reached another server's tool"
    assert log_path(tmp_path).exists() and TOKEN not in json.dumps([str(u) for u in editor.updates])
