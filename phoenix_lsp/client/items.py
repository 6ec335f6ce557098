"""What the terminal client's prompt loop waits for: a line the user typed (read by a thread, so a blocking
read never stalls the event loop) or a signal (end of input, Ctrl-C, a change of the conversation's state,
the server gone)."""

from __future__ import annotations

import codecs
import os
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Line:
    """A line the user typed (without its newline)."""

    text: str


class _Signal:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


EOF = _Signal("EOF")  # stdin ended (Ctrl-D, or the pipe closed)
INTERRUPT = _Signal("INTERRUPT")  # Ctrl-C
CHANGED = _Signal("CHANGED")  # the conversation's state changed: status, a question opened or closed
GONE = _Signal("GONE")  # the server process exited

Item = Line | _Signal


def read_lines(fd: int, post: Any) -> None:
    """Read ``fd`` until EOF, calling ``post(Line(...))`` per line and ``post(EOF)`` at the end (a thread).

    ``os.read`` (not ``sys.stdin``) so that the daemon thread holds no Python buffer lock at exit.
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    pending = ""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            pending += decoder.decode(b"", final=True)
            if pending:
                post(Line(pending.rstrip("\r")))
            post(EOF)
            return
        pending += decoder.decode(chunk)
        while "\n" in pending:
            line, pending = pending.split("\n", 1)
            post(Line(line.rstrip("\r")))
