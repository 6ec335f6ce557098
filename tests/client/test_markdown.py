"""Answers drawn as markdown in a real terminal (issue 38): the real client in a pseudo-terminal, its real
server, the fake model streaming a markdown answer in many small deltas. The witness is what the terminal
received: the deltas written as they came, then each finished block drawn once by rich (bold, italics, list
bullets, a highlighted code block), never the whole answer again per delta; to a pipe the same answer stays
plain text."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.client.conftest import ROOT
from tests.client.test_terminal_tty import Tty
from tests.fake_anthropic import FakeAnthropic, Reply

# slow: the test starts the terminal client and its server as subprocesses
pytestmark = [pytest.mark.slow, pytest.mark.req("REQ-TERM-003")]

ANSWER = (
    "Use **add(a, b)** to *sum* them.\n\n"
    "- first item\n- second item\n\n"
    "```python\ndef add(a, b):\n    return a + b\n```\n\n"
    "Title \x1b]0;pwned\x07 stays inert."
)


def test_an_answer_is_drawn_as_markdown_block_by_block_on_a_terminal_and_plain_to_a_pipe(
    fake_anthropic: FakeAnthropic, chat_env: dict[str, str], tmp_path: Path
) -> None:
    fake_anthropic.enqueue(Reply.text_reply(ANSWER, deltas=40, delay_s=0.02), Reply.text_reply(ANSWER))
    env = {k: v for k, v in chat_env.items() if k != "NO_COLOR"}
    env["TERM"] = "xterm-256color"
    work, data = tmp_path / "work", tmp_path / "data"
    work.mkdir()
    tty = Tty(["-m", "phoenix_lsp", "chat", "--cwd", str(work), "--data-dir", str(data)], env)
    try:
        at = tty.wait_for("> ")
        tty.type(b"how do I add?\r")
        at = tty.wait_for("stays inert.", at)
        at = tty.wait_for("> ", at)
        out = tty.out
        tty.type(b"\x04")
        assert tty.exit_code() == 0
    finally:
        tty.close()
    bold = re.findall(r"\x1b\[1madd\(a, b\)\x1b\[0m", out)
    assert len(bold) == 1, out  # the paragraph drawn once, not again per delta
    assert re.search(r"\x1b\[3msum\x1b\[0m", out)  # italics
    assert out.count("• ") == 2 or out.count("\u2022") == 2, out  # the list's bullets, once
    assert re.search(r"\x1b\[[0-9;]*m\s*def\x1b\[0m", out)  # the code block highlighted
    assert "\x1b]0;pwned" not in out  # the model's control sequence is shown inert (REQ-SEC-004)
    # the raw text of each block was erased before it was drawn: a cursor-up-and-clear per block
    assert len(re.findall(r"\x1b\[\d+F\x1b\[J", out)) >= 4

    proc = subprocess.run(
        [sys.executable, "-m", "phoenix_lsp", "chat", "--cwd", str(work), "--data-dir", str(data)],
        input=b"again\n", capture_output=True, env=env, cwd=ROOT, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout.decode()
    assert "Use **add(a, b)** to *sum* them." in text and "```python" in text  # plain: the markdown as written
    assert "\x1b[" not in text
