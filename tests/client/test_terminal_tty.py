"""``phoenix-lsp chat`` in a real pseudo-terminal: Ctrl-C typed at the keyboard reaches the whole foreground
process group, so this proves the server survives it (it runs in a session of its own) while the turn is
cancelled; and that colours are used on a terminal."""

from __future__ import annotations

import os
import pty
import select
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.client.conftest import ROOT
from tests.fake_anthropic import FakeAnthropic, Reply

# slow: each test starts the terminal client and its server as subprocesses
pytestmark = [pytest.mark.slow, pytest.mark.req("REQ-PROTO-035")]


class Tty:
    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        pid, fd = pty.fork()
        if pid == 0:  # the child: exec at once (no Python work after fork)
            os.chdir(ROOT)
            os.execve(sys.executable, [sys.executable, *argv], env)
        self.pid, self.fd, self.out = pid, fd, ""

    def _read(self) -> bool:
        """Append what the terminal has to ``out``; False once the child closed it (EOF or EIO)."""
        try:
            chunk = os.read(self.fd, 4096)
        except OSError:  # EIO: the child closed the terminal
            chunk = b""
        self.out += chunk.decode("utf-8", "replace")
        return bool(chunk)

    def wait_for(self, text: str, start: int = 0, timeout: float = 60.0) -> int:
        """Read the terminal until ``text`` appears at or after ``start``; each read waits for output (select)."""
        deadline = time.monotonic() + timeout
        while (index := self.out.find(text, start)) < 0:
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([self.fd], [], [], max(remaining, 0))
            if not ready:
                raise AssertionError(f"{text!r} not seen within {timeout}s; terminal so far:\n{self.out}")
            if not self._read():
                raise AssertionError(f"{text!r} not seen before the terminal closed:\n{self.out}")
        return index + len(text)

    def type(self, data: bytes) -> None:
        os.write(self.fd, data)

    def exit_code(self, timeout: float = 60.0) -> int:
        """The child's exit code: wait on its pidfd (readable when it exits), reading its output meanwhile."""
        pidfd = os.pidfd_open(self.pid)
        try:
            deadline = time.monotonic() + timeout
            watched = [self.fd, pidfd]
            while pidfd not in (ready := select.select(watched, [], [], max(deadline - time.monotonic(), 0))[0]):
                if not ready:
                    raise AssertionError(f"the chat did not exit within {timeout}s:\n{self.out}")
                if not self._read():
                    watched = [pidfd]  # the terminal is closed: only the exit is left to wait for
            _, status = os.waitpid(self.pid, 0)
            return os.waitstatus_to_exitcode(status)
        finally:
            os.close(pidfd)

    def close(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(self.fd)


def test_ctrl_c_typed_in_a_terminal_cancels_the_turn_and_the_server_survives(
    fake_anthropic: FakeAnthropic, chat_env: dict[str, str], tmp_path: Path
) -> None:
    fake_anthropic.enqueue(
        Reply.text_reply("tick " * 40, deltas=40, delay_s=0.5),
        Reply.text_reply("Still here after Ctrl-C."),
    )
    env = {k: v for k, v in chat_env.items() if k != "NO_COLOR"}
    env["TERM"] = "xterm"
    (tmp_path / "work").mkdir()
    tty = Tty(["-m", "phoenix_lsp", "chat", "--cwd", str(tmp_path / "work"), "--data-dir", str(tmp_path / "data")],
              env)
    try:
        at = tty.wait_for("> ")
        assert "\x1b[" in tty.out  # colours on a terminal
        tty.type(b"a long one please\r")
        at = tty.wait_for("tick", at)
        tty.type(b"\x03")  # the terminal sends SIGINT to the foreground process group
        at = tty.wait_for("turn cancelled", at, timeout=5)
        at = tty.wait_for("> ", at, timeout=5)
        tty.type(b"are you alive?\r")
        at = tty.wait_for("Still here after Ctrl-C.", at)
        tty.wait_for("> ", at)
        tty.type(b"\x04")  # Ctrl-D at an empty prompt
        assert tty.exit_code() == 0
    finally:
        tty.close()
