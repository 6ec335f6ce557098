"""``/undo`` through an ACP client (issue 36, REQ-BASH-041): the ACP SDK's own client side drives ``phoenix-lsp
acp``; the command runs in a real kernel overlay and its review is allowed; then the user sends ``/undo``. The text
files get their old text through ``fs/write_text_file``, and the server restores the rest (deleted, created and
binary files). The witnesses are the disk (hashed) and what the client received."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from phoenix_lsp.sandbox import overlay
from tests.acp.harness import TIMEOUT, Editor, agent
from tests.acp.test_shell_review import COMMAND, workspace
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.sandbox.capture import tree_digest

SUPPORT = overlay.overlay_support()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(SUPPORT is not None, reason=f"no overlay here: {SUPPORT}"),
              pytest.mark.req("REQ-BASH-041")]


async def test_undo_writes_the_old_texts_through_the_editor_and_the_server_restores_the_rest(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    editor = Editor(save=True)
    async with agent(fake_anthropic, tmp_path, editor) as a:
        w = a.workdir
        workspace(w)
        before = tree_digest(w)
        fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("bash", {"command": COMMAND})), Reply.text_reply("ok"))
        session_id = (await a.new()).session_id
        await asyncio.wait_for(a.conn.set_session_mode(session_id=session_id, mode_id="unrestricted"), TIMEOUT)
        a.editor.answer = lambda asked: a.editor.option(asked, "allow_once")
        assert (await a.prompt(session_id, "change it")).stop_reason == "end_turn"
        assert tree_digest(w) != before
        writes = len(editor.writes)
        assert (await a.prompt(session_id, "/undo")).stop_reason == "end_turn"
        assert tree_digest(w) == before
        assert sorted(Path(p).name for p, _ in editor.writes[writes:]) == ["a.txt"]  # new.txt: the server's
        assert "was undone" in editor.text()
        assert (await a.prompt(session_id, "/undo")).stop_reason == "end_turn"
        assert "Nothing was undone" in editor.text()
