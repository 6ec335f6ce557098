"""Attacks on a conversation's rows as the store holds them (REQ-SEC-044): the store's file is on the disk, where
any program with the user's rights may change it between two runs, and the hub reads a conversation back from it
(its messages and its latest state) when a client opens it, and at start-up when it was busy. Two conversations
are changed there: one's first message made a value nested 100,000 levels deep, the other's state too, with its
status left busy so that the server reads it at start-up. The witnesses are what the real client was answered and
the server's log file: each conversation is refused saying what was wrong with it, why and what to do (never a
RecursionError, never an internal error), the server goes on serving (a third conversation is opened and answers),
and the log names the damaged conversation and why, with no RecursionError."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.e2e.harness import Session, last_seq, session, wait_idle
from tests.fake_anthropic import FakeAnthropic, Reply
from tests.security.test_image_replay_attacks import database

pytestmark = pytest.mark.slow

DEEP = "[" * 100_000 + "]" * 100_000


async def _one_turn(s: Session, text: str) -> str:
    cid = await s.new()
    mark = last_seq(s, cid)
    await s.request("phoenix/sendMessage", {"conversationId": cid, "text": text})
    await wait_idle(s, cid, mark)
    return cid


@pytest.mark.req("REQ-SEC-044")
async def test_a_conversations_rows_changed_on_the_disk_are_refused_cleanly(fake_anthropic: FakeAnthropic,
                                                                          tmp_path: Path) -> None:
    fake_anthropic.enqueue(Reply.text_reply("one"), Reply.text_reply("two"), Reply.text_reply("three"))
    async with session(fake_anthropic, tmp_path) as first:
        deep_message = await _one_turn(first, "first")
        deep_state = await _one_turn(first, "second")
        intact = await _one_turn(first, "third")
    with sqlite3.connect(database(tmp_path)) as db:
        db.execute("UPDATE messages SET json = ? WHERE conversation_id = ? AND idx = 0",
                   ('{"message": ' + DEEP + "}", deep_message))
        db.execute("UPDATE conversation_states SET state_json = ?, status = 'awaiting_llm' WHERE conversation_id = ?",
                   (DEEP, deep_state))

    fake_anthropic.enqueue(Reply.text_reply("still here"))
    async with session(fake_anthropic, tmp_path) as second:
        for cid in (deep_message, deep_state):
            error = await second.error("phoenix/getConversation", {"conversationId": cid})
            text = error.message
            assert "Recursion" not in text and "maximum recursion" not in text, text
            assert cid in text and "nests arrays and objects more than" in text, text  # what, and why
            assert "changed outside phoenix-lsp" in text and "Start a new conversation" in text, text  # what next
        mark = last_seq(second, intact)
        await second.request("phoenix/sendMessage", {"conversationId": intact, "text": "and now?"})
        await wait_idle(second, intact, mark)
        assert "still here" in str(await second.request("phoenix/getConversation", {"conversationId": intact}))
    log = (tmp_path / "data" / "phoenix-lsp.log").read_text()
    assert "RecursionError" not in log and "maximum recursion" not in log, log[-3000:]
    assert f"conversation {deep_state!r} could not be read back" in log, log[-3000:]
