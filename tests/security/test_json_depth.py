"""Attacks on the JSON decoders: text nested thousands of levels deep (issue 24).

Python's JSON decoder recurses once per level, and RecursionError is no ValueError: one message whose ``id``
was ``[[[[...`` ended the server. The witness of each attack is outside the server's own account of itself:
the process is still running and still answers a request sent after the attack.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from bench.fuzz import _deep
from phoenix_lsp import safe_json
from tests.e2e.harness import last_seq, session, tool_results, wait_idle
from tests.e2e.raw import RawServer, frame, raw_server
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

pytestmark = pytest.mark.slow  # each test starts the real server as a subprocess

DEEP = 5_000  # far past Python's recursion limit (1,000)


async def _still_serving(s: RawServer) -> None:
    answer = await s.request("phoenix/listConversations", {})
    assert "result" in answer, answer
    assert s.proc.returncode is None


@pytest.mark.req("REQ-PROTO-044", "REQ-SEC-005")
@pytest.mark.parametrize("nest", ["[", '{"a":'], ids=["arrays", "objects"])
@pytest.mark.parametrize("closed", [True, False], ids=["closed", "cut-off"])
async def test_an_id_nested_thousands_deep_is_refused_and_the_server_goes_on(
    tmp_path: Path, nest: str, closed: bool
) -> None:
    (tmp_path / "work").mkdir()
    close = ("]" if nest == "[" else "}") * DEEP if closed else ""
    body = ('{"jsonrpc":"2.0","id":' + nest * DEEP + close + ',"method":"phoenix/listConversations"}').encode()
    async with raw_server(tmp_path / "data") as s:
        await s.initialize(tmp_path / "work")
        s.write(frame(body))
        await _still_serving(s)
        refused = [a for a in s.received if a.get("id") is None]
        assert refused and refused[-1]["error"]["code"] == -32600
        assert f"more than {safe_json.MAX_DEPTH} levels deep" in refused[-1]["error"]["message"]
        assert s.popups == []


@pytest.mark.req("REQ-PROTO-044", "REQ-SEC-005")
@pytest.mark.parametrize("where", ["params", "method", "field", "after-the-id"])
async def test_a_request_nested_deep_elsewhere_is_answered_invalid_with_its_id(tmp_path: Path, where: str) -> None:
    (tmp_path / "work").mkdir()
    deep = "[" * DEEP + "]" * DEEP
    bodies = {
        "params": f'{{"jsonrpc":"2.0","id":"deep","method":"phoenix/newConversation","params":{deep}}}',
        "method": f'{{"jsonrpc":"2.0","id":"deep","method":{deep}}}',
        "field": '{"jsonrpc":"2.0","id":"deep","method":"phoenix/sendMessage","params":{"conversationId":"c",'
                 f'"text":"hi","attachments":[{{"kind":"file","uri":{deep}}}]}}}}',
        "after-the-id": f'{{"jsonrpc":"2.0","method":"phoenix/getConversation","params":{{"x":{deep}}},"id":"deep"}}',
    }
    async with raw_server(tmp_path / "data") as s:
        await s.initialize(tmp_path / "work")
        s.write(frame(bodies[where].encode()))
        answer = await s.answer("deep")
        assert answer["error"]["code"] == -32600, answer
        message = answer["error"]["message"]
        assert "levels deep" in message and "less nesting" in message  # what happened, and what to do
        await _still_serving(s)


@pytest.mark.req("REQ-PROTO-044", "REQ-SEC-005")
async def test_a_burst_of_deep_messages_of_every_kind_leaves_every_request_answered(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    rng = random.Random(2424)
    async with raw_server(tmp_path / "data") as s:
        await s.initialize(tmp_path / "work")
        created = await s.request("phoenix/newConversation", {"workingDirectory": str(tmp_path / "work")})
        conversation = created["result"]["conversationId"]
        expected = []
        for _ in range(60):
            case = _deep(rng, s.next_id(), conversation)
            s.write(case.data)
            if case.expect is not None:
                expected.append(case.expect)
        await s.drain()
        for msg_id in expected:
            assert "error" in await s.answer(msg_id)
        await _still_serving(s)
        conv = await s.request("phoenix/getConversation", {"conversationId": conversation})
        assert conv["result"]["status"] == "idle"  # no conversation was touched


@pytest.mark.req("REQ-SEC-002", "REQ-SEC-005")
async def test_a_tool_input_nested_deep_by_the_model_is_an_input_error_and_the_turn_goes_on(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    deep = ToolUseBlock("bash", id="toolu_deep", raw_json='{"command": "ls", "x": ' + "[" * DEEP + "]" * DEEP + "}")
    shallow = ToolUseBlock("list_directory", {"path": "."}, id="toolu_ok")
    fake_anthropic.enqueue(Reply.tool_reply(deep, shallow), Reply.text_reply("understood"))
    async with session(fake_anthropic, tmp_path) as s:
        cid = await s.new()
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "go"})
        await wait_idle(s, cid, mark, 60.0)
        results = tool_results(fake_anthropic.requests[1])
        assert results[deep.id]["is_error"] is True
        assert "not valid JSON" in results[deep.id]["content"] and "levels deep" in results[deep.id]["content"]
        assert results[shallow.id]["is_error"] is False
        assert [e["toolUseId"] for e in s.of("toolStart", cid)] == [shallow.id]  # the deep call never ran
        conv = await s.request("phoenix/getConversation", {"conversationId": cid})
        assert json.dumps(conv).count("[[[[") == 0  # nothing of it was kept


@pytest.mark.req("REQ-SEC-005", "REQ-SEC-002")
def test_an_mcp_result_nested_deeper_than_the_limit_fails_the_call(tmp_path: Path) -> None:
    """A real MCP server (the records server of the agent tests) that answers with a value nested 150 levels
    deep: below what the MCP SDK's own decoder refuses, above what the engine, the reducer and the scrubbers
    are given. The call fails with an error that says so; a shallow call on the same server still works."""
    import os

    from phoenix_lsp.agent.agent_config import CapabilityManifest
    from phoenix_lsp.agent.contracts import ToolFailure
    from phoenix_lsp.agent.mcp_hub import McpHub
    from tests.agent.mcp_helpers import TOKEN, TOKEN_VARIABLE, registry, stdio_entry

    deep: object = "bottom"
    for _ in range(150):
        deep = [deep]
    manifest = CapabilityManifest.model_validate({"tools": {}})
    with McpHub(registry(records=stdio_entry(tmp_path / "records.json")), manifest=manifest,
                environ={TOKEN_VARIABLE: TOKEN, "PATH": os.environ.get("PATH", "")}) as hub:
        with pytest.raises(ToolFailure) as caught:
            hub.call("mcp://records/update_record", {"id": 3, "fields": {"title": deep}}, timeout_s=30)
        assert "levels deep" in caught.value.error.message
        assert hub.call("mcp://records/get_record", {"id": 4})["title"] == "Work item 4"
