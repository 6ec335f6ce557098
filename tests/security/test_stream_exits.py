"""Exits, not doors (issue 34): a secret the model writes in many small pieces never reaches a client whole.

A model's answer streams as deltas; the server gathers them into ``textDelta`` events (LSP, and the terminal
client on it) and ACP ``agent_message_chunk`` updates, and each client joins what it receives (the terminal
client prints them as they come). A secret whose
pieces land in different events used to be redacted in none of them (each event was redacted on its own) and
was assembled by the client. The witnesses are what a real client received: pytest-lsp's client for LSP, the
ACP SDK's client side for ACP, the terminal client's output, and the events the store keeps (they must equal
what was sent)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from phoenix_lsp.store.paths import DB_FILE_NAME
from tests.acp.harness import API_KEY, agent, received
from tests.client.conftest import ChatProcess
from tests.e2e.harness import last_seq, session, wait_idle
from tests.fake_anthropic import FakeAnthropic, Reply
from tests.fake_openai import FakeOpenAI

pytestmark = pytest.mark.slow  # each test starts the server as a subprocess

OPENAI_KEY = "sk-proj-stream-exit-secret-0123456789abcdef"
ANTHROPIC_KEY = "sk-ant-api03-stream-exit-secret-0123456789abcdef"
PIECES = 30
DELAY_S = 0.02  # each piece in its own network read, so that the pieces land in different events


def _answer(secret: str) -> Reply:
    return Reply.text_reply(f"Your key: {secret} - done.", deltas=PIECES, delay_s=DELAY_S)


@pytest.mark.req("REQ-SEC-041", "REQ-SEC-001")
@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_a_key_written_in_thirty_pieces_never_reaches_an_lsp_client_whole(
        provider: str, fake_anthropic: FakeAnthropic, fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    secret = OPENAI_KEY if provider == "openai" else ANTHROPIC_KEY
    (fake_openai if provider == "openai" else fake_anthropic).enqueue(_answer(secret))
    env = {**fake_openai.env(OPENAI_KEY), "ANTHROPIC_API_KEY": ANTHROPIC_KEY, "PHOENIX_EVENT_COALESCE_MS": "0",
           "PHOENIX_MODEL": "openai/gpt-4.1" if provider == "openai" else "claude-sonnet-4-6"}
    fake_anthropic.expected_api_key = ANTHROPIC_KEY
    async with session(fake_anthropic, tmp_path, env=env) as s:
        cid = await s.new()
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "what is my key?"})
        await wait_idle(s, cid, mark)
        deltas = [e["text"] for e in s.of("textDelta", cid)]
        conversation = await s.request("phoenix/getConversation", {"conversationId": cid})
    assert len(deltas) > 1, "the pieces were meant to land in different events"
    shown = "".join(deltas)
    assert shown == "Your key: [REDACTED] - done.", shown  # nothing lost, nothing of the key
    assert secret[:12] not in json.dumps(s.events)
    assert json.dumps(conversation).count("[REDACTED] - done.") == 1 and secret[:12] not in json.dumps(conversation)
    with sqlite3.connect(s.data_dir / DB_FILE_NAME) as db:  # what is stored is what was sent
        rows = [json.loads(j) for (j,) in db.execute(
            "SELECT json FROM events WHERE conversation_id = ? ORDER BY seq", (cid,))]
    stored = [e["text"] for e in rows if e.get("kind") == "textDelta"]
    assert stored == deltas


@pytest.mark.req("REQ-SEC-041", "REQ-ACP-014")
async def test_a_key_written_in_thirty_pieces_never_reaches_an_acp_client_whole(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    fake_anthropic.enqueue(_answer(API_KEY))
    async with agent(fake_anthropic, tmp_path, env={"PHOENIX_EVENT_COALESCE_MS": "0"}) as a:
        session_id = (await a.new()).session_id
        assert (await a.prompt(session_id, "what is my key?")).stop_reason == "end_turn"
        chunks = [u.content.text for u in a.editor.updates if u.session_update == "agent_message_chunk"]
        sent = received(a.editor)
    assert len(chunks) > 1, "the pieces were meant to land in different chunks"
    assert "".join(chunks) == "Your key: [REDACTED] - done."
    assert API_KEY[:12] not in sent


@pytest.mark.req("REQ-SEC-041", "REQ-SEC-001")
def test_a_key_written_in_thirty_pieces_never_reaches_the_terminal_whole(fake_anthropic: FakeAnthropic,
                                                                        tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "PHOENIX_"))}
    env = {**env, **fake_anthropic.env(ANTHROPIC_KEY), "NO_COLOR": "1", "PHOENIX_EVENT_COALESCE_MS": "0"}
    fake_anthropic.enqueue(_answer(ANTHROPIC_KEY))
    work = tmp_path / "work"
    work.mkdir()
    chat = ChatProcess(["--cwd", str(work), "--data-dir", str(tmp_path / "data")], env)
    try:
        at = chat.wait_for("> ", chat.wait_for("mode: "))
        chat.send("what is my key?")
        chat.wait_for("> ", chat.wait_for("- done.", at))
        chat.close_stdin()
        assert chat.wait() == 0
    finally:
        chat.kill()
    assert "Your key: [REDACTED] - done." in chat.out
    assert ANTHROPIC_KEY[:12] not in chat.out and ANTHROPIC_KEY[:12] not in chat.err
