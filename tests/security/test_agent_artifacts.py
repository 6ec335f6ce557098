"""Attacks (issue 24): artifacts served to whoever names them, kept for ever, readable by a Restricted command.

Witnesses outside phoenix-lsp: what ``phoenix/getArtifact`` hands to another conversation, the files left in
the artifact directory, and what a sandboxed command could read of it (the tool result the model received).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.e2e.harness import last_seq, session, tool_results, wait_idle
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.security.agent_helpers import WHOAMI, agent_env, agent_turn, one_node

pytestmark = [pytest.mark.slow]

BIG = "{'rows': hostile_whoami(copies=100)['rows']}"


def handle_in(text: str) -> str:
    return text[text.index("artifact://"):].split()[0].rstrip(".,;)")


@pytest.mark.req("REQ-AGENT-026", "REQ-PROTO-028")
async def test_a_handle_is_served_only_to_the_conversation_that_made_it(fake_anthropic: FakeAnthropic,
                                                                        tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=agent_env(tmp_path)) as s:
        owner, other = await s.new(), await s.new()
        run = one_node(BIG, [WHOAMI], ["rows"])
        requests = await agent_turn(s, owner, Reply.tool_reply(run), Reply.text_reply("ok"))
        handle = handle_in(tool_results(requests[1])[run.id]["content"])
        served = await s.request("phoenix/getArtifact", {"handle": handle, "conversationId": owner})
        assert served["size"] > 1000
        for params in ({"handle": handle, "conversationId": other}, {"handle": handle}):
            error = await s.error("phoenix/getArtifact", params)
            assert error.code == -32602, error  # not served: another conversation, or none named
        error = await s.error("phoenix/getArtifact", {"handle": handle, "conversationId": "no-such-conversation"})
        assert "no-such-conversation" in error.message


@pytest.mark.req("REQ-AGENT-026", "REQ-BASH-008")
async def test_an_artifact_directory_outside_the_data_directory_is_denied_to_restricted_commands(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "artifacts"
    env = agent_env(tmp_path, PHOENIX_ARTIFACT_DIR=str(outside))
    async with session(fake_anthropic, tmp_path, env=env) as s:
        cid = await s.new()  # Restricted
        run = one_node(BIG, [WHOAMI], ["rows"])
        await agent_turn(s, cid, Reply.tool_reply(run), Reply.text_reply("ok"))
        files = [p for p in outside.rglob("*") if p.is_file()]
        assert files and any(b"served with" in p.read_bytes() for p in files)
        cat = ToolUseBlock("bash", {"command": f"cat {outside}/*/* ; ls {outside}"})
        s.fake.enqueue(Reply.tool_reply(cat), Reply.text_reply("done"))
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "look", "route": "ask"})
        await wait_idle(s, cid, mark, timeout=60)
        result = tool_results(s.fake.requests[-1])[cat.id]["content"]
        text = result if isinstance(result, str) else str(result)
        assert "served with" not in text and "sha256-" not in text, text
        assert "denied" in text.lower() or "permission" in text.lower(), text


@pytest.mark.req("REQ-AGENT-026")
async def test_the_artifacts_of_a_conversation_that_no_longer_exists_are_deleted(fake_anthropic: FakeAnthropic,
                                                                                tmp_path: Path) -> None:
    artifacts = tmp_path / "artifacts"
    env = agent_env(tmp_path, PHOENIX_ARTIFACT_DIR=str(artifacts))
    async with session(fake_anthropic, tmp_path, env=env) as s:
        cid = await s.new()
        run = one_node(BIG, [WHOAMI], ["rows"])
        await agent_turn(s, cid, Reply.tool_reply(run), Reply.text_reply("ok"))
    kept = [p for p in artifacts.rglob("*") if p.is_file()]
    assert kept
    # a conversation gone from the store (its database removed): its artifacts must not outlive it
    for path in (tmp_path / "data").glob("*.db*"):
        path.unlink()
    async with session(fake_anthropic, tmp_path, env=env) as s:
        await s.new()
    assert [p for p in artifacts.rglob("*") if p.is_file()] == []
    assert not (artifacts / ("c-" + hashlib.sha256(cid.encode()).hexdigest()[:32])).exists()
