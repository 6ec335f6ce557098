"""Fixtures for the terminal client tests: the real ``phoenix-lsp chat`` process, driven through pipes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.zygote import launch_command
from tests.fake_anthropic import FakeAnthropic

API_KEY = "sk-ant-client-test-key-0123456789"
ROOT = Path(__file__).resolve().parents[2]


class ChatProcess:
    """``python -m phoenix_lsp chat`` as a subprocess: stdin a pipe, stdout collected by a thread."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        # the chat is forked by this worker's zygote (tests/e2e/zygote_launch.py: the same process as far as
        # the test can tell, its signals passed on, killed with its launcher), without its second of imports;
        # the server it starts is its own, a fresh interpreter as a user's is
        start = [sys.executable, "-m", "phoenix_lsp"]
        launch = launch_command()
        if launch is not None:
            start, env = launch[0], {**env, **launch[1]}
        self.proc = subprocess.Popen(
            [*start, "chat", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=ROOT,
        )
        self._out = ""
        self._err = ""
        self._closed: set[str] = set()  # the streams that reached EOF
        self._cond = threading.Condition()
        self._threads = [
            threading.Thread(target=self._pump, args=(self.proc.stdout, "_out"), daemon=True),
            threading.Thread(target=self._pump, args=(self.proc.stderr, "_err"), daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _pump(self, stream: object, attr: str) -> None:
        fd = stream.fileno()  # type: ignore[attr-defined]
        while chunk := os.read(fd, 4096):
            with self._cond:
                setattr(self, attr, getattr(self, attr) + chunk.decode("utf-8", "replace"))
                self._cond.notify_all()
        with self._cond:  # EOF is news too: a waiter for text that can no longer come gives up at once
            self._closed.add(attr)
            self._cond.notify_all()

    @property
    def out(self) -> str:
        with self._cond:
            return self._out

    @property
    def err(self) -> str:
        with self._cond:
            return self._err

    def wait_for(self, text: str, start: int = 0, timeout: float = 60.0) -> int:
        """Wait until ``text`` appears in stdout at or after ``start``; return the index just past it.

        Woken by each chunk the reader thread appends and by the end of stdout (no interval)."""
        with self._cond:
            self._cond.wait_for(lambda: self._out.find(text, start) >= 0 or "_out" in self._closed, timeout)
            index = self._out.find(text, start)
            if index < 0:
                raise AssertionError(
                    f"{text!r} not in the chat output within {timeout}s (exit code {self.proc.poll()}).\n"
                    f"stdout:\n{self._out}\nstderr:\n{self._err}"
                )
            return index + len(text)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((line + "\n").encode())
        self.proc.stdin.flush()

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def interrupt(self) -> None:
        self.proc.send_signal(signal.SIGINT)

    def wait(self, timeout: float = 60.0) -> int:
        code = self.proc.wait(timeout)
        for thread in self._threads:
            thread.join(5)
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


@pytest.fixture
def chat_env(fake_anthropic: FakeAnthropic) -> dict[str, str]:
    """The environment of a chat run: the fake Anthropic API (a FAKE: the real one is out of reach here)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "PHOENIX_"))}
    return {**env, **fake_anthropic.env(API_KEY), "PHOENIX_RETRY_BASE_MS": "20", "NO_COLOR": "1"}


@pytest.fixture
def start_chat(tmp_path: Path, chat_env: dict[str, str]) -> Iterator[Callable[..., ChatProcess]]:
    """``start_chat(*args, env=None) -> ChatProcess`` in ``tmp_path/work`` with data in ``tmp_path/data``; ``args``
    are more of ``chat``'s options (``--continue``, ``--resume ID``)."""
    started: list[ChatProcess] = []
    work = tmp_path / "work"
    work.mkdir()

    def start(*args: str, env: dict[str, str] | None = None) -> ChatProcess:
        chat = ChatProcess(["--cwd", str(work), "--data-dir", str(tmp_path / "data"), *args], env or chat_env)
        started.append(chat)
        return chat

    yield start
    for chat in started:
        chat.kill()
