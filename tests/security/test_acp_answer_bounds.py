"""An ACP client's answer to ``fs/read_text_file`` has bounds of its own (issue 34, REQ-PROTO-063).

The editor's answer to the agent's read was bounded only as any line is (64 MiB, 1,000,000 tokens), and the SDK
decoded it (and its observer deep-copied it) on the event loop. An answer holds a file's text and a few members
around it: it now has the read tool's bound in bytes and 1,000 tokens, checked before the SDK reads it; over
them the read fails and the disk is read, as when the editor cannot read the file (REQ-ACP-020). An answer
within them (a 50 MB file, ``test_acp_attacks``) still reaches the model cut to the read tool's bounds. The
witness is what the model was sent (the fake model server's record): the disk's text, not the editor's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp.schema import ReadTextFileResponse

from tests.acp.harness import Editor, agent, tool_result
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock


class Padded(Editor):
    """An editor whose answer to fs/read_text_file carries 300,000 short strings in its ``_meta``."""

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
                             **kwargs: Any) -> ReadTextFileResponse:
        self.reads.append(path)
        self._changed()
        return ReadTextFileResponse(content="the editor's text\n", _meta={"pad": [""] * 300_000})


@pytest.mark.req("REQ-PROTO-063", "REQ-ACP-010")
async def test_an_editors_answer_over_its_own_bounds_is_not_read_and_the_disk_is(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("read_file", {"path": "a.txt"}, id="toolu_r1")),
                           Reply.text_reply("read"), Reply.text_reply("still here"))
    editor = Padded()
    async with agent(fake_anthropic, tmp_path, editor) as a:
        (a.workdir / "a.txt").write_text("the disk's text\n")
        session = await a.new()
        assert (await a.prompt(session.session_id, "read it")).stop_reason == "end_turn"
        assert editor.reads == [str(a.workdir / "a.txt")]  # it was asked
        assert (await a.prompt(session.session_id, "hello")).stop_reason == "end_turn"  # and the agent goes on
    content = str(tool_result(fake_anthropic, "toolu_r1")["content"])
    assert "the disk's text" in content and "the editor's text" not in content, content
