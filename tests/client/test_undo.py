"""The terminal chat's ``/undo`` (issue 36, REQ-BASH-041): the real client process, the real server it starts, a
real overlay capture; only the Anthropic API is the local fake. The model's command changes, creates and deletes
files; the user accepts the review, then types ``/undo``: the witness is the folder on disk, hashed, and what the
chat printed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from phoenix_lsp.sandbox import overlay
from tests.client.conftest import ChatProcess
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.sandbox.capture import tree_digest

SUPPORT = overlay.overlay_support()
pytestmark = [pytest.mark.slow, pytest.mark.req("REQ-BASH-041"),
              pytest.mark.skipif(SUPPORT is not None, reason=f"no overlay here: {SUPPORT}")]


def test_undo_takes_back_the_accepted_change_set(
        start_chat: Callable[..., ChatProcess], fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "a.txt").write_text("one\ntwo\n")
    (work / "gone.txt").write_text("bye\n")
    (work / "data.bin").write_bytes(b"\0old\0")
    before = tree_digest(work)
    command = "sed -i s/one/ONE/ a.txt && echo new > new.txt && rm gone.txt && printf '\\0new' > data.bin"
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("bash", {"command": command})), Reply.text_reply("Done."))
    chat = start_chat()
    at = chat.wait_for("> ")
    chat.send("/policy auto")
    chat.send("/execute")
    at = chat.wait_for("[mode] unrestricted", at)
    at = chat.wait_for("> ", at)
    chat.send("change them")
    at = chat.wait_for("Done.", at)
    at = chat.wait_for("> ", at)
    assert (work / "new.txt").exists() and tree_digest(work) != before
    chat.send("/undo")
    at = chat.wait_for("[undo] Change set ", at)
    chat.wait_for("> ", at)
    assert "was undone: 4 path(s) restored" in chat.out[at - 40:]
    assert tree_digest(work) == before
    chat.send("/undo")
    chat.wait_for("no accepted change set kept", at)
    chat.close_stdin()
    assert chat.wait() == 0, chat.err
