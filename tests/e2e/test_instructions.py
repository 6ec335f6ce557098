"""Project instructions through a real LSP client: files read at the start, listed, stable, reloaded
(REQ-INSTR-001..003)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.harness import Session, session
from tests.fake_anthropic import FakeAnthropic, Reply

pytestmark = pytest.mark.slow  # each test starts the real server as a subprocess


async def _turn(s: Session, cid: str, text: str) -> None:
    seen = s.last_seq(cid)
    await s.request("phoenix/sendMessage", {"conversationId": cid, "text": text})
    await s.wait_status(cid, "idle", since=seen)


@pytest.mark.req("REQ-INSTR-001", "REQ-INSTR-002", "REQ-INSTR-003")
async def test_instructions_from_nested_files_are_sent_listed_kept_stable_and_reloaded(fake_anthropic: FakeAnthropic,
                                                                                       tmp_path: Path) -> None:
    work = tmp_path / "work"  # the harness's workspace folder
    pkg = work / "pkg"
    pkg.mkdir(parents=True)
    (tmp_path / "user-config").mkdir()
    (tmp_path / "user-config" / "AGENTS.md").write_text("USER: answer in English")
    (work / "AGENTS.md").write_text("ROOT: run make test")
    (pkg / "CLAUDE.md").write_text("PKG: this package is generated, do not edit")
    (work / "CLAUDE.md").write_bytes(b"\xff broken \xfe")
    fake_anthropic.enqueue(*(Reply.text_reply(f"answer {i}") for i in range(4)))
    async with session(fake_anthropic, tmp_path) as s:
        cid = await s.new(workingDirectory=str(pkg))
        await _turn(s, cid, "hello")
        system = fake_anthropic.requests[-1].system
        at = [system.index(x) for x in ("USER: answer", "ROOT: run make test", "PKG: this package")]
        assert at == sorted(at), "farthest first: user-level, workspace root, then the working directory"
        assert "broken" not in system
        conv = await s.request("phoenix/getConversation", {"conversationId": cid})
        listed = {Path(f["path"]).relative_to(tmp_path).as_posix(): f for f in conv["instructions"]}
        assert list(listed) == ["user-config/AGENTS.md", "work/AGENTS.md", "work/CLAUDE.md", "work/pkg/CLAUDE.md"]
        assert "not UTF-8" in listed["work/CLAUDE.md"]["problem"] and listed["work/CLAUDE.md"]["kept"] == 0
        assert listed["work/AGENTS.md"]["kept"] == listed["work/AGENTS.md"]["size"] == len("ROOT: run make test")

        # a changed file does not move the running conversation's prompt (the cache keeps working) ...
        (work / "AGENTS.md").write_text("ROOT: run make check instead")
        await _turn(s, cid, "again")
        assert fake_anthropic.requests[-1].system == system
        # ... a new conversation reads it ...
        other = await s.new(workingDirectory=str(pkg))
        await _turn(s, other, "hi")
        assert "ROOT: run make check instead" in fake_anthropic.requests[-1].system
        # ... and so does the first one when the user asks to reload
        reloaded = await s.request("phoenix/reloadInstructions", {"conversationId": cid})
        assert reloaded["changed"] is True
        assert [Path(f["path"]).name for f in reloaded["instructions"]] == ["AGENTS.md", "AGENTS.md", "CLAUDE.md",
                                                                             "CLAUDE.md"]
        await _turn(s, cid, "and now")
        assert "ROOT: run make check instead" in fake_anthropic.requests[-1].system
        again = await s.request("phoenix/reloadInstructions", {"conversationId": cid})
        assert again["changed"] is False


@pytest.mark.req("REQ-INSTR-002")
async def test_a_reload_while_the_agent_works_is_refused_as_busy(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    fake_anthropic.enqueue(Reply.hanging())
    async with session(fake_anthropic, tmp_path) as s:
        cid = await s.new()
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "think"})
        await s.wait_status(cid, "awaiting_llm")
        error = await s.error("phoenix/reloadInstructions", {"conversationId": cid})
        assert error.code == -32002
        await s.request("phoenix/cancel", {"conversationId": cid})
