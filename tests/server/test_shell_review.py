"""Where the kernel cannot hold a command's changes, commands run as before and each conversation is told once
(REQ-BASH-032): the note starts the first command's result, which every client shows as the tool's summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from phoenix_lsp.core.values import ToolUse
from phoenix_lsp.sandbox import overlay
from phoenix_lsp.server import shell_review
from phoenix_lsp.tools import bash

pytestmark = pytest.mark.req("REQ-BASH-032")


class Conversation:
    def __init__(self, cid: str) -> None:
        self.id = cid

    def emit(self, event: Any) -> int:
        raise AssertionError("nothing to show: nothing was captured")

    async def host_call(self, *args: Any, **kwargs: Any) -> tuple[bool, str, str]:
        raise AssertionError("nothing to review: nothing was captured")


def capture(cid: str, data: Path) -> shell_review.ShellCapture:
    conversation = Conversation(cid)
    return shell_review.ShellCapture(conversation, conversation, None,  # type: ignore[arg-type]
                                     ToolUse("t1", "bash", {"command": "x"}), data, str)


async def test_without_an_overlay_commands_run_as_today_and_the_conversation_is_told_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(overlay, "overlay_support", lambda base=None: "Linux 5.4 cannot mount an overlay here")
    ws = tmp_path / "ws"
    ws.mkdir()
    ctx = bash.BashContext(working_directory=ws, restricted=False, capture=capture("c-once", tmp_path / "data"))
    first = await bash.run_bash({"command": "echo landed > a.txt"}, ctx)
    assert first.output.startswith("[phoenix-lsp: shell changes are not reviewed on this system: Linux 5.4")
    assert (ws / "a.txt").read_text() == "landed\n"  # as today: at once, and said so
    ctx = bash.BashContext(working_directory=ws, restricted=False, capture=capture("c-once", tmp_path / "data"))
    second = await bash.run_bash({"command": "echo again > b.txt"}, ctx)
    assert "not reviewed" not in second.output and (ws / "b.txt").exists()
    other = bash.BashContext(working_directory=ws, restricted=False, capture=capture("c-other", tmp_path / "data"))
    assert "not reviewed" in (await bash.run_bash({"command": "true"}, other)).output  # once per conversation
