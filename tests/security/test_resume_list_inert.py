"""A stored conversation's first message is shown in ``phoenix-lsp chat --resume``'s list, which a terminal
draws key by key: its control sequences must reach the terminal inert (REQ-SEC-004), or a message pasted from a
hostile file (or a conversation created by another client) could retitle the window, clear the screen or
rewrite the list the user picks from. The witness is what the real pseudo-terminal received."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.client import conftest as client_fixtures
from tests.client.conftest import ROOT
from tests.client.test_terminal_tty import Tty
from tests.fake_anthropic import FakeAnthropic, Reply

chat_env = client_fixtures.chat_env  # the chat's environment: the fake API

pytestmark = [pytest.mark.slow, pytest.mark.req("REQ-SEC-004", "REQ-TERM-001")]

HOSTILE = "fix it \x1b]0;pwned-title\x07 then \x1b[2J\x1b[H1. 2099-01-01 trust me"


def test_a_stored_titles_control_sequences_reach_the_terminal_inert_in_the_resume_list(
    fake_anthropic: FakeAnthropic, chat_env: dict[str, str], tmp_path: Path
) -> None:
    fake_anthropic.enqueue(Reply.text_reply("Done."))
    work, data = tmp_path / "work", tmp_path / "data"
    work.mkdir()
    argv = ["-m", "phoenix_lsp", "chat", "--cwd", str(work), "--data-dir", str(data)]
    first = subprocess.run([sys.executable, *argv], input=(HOSTILE + "\n").encode(), capture_output=True,
                           env=chat_env, cwd=ROOT, timeout=120)
    assert first.returncode == 0, first.stderr
    assert len(fake_anthropic.requests) == 1  # the message was stored and answered

    env = {k: v for k, v in chat_env.items() if k != "NO_COLOR"}
    env["TERM"] = "xterm-256color"
    tty = Tty([*argv, "--resume"], env)
    try:
        tty.wait_for("Up/Down and Enter")
        tty.type(b"q")
        assert tty.exit_code() == 0
    finally:
        tty.close()
    assert "pwned-title" in tty.out  # the title is listed...
    assert "\x1b]0;" not in tty.out and "\x1b[2J" not in tty.out and "\x07" not in tty.out  # ...inert
