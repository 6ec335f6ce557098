"""An attack on the search over many MCP tools (issue 37, REQ-MCP-022), through the real server and the tests' own
MCP server (``tests/tools/tracker_server.py --many 400 --decoy``): a tool whose description is crafted to match
every search (every word the other tools use, repeated) must not push the tools that really do what is asked
out of the first place. The witness is what the fake model server received as each search's result."""

from __future__ import annotations

from pathlib import Path

import pytest

from phoenix_lsp.tools.mcp_search import MOST_FOUND, SEARCH_TOOL
from tests.e2e.harness import last_seq, session, tool_results, wait_idle
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.tools.tracker import received, tracker_env

pytestmark = pytest.mark.slow

#: query -> the tool that does it
WANTED = {
    "how many penguins": "mcp__tracker__gen_0217",
    "create an issue": "mcp__tracker__create_issue",
    "close issue": "mcp__tracker__close_issue",
    "list the open issues": "mcp__tracker__list_issues",
}


@pytest.mark.req("REQ-MCP-022")
async def test_a_description_crafted_to_match_every_search_does_not_come_first(fake_anthropic: FakeAnthropic,
                                                                               tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=tracker_env(tmp_path, many=400, decoy=True)) as s:
        cid = await s.new()
        searches = [ToolUseBlock(SEARCH_TOOL, {"query": query}, id=f"toolu_q{n}") for n, query in enumerate(WANTED)]
        s.fake.enqueue(Reply.tool_reply(*searches), Reply.text_reply("found"))
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "find them"})
        await wait_idle(s, cid, mark, timeout=240)
        results = tool_results(s.fake.requests[-1])
        for search, wanted in zip(searches, WANTED.values(), strict=True):
            listed = [line.split(" [")[0] for line in str(results[search.id]["content"]).split("\n- ")[1:]]
            assert listed[0] == wanted, (search.input, listed)
            assert len(listed) <= MOST_FOUND
        assert received(tmp_path) == [], "a search reaches no MCP server"
