"""A bash command's changes reviewed through an ACP client (issue 36, REQ-BASH-032): the question is the client's
permission request with a ``diff`` content per text file; on Allow the editor writes each text file through
``fs/write_text_file`` and the server places what ACP cannot express (a deletion, a rename, binary files); on
Reject nothing lands. The ACP SDK's own client side drives ``phoenix-lsp acp``; the command runs in a real kernel
overlay; the witnesses are the disk and what the client received."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from phoenix_lsp.sandbox import overlay
from tests.acp.harness import TIMEOUT, Editor, agent, tool_result
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.sandbox.capture import run_plain, tree_digest

SUPPORT = overlay.overlay_support()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(SUPPORT is not None, reason=f"no overlay here: {SUPPORT}"),
              pytest.mark.req("REQ-BASH-032")]

COMMAND = ("sed -i s/one/ONE/ a.txt && echo new > new.txt && rm gone.txt && mv old.txt moved.txt && "
           "printf '\\0bin' > b.bin")


def workspace(w: Path) -> None:
    (w / "a.txt").write_text("zero\none\ntwo\n")
    (w / "gone.txt").write_text("bye\n")
    (w / "old.txt").write_text("kept text\n")


async def run(a: Any, fake: FakeAnthropic, decision: str) -> None:
    fake.enqueue(Reply.tool_reply(ToolUseBlock("bash", {"command": COMMAND}, id="toolu_b1")), Reply.text_reply("ok"))
    session = await a.new()
    sid = session.session_id
    await asyncio.wait_for(a.conn.set_session_mode(session_id=sid, mode_id="unrestricted"), TIMEOUT)
    a.editor.answer = lambda asked: a.editor.option(asked, "allow_once" if len(a.editor.asked) == 1 else decision)
    assert (await a.prompt(sid, "change it")).stop_reason == "end_turn"


async def test_allow_writes_the_text_files_through_the_editor_and_the_server_places_the_rest(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    editor = Editor(save=True)
    async with agent(fake_anthropic, tmp_path, editor) as a:
        w = a.workdir
        workspace(w)
        copy = tmp_path / "expected"
        shutil.copytree(w, copy)
        run_plain(COMMAND, copy)
        await run(a, fake_anthropic, "allow_once")
        review = editor.asked[1].tool_call
        assert review.tool_call_id == "toolu_b1.review" and review.kind == "edit"
        diffs = {Path(c.path).name: c for c in review.content if c.type == "diff"}
        assert set(diffs) == {"a.txt", "new.txt"}  # one per text file the editor writes
        assert (diffs["a.txt"].old_text, diffs["a.txt"].new_text) == ("zero\none\ntwo\n", "zero\nONE\ntwo\n")
        assert sorted(Path(p).name for p, _ in editor.writes) == ["a.txt", "new.txt"]
        assert editor.statuses("toolu_b1.review")[-1] == "completed"
        assert tree_digest(w) == tree_digest(copy)  # what the command would have produced
    told = str(tool_result(fake_anthropic, "toolu_b1")["content"])
    assert "reviewed and applied" in told and "renamed moved.txt" in told


async def test_reject_writes_nothing_and_leaves_the_disk_as_it_was(fake_anthropic: FakeAnthropic,
                                                                   tmp_path: Path) -> None:
    editor = Editor(save=True)
    async with agent(fake_anthropic, tmp_path, editor) as a:
        w = a.workdir
        workspace(w)
        before = tree_digest(w)
        await run(a, fake_anthropic, "reject_once")
        assert not editor.writes and tree_digest(w) == before
    assert "the user rejected them" in str(tool_result(fake_anthropic, "toolu_b1")["content"])


async def test_a_client_that_cannot_write_gets_nothing_behind_its_back(fake_anthropic: FakeAnthropic,
                                                                       tmp_path: Path) -> None:
    editor = Editor(save=True, write=False)
    async with agent(fake_anthropic, tmp_path, editor) as a:
        w = a.workdir
        workspace(w)
        before = tree_digest(w)
        await run(a, fake_anthropic, "allow_once")
        assert len(editor.asked) == 1 and tree_digest(w) == before  # not asked: it could not land
    told = str(tool_result(fake_anthropic, "toolu_b1")["content"])
    assert "fs.writeTextFile" in told and "discarded" in told


@pytest.mark.req("REQ-BASH-031")
async def test_an_unsaved_change_in_the_editor_is_not_overwritten(fake_anthropic: FakeAnthropic,
                                                                  tmp_path: Path) -> None:
    editor = Editor(save=True)
    async with agent(fake_anthropic, tmp_path, editor) as a:
        w = a.workdir
        workspace(w)
        editor.buffers[str(w / "a.txt")] = "zero\none\ntwo\nthe user's unsaved line\n"
        await run(a, fake_anthropic, "allow_once")
        assert str(w / "a.txt") in editor.reads  # the editor was asked for its text
        assert sorted(Path(p).name for p, _ in editor.writes) == ["new.txt"]  # a.txt was left to the user
        assert (w / "a.txt").read_text() == "zero\none\ntwo\n" and not (w / "gone.txt").exists()
    told = str(tool_result(fake_anthropic, "toolu_b1")["content"])
    assert "not applied: a.txt: changed in the editor" in told
