"""What the terminal client's prompt loop waits for: a line the user typed (read by a thread, so a blocking
read never stalls the event loop) or a signal (end of input, Ctrl-C, a change of the conversation's state,
the server gone)."""

from __future__ import annotations

import codecs
import os
from dataclasses import dataclass
from typing import Any

from ..protocol.params import MESSAGE_TEXT_MAX


@dataclass(frozen=True)
class Line:
    """A line the user typed (without its newline)."""

    text: str


@dataclass(frozen=True)
class TooLong:
    """A line over :data:`LINE_MAX` characters, dropped as it was read (REQ-TERM-005): ``chars`` of it were
    read before its newline or the end of the input (``ended``: the input ended inside it)."""

    chars: int
    ended: bool = False

    def refusal(self) -> str:
        """What the user is told: what was refused, why, and what to do next."""
        where = "the input ended inside it, " if self.ended else ""
        return (f"[not sent] the line you typed or pasted is {self.chars:,} characters long ({where}more than the "
                f"{LINE_MAX:,} a message may hold), so it was not read into memory or sent. Send the part that "
                "matters, or save the text in a file in this folder and ask the assistant to read it.")


class _Signal:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


EOF = _Signal("EOF")  # stdin ended (Ctrl-D, or the pipe closed)
INTERRUPT = _Signal("INTERRUPT")  # Ctrl-C
CHANGED = _Signal("CHANGED")  # the conversation's state changed: status, a question opened or closed
GONE = _Signal("GONE")  # the server process exited

Item = Line | TooLong | _Signal

#: the longest line read: a message's text, as the server bounds it on every surface (``MESSAGE_TEXT_MAX``)
LINE_MAX = MESSAGE_TEXT_MAX
#: how much is read from the input at a time
CHUNK = 65536


def read_lines(fd: int, post: Any, most: int = LINE_MAX) -> None:
    """Read ``fd`` until EOF, calling ``post(Line(...))`` per line and ``post(EOF)`` at the end (a thread).

    A line is bounded as it is read (REQ-TERM-005): once more than ``most`` characters of it came without a
    newline, what came is dropped and the rest of the line is counted, not kept, until its newline; then
    ``post(TooLong(...))``. So a pasted 100 MB line, or input with no newline at all, holds at most ``most``
    characters and one read in memory. ``os.read`` (not ``sys.stdin``) so that the daemon thread holds no Python
    buffer lock at exit.
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    pending: list[str] = []  # the pieces of the line under way, ``held`` characters in all
    held = 0
    dropped: int | None = None  # the characters of an over-long line counted so far, while it is skipped
    while True:
        try:
            chunk = os.read(fd, CHUNK)
        except OSError:
            chunk = b""
        text = decoder.decode(chunk, final=not chunk)
        pieces = text.split("\n")
        for number, piece in enumerate(pieces):
            complete = number < len(pieces) - 1  # a newline follows it
            if dropped is not None:
                dropped += len(piece)
            else:
                pending.append(piece)
                held += len(piece)
                if held > most:
                    dropped, pending, held = held, [], 0
            if complete:
                if dropped is not None:
                    post(TooLong(dropped))
                else:
                    post(Line("".join(pending).rstrip("\r")))
                pending, held, dropped = [], 0, None
        if not chunk:
            if dropped is not None:
                post(TooLong(dropped, ended=True))
            elif held:
                post(Line("".join(pending).rstrip("\r")))
            post(EOF)
            return
