"""Tool inputs end to end (issue 9): what the model is sent (definitions) and told (input errors).

The real server runs as a subprocess behind a real LSP client; the model is the fake Anthropic server, reached
through the real SDK, whose recorded requests show the tool definitions and the tool results.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import last_seq, session, tool_results, wait_idle
from tests.e2e.test_write_patch import unrestricted
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

pytestmark = pytest.mark.slow  # each test starts the real server as a subprocess

SLOW = 60.0  # the first request imports the SDK, which takes seconds on a loaded CI machine


@pytest.mark.req("REQ-CORE-008", "REQ-SEC-002")
async def test_invalid_tool_input_json_gets_the_not_valid_json_error_for_every_tool(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    cut = ToolUseBlock("bash", id="toolu_cut", raw_json='{"command": "ls", ', json_chunks=4)
    upgrade = ToolUseBlock("request_mode_upgrade", id="toolu_up", raw_json='{"reason": "write"')
    spawn = ToolUseBlock("spawn_agents", id="toolu_spawn", raw_json='["not", "an object"]')
    empty = ToolUseBlock("request_mode_upgrade", {"reason": " "}, id="toolu_blank")
    listing = ToolUseBlock("list_directory", {}, id="toolu_ok")
    fake_anthropic.enqueue(Reply.tool_reply(cut, upgrade, spawn, empty, listing), Reply.text_reply("sorry"))
    async with session(fake_anthropic, tmp_path) as s:
        cid = await s.new()
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "go"})
        await wait_idle(s, cid, mark, SLOW)
        results = tool_results(fake_anthropic.requests[1])
        assert results[cut.id]["is_error"] is True
        assert results[cut.id]["content"] == (
            "Invalid bash input: your input was not valid JSON: Expecting property name enclosed in double quotes: "
            "line 1 column 19 (char 18). The call was not run; send the call again with a valid JSON object as "
            "its input."
        )
        assert results[upgrade.id]["content"].startswith(
            "Invalid request_mode_upgrade input: your input was not valid JSON: Expecting ',' delimiter"
        )
        assert results[spawn.id]["content"].startswith(
            "Invalid spawn_agents input: your input was not valid JSON: expected a JSON object, got an array"
        )
        assert results[empty.id]["content"].startswith(
            "Invalid request_mode_upgrade input: 'reason' must not be empty or only whitespace."
        )
        assert all(results[c.id]["is_error"] for c in (upgrade, spawn, empty))
        assert results[listing.id]["is_error"] is False  # the batch went on
        assert "__phoenix" not in json.dumps(fake_anthropic.requests[1].messages)  # no invented field anywhere
        assert not s.of("upgradeRequested", cid) and not s.of("subAgentsSpawned", cid)
        assert [e["toolUseId"] for e in s.of("toolStart", cid)] == [listing.id]  # nothing invalid was run


@pytest.mark.req("REQ-BASH-005", "REQ-BED-017")
async def test_the_bash_definition_sent_states_the_working_directory_on_every_request(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("bash", {"command": "pwd", "run": "default"})),
        Reply.text_reply("one"),
        Reply.text_reply("two"),
    )
    async with session(fake_anthropic, tmp_path) as s:
        cid = await s.new()
        for text in ("first", "/execute", "second"):  # a mode change between turns changes no definition
            mark = last_seq(s, cid)
            await s.request("phoenix/sendMessage", {"conversationId": cid, "text": text})
            if text != "/execute":
                await wait_idle(s, cid, mark, SLOW)
    bodies = [r.body for r in fake_anthropic.requests]
    assert len(bodies) == 3
    bash = next(t for t in bodies[0]["tools"] if t["name"] == "bash")
    assert bash["description"].endswith(f"\n\nWorking directory: {s.workdir}")
    assert list(bash["input_schema"]["properties"]) == ["command", "run"]
    sent = {json.dumps(b["tools"]) for b in bodies}  # the parsed bodies keep the key order of what was sent
    assert len(sent) == 1, "tool definitions must be byte-identical on every request of a conversation"


def _rename_run_to_mode(node: Any) -> Any:
    """A stored value as an older release wrote it: the bash input field was called ``mode``."""
    if isinstance(node, list):
        return [_rename_run_to_mode(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: _rename_run_to_mode(v) for k, v in node.items()}
    if out.get("name") == "bash" and isinstance(out.get("input"), dict) and "run" in out["input"]:
        out["input"] = {("mode" if k == "run" else k): v for k, v in out["input"].items()}
    return out


@pytest.mark.req("REQ-BASH-005", "REQ-BED-007")
async def test_a_pending_bash_approval_stored_with_the_old_mode_field_runs_after_a_restart(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    call = ToolUseBlock("bash", {"command": "echo restored-$((40+2))", "run": "slow"}, id="toolu_old")
    fake_anthropic.enqueue(Reply.tool_reply(call), Reply.text_reply("done"))
    async with session(fake_anthropic, tmp_path) as first:
        cid = await unrestricted(first, "interactive")
        await first.request("phoenix/sendMessage", {"conversationId": cid, "text": "go"})
        await first.wait_event(lambda e: e["kind"] == "approvalRequested" and e["toolUseId"] == call.id, SLOW)
    db = sqlite3.connect(tmp_path / "data" / "phoenix.db")  # made into the store of an older release
    with db:
        where = "WHERE conversation_id = ?"
        (state,) = db.execute(f"SELECT state_json FROM conversation_states {where}", (cid,)).fetchone()
        old_state = json.dumps(_rename_run_to_mode(json.loads(state)))
        assert '"mode": "slow"' in old_state
        db.execute(f"UPDATE conversation_states SET state_json = ? {where}", (old_state, cid))
        for idx, body in db.execute(f"SELECT idx, json FROM messages {where}", (cid,)).fetchall():
            old_body = json.dumps(_rename_run_to_mode(json.loads(body)))
            db.execute(f"UPDATE messages SET json = ? {where} AND idx = ?", (old_body, cid, idx))
    db.close()
    async with session(fake_anthropic, tmp_path) as second:
        conv = await second.request("phoenix/getConversation", {"conversationId": cid})
        pending = conv["pendingApproval"]
        command = call.input["command"]
        assert pending["toolUseId"] == call.id and pending["arguments"] == {"command": command, "run": "slow"}
        mark = last_seq(second, cid)
        answer = {"conversationId": cid, "toolUseId": pending["toolUseId"], "decision": "allow"}
        await second.request("phoenix/respondToApproval", answer)
        await wait_idle(second, cid, mark, SLOW)
    result = tool_results(fake_anthropic.requests[-1])[call.id]
    assert result["is_error"] is False and result["content"].strip() == "restored-42"
    replayed = fake_anthropic.requests[-1].messages[-2]["content"]  # the assistant's call: history, as stored
    old_call = {"type": "tool_use", "id": call.id, "name": "bash", "input": {"command": command, "mode": "slow"}}
    assert old_call in replayed
