"""phoenix/listConversations through a real LSP client: the list use case (``usecases/conversations.py``) orders
by the last change, not by creation, so the conversation the user just worked in comes first."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.harness import Session, session
from tests.fake_anthropic import FakeAnthropic, Reply


async def _listed(s: Session) -> list[str]:
    return [c["conversationId"] for c in (await s.request("phoenix/listConversations", {}))["conversations"]]


@pytest.mark.req("REQ-PROTO-005")
async def test_the_conversation_worked_in_last_is_listed_first(fake_anthropic: FakeAnthropic,
                                                               tmp_path: Path) -> None:
    fake_anthropic.enqueue(Reply.text_reply("Answered."))
    async with session(fake_anthropic, tmp_path) as s:
        older = await s.new()
        newer = await s.new()
        assert await _listed(s) == [newer, older]  # nothing changed since: the newer one first
        seen = s.last_seq(older)
        await s.request("phoenix/sendMessage", {"conversationId": older, "text": "hello"})
        await s.wait_status(older, "idle", since=seen)
        assert await _listed(s) == [older, newer]  # the one just answered comes first, though created first


@pytest.mark.req("REQ-PROTO-005")
async def test_the_listing_names_each_folder_and_filters_by_one(fake_anthropic: FakeAnthropic,
                                                               tmp_path: Path) -> None:
    """Each summary carries its folder; ``workingDirectory`` keeps that folder's conversations only, whatever
    spelling names it (a symlink, a ``..``), and a folder that cannot be a session's is refused naming it."""
    other = tmp_path / "other"
    other.mkdir()
    async with session(fake_anthropic, tmp_path) as s:
        here = await s.new()
        there = await s.new(workingDirectory=str(other))
        listed = (await s.request("phoenix/listConversations", {}))["conversations"]
        folders = {c["conversationId"]: c["workingDirectory"] for c in listed}
        assert folders == {here: str(s.workdir.resolve()), there: str(other.resolve())}
        link = tmp_path / "link"
        link.symlink_to(other)
        for spelling in (str(other), str(link), f"{s.workdir}/../other"):
            only = await s.request("phoenix/listConversations", {"workingDirectory": spelling})
            assert [c["conversationId"] for c in only["conversations"]] == [there], spelling
        empty = tmp_path / "empty"
        empty.mkdir()
        none = await s.request("phoenix/listConversations", {"workingDirectory": str(empty)})
        assert none["conversations"] == []
        error = await s.error("phoenix/listConversations", {"workingDirectory": "/"})
        assert error.code == -32602 and error.data.get("field") == "workingDirectory"
