"""Edits and reads through the ACP client's fs methods: the editor writes, the agent never does (issue 28)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from acp.schema import ReadTextFileResponse

from tests.acp.harness import TIMEOUT, Editor, agent, tool_result
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

pytestmark = pytest.mark.slow  # each test starts the agent as a subprocess

PATCH = {"path": "a.txt", "patches": [{"operation": "replace", "oldText": "one", "newText": "two"}]}


async def _approved_patch(a, fake: FakeAnthropic) -> None:  # type: ignore[no-untyped-def]
    session = await a.new()
    sid = session.session_id
    await asyncio.wait_for(a.conn.set_session_mode(session_id=sid, mode_id="unrestricted"), TIMEOUT)
    a.editor.answer = lambda asked: a.editor.option(asked, "allow_once")
    assert (await a.prompt(sid, "change it")).stop_reason == "end_turn"


@pytest.mark.req("REQ-ACP-009")
async def test_an_approved_patch_is_written_by_the_editor_not_the_agent(fake_anthropic: FakeAnthropic,
                                                                        tmp_path: Path) -> None:
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("patch", PATCH, id="toolu_p1")), Reply.text_reply("ok"))
    async with agent(fake_anthropic, tmp_path) as a:
        target = a.workdir / "a.txt"
        target.write_text("one\nline two\n")
        await _approved_patch(a, fake_anthropic)
        editor = a.editor
        assert editor.writes == [(str(target), "two\nline two\n")]  # the whole new file, absolute path
        diffs = [c for u in editor.call_updates("toolu_p1") for c in (u.content or []) if c.type == "diff"]
        assert diffs and diffs[0].path == str(target)
        assert diffs[0].old_text == "one\nline two\n" and diffs[0].new_text == "two\nline two\n"
        assert editor.asked[0].tool_call.content[0].type == "diff"  # the change is shown when asked
        assert editor.statuses("toolu_p1")[-1] == "completed"
    assert target.read_text() == "one\nline two\n"  # the witness: the agent never wrote the file itself
    assert not tool_result(fake_anthropic, "toolu_p1")["is_error"]


@pytest.mark.req("REQ-ACP-009")
async def test_without_write_text_file_a_patch_is_refused_and_nothing_is_written(fake_anthropic: FakeAnthropic,
                                                                                 tmp_path: Path) -> None:
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("patch", PATCH, id="toolu_p1")), Reply.text_reply("ok"))
    async with agent(fake_anthropic, tmp_path, Editor(read=False, write=False)) as a:
        target = a.workdir / "a.txt"
        target.write_text("one\n")
        await _approved_patch(a, fake_anthropic)
        assert a.editor.statuses("toolu_p1")[-1] == "failed"
        assert "fs.writeTextFile" in a.editor.call_text("toolu_p1")
        assert not a.editor.writes
    assert target.read_text() == "one\n"
    refused = tool_result(fake_anthropic, "toolu_p1")
    assert refused["is_error"] and "never writes files behind the editor's back" in str(refused["content"])


@pytest.mark.req("REQ-ACP-010")
async def test_reads_go_through_the_editor_and_its_unsaved_text_wins(fake_anthropic: FakeAnthropic,
                                                                     tmp_path: Path) -> None:
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("read_file", {"path": "a.txt"}, id="toolu_r1")),
                           Reply.text_reply("read"))
    editor = Editor()
    async with agent(fake_anthropic, tmp_path, editor) as a:
        target = a.workdir / "a.txt"
        target.write_text("saved text\n")
        editor.buffers[str(target)] = "unsaved text\n"
        session = await a.new()
        await a.prompt(session.session_id, "read it")
        assert editor.reads == [str(target)]
    assert "unsaved text" in str(tool_result(fake_anthropic, "toolu_r1")["content"])


class Silent(Editor):
    """An editor whose ``fs/read_text_file`` never answers."""

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
                             **kwargs: Any) -> ReadTextFileResponse:
        self.reads.append(path)
        self._changed()
        await asyncio.get_running_loop().create_future()  # never done
        raise AssertionError("unreachable")


@pytest.mark.req("REQ-ACP-010", "REQ-ACP-020")
async def test_a_read_the_editor_never_answers_comes_from_the_disk_and_the_turn_ends(fake_anthropic: FakeAnthropic,
                                                                                     tmp_path: Path) -> None:
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("read_file", {"path": "a.txt"}, id="toolu_r1")),
                           Reply.text_reply("read"))
    editor = Silent()
    async with agent(fake_anthropic, tmp_path, editor, env={"PHOENIX_ACP_READ_TIMEOUT_S": "0.5"}) as a:
        target = a.workdir / "a.txt"
        target.write_text("saved text\n")
        session = await a.new()
        assert (await a.prompt(session.session_id, "read it")).stop_reason == "end_turn"
        assert editor.reads == [str(target)]
    content = str(tool_result(fake_anthropic, "toolu_r1")["content"])
    assert "saved text" in content and "source: disk" in content
    log = (tmp_path / "data" / "phoenix-lsp.log").read_text()
    assert "PHOENIX_ACP_READ_TIMEOUT_S" in log and "saved text" not in log  # said, without the file's text


@pytest.mark.req("REQ-ACP-009", "REQ-ACP-010")
async def test_a_patch_applies_to_the_editors_unsaved_text(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("patch", PATCH, id="toolu_p1")), Reply.text_reply("ok"))
    editor = Editor()
    async with agent(fake_anthropic, tmp_path, editor) as a:
        target = a.workdir / "a.txt"
        target.write_text("zero\n")  # the disk does not hold "one": only the unsaved buffer does
        editor.buffers[str(target)] = "one\nunsaved\n"
        await _approved_patch(a, fake_anthropic)
        assert editor.writes == [(str(target), "two\nunsaved\n")]
        diffs = [c for u in editor.call_updates("toolu_p1") for c in (u.content or []) if c.type == "diff"]
        assert diffs[-1].old_text == "one\nunsaved\n"
    assert target.read_text() == "zero\n"
