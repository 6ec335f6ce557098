"""Attack on the terminal chat's input (REQ-TERM-005): a pasted 100 MB line, which arrives with no newline for as
long as it is being pasted, must not be read whole into the client's memory, nor sent.

The real ``phoenix-lsp chat`` process and its server, stdin a pipe. The witnesses are outside the server: the
client process's peak memory (``VmHWM`` of ``/proc/<pid>/status``) measured after a first ordinary turn and again
once the 100 MB have been read (the pipe holds no more than 64 KiB, so a write that returned was read), before
the line's newline comes; what the terminal showed (the refusal, saying what to do); and what the fake model
server received (the next line's message alone).
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.client import conftest as client_fixtures
from tests.client.conftest import ChatProcess
from tests.fake_anthropic import FakeAnthropic, Reply

pytestmark = pytest.mark.slow  # the terminal client and its server as subprocesses

chat_env = client_fixtures.chat_env
start_chat = client_fixtures.start_chat

PASTED = 100 * 1024 * 1024
#: what the client's peak memory may grow by while it reads the pasted line: the message limit (1,000,000
#: characters) and the reads around it, far below the line itself
GROWTH = 32 * 1024 * 1024


def peak(pid: int) -> int:
    """The process's peak resident memory, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM line")


def paste(chat: ChatProcess, size: int) -> None:
    """Write ``size`` bytes of one line without its newline, as a terminal delivers a paste under way."""
    assert chat.proc.stdin is not None
    block = b"x" * (1024 * 1024)
    for _ in range(size // len(block)):
        chat.proc.stdin.write(block)
    chat.proc.stdin.flush()


@pytest.mark.req("REQ-TERM-005")
def test_a_pasted_100_mb_line_is_neither_held_nor_sent(start_chat: object, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(Reply.text_reply("first answer"), Reply.text_reply("second answer"))
    chat: ChatProcess = start_chat()  # type: ignore[operator]
    at = chat.wait_for("> ")
    chat.send("hello")
    at = chat.wait_for("first answer", at)
    at = chat.wait_for("> ", at)
    before = peak(chat.proc.pid)

    writer = threading.Thread(target=paste, args=(chat, PASTED), daemon=True)
    writer.start()
    writer.join(300)
    assert not writer.is_alive(), "the client stopped reading its input"
    grown = peak(chat.proc.pid) - before  # the line is read, its newline not come yet
    assert grown < GROWTH, f"the client's peak memory grew by {grown:,} bytes while it read a {PASTED:,}-byte line"

    chat.send("")  # the pasted line's newline
    at = chat.wait_for("[not sent]", at)
    refusal = chat.out[at - len("[not sent]"):]
    assert f"{PASTED:,} characters long" in refusal and "1,000,000" in refusal, refusal[:400]
    assert "save the text in a file" in refusal, refusal[:400]
    chat.send("and a short one")
    chat.wait_for("second answer", at)
    sent = [r.body["messages"][-1]["content"] for r in fake_anthropic.requests]
    assert len(fake_anthropic.requests) == 2 and "and a short one" in str(sent[-1]), str(sent)[:400]
    assert all(len(str(content)) < 10_000 for content in sent)
    chat.close_stdin()
    assert chat.wait() == 0
