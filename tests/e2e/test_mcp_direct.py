"""End-to-end: MCP tools in the ordinary conversation (issue 37, specs/mcp.md), through the real server with a
real MCP server of our own (``tests/tools/tracker_server.py`` over stdio, started from the registry), on both
providers' real SDKs against the fake model servers. The tracker's own log says which calls reached it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import last_seq, session, tool_results, wait_idle
from tests.e2e.test_providers import Model, send, started
from tests.e2e.test_write_patch import unrestricted
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.tools.tracker import received, tracker_env

pytestmark = pytest.mark.slow

LIST = "mcp__tracker__list_issues"
CREATE = "mcp__tracker__create_issue"
CLOSE = "mcp__tracker__close_issue"


def offered(body: dict[str, Any]) -> dict[str, Any]:
    """name -> definition, in either provider's form."""
    out = {}
    for tool in body.get("tools", []):
        definition = tool.get("function", tool)
        out[definition["name"]] = definition
    return out


@pytest.mark.req("REQ-MCP-002", "REQ-MCP-003", "REQ-MCP-006")
@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_a_read_runs_without_asking_in_restricted_on_every_provider(
        provider: str, fake_anthropic: FakeAnthropic, fake_openai: Any, tmp_path: Path) -> None:
    model = Model(provider, fake_anthropic, fake_openai)
    call = ToolUseBlock(LIST, {}, id="toolu_list1")
    model.enqueue(Reply.tool_reply(call), Reply.text_reply("Two issues are open."), Reply.text_reply("Still two."))
    async with started(model, tmp_path, env=tracker_env(tmp_path)) as s:
        cid = await s.new()  # Restricted: the sandbox exists here
        await wait_idle(s, cid, await send(s, cid, "what is open in the tracker?"), timeout=120)
        await wait_idle(s, cid, await send(s, cid, "and now?"), timeout=60)
        assert received(tmp_path) == ["list_issues"]
        text, is_error = model.results(1)["toolu_list1"]
        assert not is_error and "#1 the build is red" in text
        assert not s.of("approvalRequested", cid)
        starts = s.of("toolStart", cid)
        assert [e["toolName"] for e in starts] == [LIST] and starts[0]["mode"] == "restricted"
        ends = s.of("toolEnd", cid)
        assert len(ends) == 1 and "#1 the build is red" in ends[0]["summary"] and not ends[0]["isError"]
        requests = model.requests
        tools = offered(requests[0].body)
        assert {LIST, CREATE, CLOSE, "mcp__tracker__bash", "bash"} <= set(tools)
        schema = tools[CREATE].get("input_schema") or tools[CREATE].get("parameters")
        assert schema["properties"]["title"]["type"] == "string" and schema["required"] == ["title"]
        assert tools[LIST]["description"] == "The open issues of the tracker."
        # after the built-in tools, and byte-stable on every request of the server's life (the prompt cache)
        names = list(tools)
        assert names.index("bash") < names.index(LIST)
        assert all(json.dumps(r.body["tools"]) == json.dumps(requests[0].body["tools"]) for r in requests)


@pytest.mark.req("REQ-MCP-003")
async def test_a_write_is_refused_in_restricted_with_the_upgrade_hint(fake_anthropic: FakeAnthropic,
                                                                     tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=tracker_env(tmp_path)) as s:
        cid = await s.new()
        call = ToolUseBlock(CREATE, {"title": "leak"})
        s.fake.enqueue(Reply.tool_reply(call), Reply.text_reply("I cannot."))
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "open an issue"})
        await wait_idle(s, cid, mark, timeout=120)
        result = tool_results(s.fake.requests[-1])[call.id]
        assert result.get("is_error") is True
        assert "Restricted mode" in result["content"] and "request_mode_upgrade" in result["content"]
        assert [e["toolName"] for e in s.of("toolRefused", cid)] == [CREATE]
        assert not s.of("approvalRequested", cid) and not s.of("toolStart", cid)
        assert "create_issue" not in received(tmp_path), "a refused call reached the server"


@pytest.mark.req("REQ-MCP-004", "REQ-MCP-006")
async def test_interactive_asks_once_and_always_allow_for_the_server_covers_its_other_writes(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=tracker_env(tmp_path)) as s:
        cid = await unrestricted(s, "interactive")
        create = ToolUseBlock(CREATE, {"title": "docs"})
        close = ToolUseBlock(CLOSE, {"id": 2})
        s.fake.enqueue(Reply.tool_reply(create, close), Reply.text_reply("Done."))
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "file and close"})
        asked = await s.wait_event(lambda e: e["conversationId"] == cid and e["kind"] == "approvalRequested",
                                   timeout=120)
        assert asked["toolName"] == CREATE and asked["arguments"] == {"title": "docs"}
        assert asked["description"] == "Open a new issue."
        assert [scope["rule"] for scope in asked["scopes"]] == [CREATE, "mcp__tracker__*"]
        assert received(tmp_path) == [], "nothing reaches the server before its approval"
        await s.request("phoenix/respondToApproval", {"conversationId": cid, "toolUseId": asked["toolUseId"],
                                                      "decision": "alwaysAllow", "rule": "mcp__tracker__*"})
        await wait_idle(s, cid, mark, timeout=60)
        assert len(s.of("approvalRequested", cid)) == 1, "the server's rule covers its other write"
        assert received(tmp_path) == ["create_issue", "close_issue"]
        results = tool_results(s.fake.requests[-1])
        assert results[create.id]["content"] == "created #3: docs" and results[close.id]["content"] == "closed #2"
        assert [e["rule"] for e in s.of("alwaysAllowChanged", cid)] == ["mcp__tracker__*"]


@pytest.mark.req("REQ-MCP-004")
async def test_a_denied_write_never_reaches_the_server(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=tracker_env(tmp_path)) as s:
        cid = await unrestricted(s, "interactive")
        create = ToolUseBlock(CREATE, {"title": "spam"})
        s.fake.enqueue(Reply.tool_reply(create), Reply.text_reply("Not done."))
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "file it"})
        asked = await s.wait_event(lambda e: e["conversationId"] == cid and e["kind"] == "approvalRequested",
                                   timeout=120)
        await s.request("phoenix/respondToApproval", {"conversationId": cid, "toolUseId": asked["toolUseId"],
                                                      "decision": "deny"})
        await wait_idle(s, cid, mark, timeout=60)
        assert tool_results(s.fake.requests[-1])[create.id].get("is_error") is True
        assert received(tmp_path) == [], "a denied call reached the server"


@pytest.mark.req("REQ-MCP-002", "REQ-MCP-005", "REQ-AGENT-041")
async def test_the_agent_route_offers_them_too_and_a_structured_result_is_unwrapped(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=tracker_env(tmp_path)) as s:
        cid = await s.new()
        call = ToolUseBlock("call_tool", {"tracker_structured": {}})  # through call_tool (REQ-AGENT-041)
        s.fake.enqueue(Reply.tool_reply(call), Reply.text_reply("1, 2, 3."))
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "numbers", "route": "agent"})
        await wait_idle(s, cid, mark, timeout=120)
        names = s.fake.requests[0].tool_names
        # the route's own tools (REQ-AGENT-040): the tool's definition is not sent, call_tool reaches it
        assert names is not None and "call_tool" in names and "mcp__tracker__structured" not in names
        assert [e["toolName"] for e in s.of("toolStart", cid)] == ["mcp__tracker__structured"]
        assert tool_results(s.fake.requests[-1])[call.id]["content"] == "[1, 2, 3]"  # {"result": [...]} unwrapped


@pytest.mark.req("REQ-MCP-005", "REQ-PROTO-028")
async def test_a_long_result_is_capped_like_bash_output_and_kept_whole_as_an_artifact(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=tracker_env(tmp_path)) as s:
        cid = await s.new()
        call = ToolUseBlock("mcp__tracker__huge", {"kb": 64})
        s.fake.enqueue(Reply.tool_reply(call), Reply.text_reply("It is long."))
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "the long answer"})
        await wait_idle(s, cid, mark, timeout=120)
        text = tool_results(s.fake.requests[-1])[call.id]["content"]
        assert text.startswith("line 0000000 of the long answer\n") and len(text) < 10_000
        assert "bytes cut from the middle of 65,536 bytes of result" in text
        assert text.endswith("line 0002047 of the long answer\n")  # the last 4 KB, as the server sent them
        handle = text[text.index("artifact://"):].split()[0].rstrip(".,;)")
        artifact = await s.request("phoenix/getArtifact", {"handle": handle, "conversationId": cid})
        import base64

        whole = base64.b64decode(artifact["data"]).decode()
        assert len(whole) == 65_536 and whole.startswith("line 0000000") and "line 0001000 of" in whole
