"""End-to-end: many MCP tools behind a search (issue 37, REQ-MCP-022), through the real server with the tests'
own MCP server offering 400 more tools (``tests/tools/tracker_server.py --many 400``), on the real Anthropic SDK
against the fake model server: the model is sent no definition of them, only the search tool; the search finds
one by a word of its description and gives it whole; the model calls it by name and the call runs (the tracker's
own log is the witness); the tools array is byte-identical on every request. With three tools they stay inline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from phoenix_lsp.tools.mcp_search import SEARCH_TOOL
from tests.e2e.harness import Session, last_seq, session, tool_results, wait_idle
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.tools.tracker import received, tracker_env

pytestmark = pytest.mark.slow

PENGUINS = "mcp__tracker__gen_0217"


async def turn(s: Session, cid: str, *replies: Reply, text: str = "go") -> None:
    s.fake.enqueue(*replies)
    mark = last_seq(s, cid)
    await s.request("phoenix/sendMessage", {"conversationId": cid, "text": text})
    await wait_idle(s, cid, mark, timeout=240)


@pytest.mark.req("REQ-MCP-022", "REQ-MCP-002")
async def test_400_tools_are_searched_loaded_and_called_with_a_byte_stable_tools_list(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=tracker_env(tmp_path, many=400)) as s:
        cid = await s.new()
        search = ToolUseBlock(SEARCH_TOOL, {"query": "how many penguins"}, id="toolu_s1")
        call = ToolUseBlock(PENGUINS, {"limit": 3}, id="toolu_g1")
        await turn(s, cid, Reply.tool_reply(search), Reply.tool_reply(call), Reply.text_reply("Three."))
        await turn(s, cid, Reply.text_reply("Still three."), text="and now?")
        requests = s.fake.requests
        names = [t["name"] for t in requests[0].body["tools"]]
        assert SEARCH_TOOL in names and not [n for n in names if n.startswith("mcp__tracker__")], names
        assert len(json.dumps(requests[0].body["tools"])) < 60_000  # the 400 definitions would be some 200 KB
        found = tool_results(requests[1])[search.id]
        assert not found.get("is_error")
        first = str(found["content"]).split("\n- ")[1]
        assert first.startswith(f"{PENGUINS} [read]: Counts the penguins of the zoo.") and '"limit"' in first
        assert tool_results(requests[2])[call.id]["content"] == "gen_0217 counted 3"
        assert received(tmp_path) == ["gen_0217"], "the search reached no server; the call reached the tracker"
        assert len(requests) == 4
        assert all(json.dumps(r.body["tools"]) == json.dumps(requests[0].body["tools"]) for r in requests)


@pytest.mark.req("REQ-MCP-022")
async def test_three_tools_stay_inline(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    three = ["list_issues", "create_issue", "close_issue"]
    manifest = {"allow": [f"mcp://tracker/{name}" for name in three],
                "tools": {"mcp://tracker/list_issues": {"kind": "read"}}}
    async with session(fake_anthropic, tmp_path, env=tracker_env(tmp_path, manifest=manifest)) as s:
        cid = await s.new()
        await turn(s, cid, Reply.text_reply("Hello."))
        await turn(s, cid, Reply.text_reply("Again."))
        requests = s.fake.requests
        names = [t["name"] for t in requests[0].body["tools"]]
        assert [n for n in names if n.startswith("mcp__")] == [f"mcp__tracker__{name}" for name in three]
        assert json.dumps(requests[1].body["tools"]) == json.dumps(requests[0].body["tools"])
