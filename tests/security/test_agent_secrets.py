"""Attacks (issue 24): secrets that leave through the agent route.

A careless or hostile MCP server (``agent_server.py``) answers with its own credential, the one the registry's
``secretsRef`` gave it. The witnesses are outside phoenix-lsp: the requests the model provider received (the
fake Anthropic server), the files of the data directory, the hostile server's own log of the calls it got.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from tests.e2e.harness import last_seq, session, tool_results, wait_idle
from tests.e2e.test_write_patch import unrestricted
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.security.agent_helpers import (
    TOKEN,
    UPDATE,
    WHOAMI,
    agent_env,
    agent_turn,
    calls,
    leaks,
    one_node,
)

pytestmark = [pytest.mark.slow]


@pytest.mark.req("REQ-AGENT-016", "REQ-SEC-001")
async def test_a_servers_credential_in_a_large_result_reaches_no_artifact_and_no_client(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=agent_env(tmp_path)) as s:
        cid = await s.new()
        run = one_node("w = hostile_whoami(copies=300)\n{'all': w}", [WHOAMI], ["all"])
        requests = await agent_turn(s, cid, Reply.tool_reply(run), Reply.text_reply("ok"))
        text = tool_results(requests[1])[run.id]["content"]
        assert "artifact://" in text, text  # big enough to be kept as an artifact
        handle = text[text.index("artifact://"):].split()[0].rstrip(".,;)")
        artifact = await s.request("phoenix/getArtifact", {"handle": handle, "conversationId": cid})
        served = base64.b64decode(artifact["data"]).decode()
        assert "served with" in served and TOKEN not in served
    assert any(c["tool"] == "whoami" for c in calls(tmp_path))  # the server really answered
    assert leaks(TOKEN, tmp_path, fake_anthropic.requests) == []


@pytest.mark.req("REQ-AGENT-016", "REQ-SEC-001")
async def test_a_script_that_reverses_or_splits_the_credential_cannot_get_it_to_the_model(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    code = ("w = hostile_whoami(copies=1)\nc = w['credential']\n"
            "{'rev': c[::-1], 'parts': [c[i:i + 4] for i in range(0, len(c), 4)], "
            "'keys': [k[::-1] for k in w], 'item': w['list'][1][::-1]}")
    async with session(fake_anthropic, tmp_path, env=agent_env(tmp_path)) as s:
        cid = await s.new()
        run = one_node(code, [WHOAMI], ["rev", "parts", "keys", "item"])
        requests = await agent_turn(s, cid, Reply.tool_reply(run), Reply.text_reply("ok"))
        text = tool_results(requests[1])[run.id]["content"]
        assert "rev" in text and "parts" in text, text  # the script ran and its result reached the model
    parts = json.dumps([TOKEN[i:i + 4] for i in range(0, len(TOKEN), 4)])
    bodies = [json.dumps(r.body) for r in fake_anthropic.requests]
    assert not any(parts in body or parts.replace(" ", "") in body for body in bodies), "split credential sent"
    assert leaks(TOKEN, tmp_path, fake_anthropic.requests) == []


def rebuilt_write(title_code: str) -> ToolUseBlock:
    """A plan whose write carries the credential, rebuilt inside the script (the plan itself never holds it)."""
    return one_node(f"hostile_update(id=1, title={title_code})\n{{}}", [UPDATE], goal="rename")


@pytest.mark.req("REQ-BED-026", "REQ-AGENT-016")
async def test_a_write_whose_arguments_hold_a_secret_ends_the_turn_instead_of_hanging(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=agent_env(tmp_path)) as s:
        cid = await unrestricted(s, "interactive")
        write = rebuilt_write(f"{TOKEN[:7]!r} + {TOKEN[7:]!r}")
        s.fake.enqueue(Reply.tool_reply(write), Reply.text_reply("renamed"))
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "rename", "route": "agent"})
        # before the fix: the write's state cannot be saved and the turn hangs in awaiting_approval for ever, with
        # no question (the write is the one question asked: its arguments are what would be saved)
        await wait_idle(s, cid, mark, timeout=60)
        errors = [e for e in s.of("error", cid) if e["seq"] > mark]
        assert errors and errors[0]["errorKind"] == "store", errors
        assert "could not be saved" in errors[0]["message"] and "secret" in errors[0]["message"]
        assert [e for e in s.of("approvalRequested", cid) if e["seq"] > mark] == []  # never asked the write
        conversation = await s.request("phoenix/getConversation", {"conversationId": cid})
        assert conversation["status"] == "idle"
        # the conversation stays usable
        s.fake.enqueue(Reply.text_reply("still here"))
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "hello", "route": "ask"})
        await wait_idle(s, cid, mark, timeout=60)
    assert not any(c["tool"] == "update" for c in calls(tmp_path))  # the write never reached the server
    assert leaks(TOKEN, tmp_path, fake_anthropic.requests) == []


@pytest.mark.req("REQ-BED-026", "REQ-SEC-001")
async def test_a_plan_holding_a_secret_ends_the_turn_instead_of_hanging(fake_anthropic: FakeAnthropic,
                                                                       tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=agent_env(tmp_path)) as s:
        cid = await unrestricted(s, "auto")
        write = rebuilt_write(repr(TOKEN))  # the model's own output carries the credential
        s.fake.enqueue(Reply.tool_reply(write), Reply.text_reply("renamed"))
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "rename", "route": "agent"})
        await wait_idle(s, cid, mark, timeout=60)
        errors = [e for e in s.of("error", cid) if e["seq"] > mark]
        assert errors and errors[0]["errorKind"] == "store", errors
        s.fake.enqueue(Reply.text_reply("still here"))
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "hello", "route": "ask"})
        await wait_idle(s, cid, mark, timeout=60)
        history = await s.request("phoenix/getConversation", {"conversationId": cid})
        assert [m["role"] for m in history["messages"]][-2:] == ["user", "assistant"]
    assert not any(c["tool"] == "update" for c in calls(tmp_path))
    assert leaks(TOKEN, tmp_path, []) == []
