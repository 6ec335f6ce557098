"""Attacks through MCP tools in the ordinary conversation (issue 37, specs/mcp.md), through the real server and a
real MCP server of our own (``tests/tools/tracker_server.py``). The witnesses are outside the server: the
tracker's own log of the calls it received, the fake model server's recorded requests, the data directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.harness import API_KEY, Session, last_seq, session, tool_results, wait_idle
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.tools.tracker import TOKEN, received, tracker_env

pytestmark = pytest.mark.slow


async def turn(s: Session, cid: str, *calls: ToolUseBlock, answer: str = "ok") -> dict[str, dict[str, object]]:
    """One user turn in which the model makes ``calls``, then answers; the results it was given."""
    s.fake.enqueue(Reply.tool_reply(*calls), Reply.text_reply(answer))
    mark = last_seq(s, cid)
    await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "go"})
    await wait_idle(s, cid, mark, timeout=180)
    assert "".join(e["text"] for e in s.of("textDelta", cid)).endswith(answer), "the turn did not go on"
    return tool_results(s.fake.requests[-1])


@pytest.mark.req("REQ-MCP-001")
async def test_a_tool_named_like_a_built_in_one_cannot_shadow_it(fake_anthropic: FakeAnthropic,
                                                                  tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=tracker_env(tmp_path)) as s:
        cid = await s.new()
        builtin = ToolUseBlock("bash", {"command": "echo built-in bash ran"})
        theirs = ToolUseBlock("mcp__tracker__bash", {"command": "id"})
        results = await turn(s, cid, builtin, theirs)
        tools = s.fake.requests[0].body["tools"]
        named_bash = [t for t in tools if t["name"] == "bash"]
        assert len(named_bash) == 1 and "tracker" not in named_bash[0]["description"]
        assert "mcp__tracker__bash" in [t["name"] for t in tools]
        assert "built-in bash ran" in str(results[builtin.id]["content"])  # the model's "bash" is ours
        assert results[theirs.id]["content"] == "the tracker's bash ran"
        assert received(tmp_path) == ["bash"], "only the call named in its family reached the server"
        assert all(len(t["name"]) <= 64 for t in tools)


@pytest.mark.req("REQ-MCP-005", "REQ-SEC-001")
async def test_a_server_that_echoes_its_token_never_gets_it_to_the_model_or_the_data_directory(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=tracker_env(tmp_path)) as s:
        cid = await s.new()
        call = ToolUseBlock("mcp__tracker__whoami", {})
        results = await turn(s, cid, call)
        assert received(tmp_path) == ["whoami"]
        assert str(results[call.id]["content"]) == "I am the tracker; my token is [secret] (again: [secret])"
    for request in fake_anthropic.requests:
        assert TOKEN not in json.dumps(request.body), "the server's token reached the model"
    written = [p for p in (tmp_path / "data").rglob("*") if p.is_file()]
    assert written
    for path in written:
        data = path.read_bytes()
        assert TOKEN.encode() not in data and API_KEY.encode() not in data, f"a secret was written to {path.name}"


@pytest.mark.req("REQ-MCP-005", "REQ-PROTO-063")
async def test_a_64_mb_result_costs_one_tool_error_and_the_server_goes_on(fake_anthropic: FakeAnthropic,
                                                                         tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=tracker_env(tmp_path)) as s:
        cid = await s.new()
        huge = ToolUseBlock("mcp__tracker__huge", {"kb": 64 << 10})
        results = await turn(s, cid, huge)
        content = str(results[huge.id]["content"])
        assert results[huge.id].get("is_error") is True and "RESULT_TOO_LARGE" in content and len(content) < 5000
        after = ToolUseBlock("mcp__tracker__list_issues", {})
        results = await turn(s, cid, after, answer="still here")
        assert "#1 the build is red" in str(results[after.id]["content"])
        assert received(tmp_path) == ["huge", "list_issues"]
        assert all(len(json.dumps(r.body)) < 1_000_000 for r in s.fake.requests)


@pytest.mark.req("REQ-MCP-005", "REQ-SEC-005")
async def test_a_result_10000_levels_deep_costs_one_tool_error(fake_anthropic: FakeAnthropic,
                                                               tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=tracker_env(tmp_path)) as s:
        cid = await s.new()
        deep = ToolUseBlock("mcp__tracker__deep", {"levels": 10_000})
        results = await turn(s, cid, deep)
        content = str(results[deep.id]["content"])
        assert results[deep.id].get("is_error") is True and "deep" in content.lower(), content[:300]
        assert received(tmp_path) == ["deep"]


@pytest.mark.req("REQ-MCP-005")
async def test_a_server_that_hangs_costs_one_tool_error_at_the_call_timeout(fake_anthropic: FakeAnthropic,
                                                                          tmp_path: Path) -> None:
    """The call never gets an answer (the server sleeps ten minutes), so no load on the machine can make this pass
    or fail by timing: the turn goes on after PHOENIX_MCP_CALL_TIMEOUT_S."""
    env = {**tracker_env(tmp_path), "PHOENIX_MCP_CALL_TIMEOUT_S": "3"}
    async with session(fake_anthropic, tmp_path, env=env) as s:
        cid = await s.new()
        hang = ToolUseBlock("mcp__tracker__slow", {"seconds": 600})
        after = ToolUseBlock("mcp__tracker__list_issues", {})
        results = await turn(s, cid, hang, after)
        content = str(results[hang.id]["content"])
        assert results[hang.id].get("is_error") is True and "TIMEOUT" in content and "3 s" in content, content
        assert "#1 the build is red" in str(results[after.id]["content"])
        assert received(tmp_path) == ["slow", "list_issues"]


@pytest.mark.req("REQ-MCP-005")
async def test_a_server_that_dies_costs_one_tool_error_and_is_started_again(fake_anthropic: FakeAnthropic,
                                                                            tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=tracker_env(tmp_path)) as s:
        cid = await s.new()
        crash = ToolUseBlock("mcp__tracker__crash", {})
        after = ToolUseBlock("mcp__tracker__list_issues", {})
        results = await turn(s, cid, crash, after)
        assert results[crash.id].get("is_error") is True and "UNAVAILABLE" in str(results[crash.id]["content"])
        assert "#1 the build is red" in str(results[after.id]["content"])
        assert received(tmp_path) == ["crash", "list_issues"]
