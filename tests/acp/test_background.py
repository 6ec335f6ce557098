"""``/background`` through an ACP client (issue 36, REQ-BASH-045): the ACP SDK's own client side drives
``phoenix-lsp acp``; the model starts a background command in a real kernel overlay that writes a file and keeps
running. ``/background`` answers with what it changed so far (nothing lands); ``/background stop`` stops it, and its
review is asked as any command's (allowed here): the file reaches the disk through ``fs/write_text_file``. The
witnesses are the disk and what the client received."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from phoenix_lsp.sandbox import overlay
from tests.acp.harness import TIMEOUT, Editor, agent
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.waiting import eventually

SUPPORT = overlay.overlay_support()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(SUPPORT is not None, reason=f"no overlay here: {SUPPORT}"),
              pytest.mark.req("REQ-BASH-045")]


async def test_background_shows_the_changes_so_far_and_stop_leads_to_their_review(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    editor = Editor(save=True)
    outside = tmp_path / "wrote"
    command = f"echo so far > partial.txt && touch {outside} && sleep 300"
    async with agent(fake_anthropic, tmp_path, editor) as a:
        w = a.workdir
        fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("bash", {"command": command, "run": "background"})),
                               Reply.text_reply("started"))
        session_id = (await a.new()).session_id
        await asyncio.wait_for(a.conn.set_session_mode(session_id=session_id, mode_id="unrestricted"), TIMEOUT)
        a.editor.answer = lambda asked: a.editor.option(asked, "allow_once")
        assert (await a.prompt(session_id, "start it")).stop_reason == "end_turn"
        await eventually(outside.exists, "the command wrote its file into its layer", 30)
        assert (await a.prompt(session_id, "/background")).stop_reason == "end_turn"
        shown = editor.text()
        assert "changed so far" in shown and "partial.txt" in shown and "+so far" in shown
        assert not (w / "partial.txt").exists(), "a look lands nothing"
        assert (await a.prompt(session_id, "/background stop")).stop_reason == "end_turn"
        assert "Stopped" in editor.text()
        await editor.wait_until(lambda: (w / "partial.txt").exists())
        assert (w / "partial.txt").read_text() == "so far\n"
        assert (await a.prompt(session_id, "/background")).stop_reason == "end_turn"
        assert "Nothing was shown: this conversation has no running background command" in editor.text()
