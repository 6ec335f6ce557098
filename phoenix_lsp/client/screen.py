"""What the terminal client writes: answers as markdown on a terminal (``markdown.py``), plain text that knows
whether the cursor is at the start of a line, an open prompt drawn again below other output, colours only on a
terminal, and control sequences of whatever the model, a tool or a file says made inert (REQ-SEC-004)."""

from __future__ import annotations

import os
from typing import Any, TextIO

from ..safe_text import terminal_safe
from .markdown import MarkdownStream


class Screen:
    """Plain-text output that knows whether the cursor is at the start of a line; colours only on a TTY."""

    COLORS = {"dim": "2", "bold": "1", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}

    def __init__(self, stream: TextIO, color: bool | None = None, echo_input: bool = False,
                 markdown: bool | None = None) -> None:
        self.stream = stream
        terminal = isatty(stream) and os.environ.get("TERM") != "dumb"
        if color is None:
            color = terminal and not os.environ.get("NO_COLOR")
        self.color = color
        if markdown is None:
            markdown = terminal
        #: answers drawn as markdown on a terminal (issue 38); plain text to a pipe or a file
        self.markdown: MarkdownStream | None = MarkdownStream(stream, color) if markdown else None
        #: when stdin is not a terminal nothing echoes the typed line, so the client does (readable logs)
        self.echo_input = echo_input
        self.at_line_start = True
        #: the prompt the user is typing at, redrawn when other output interrupts it
        self.open_prompt: str | None = None

    def paint(self, text: str, style: str | None) -> str:
        """``text`` wrapped in the ANSI colour ``style`` when colours are on."""
        if not style or not self.color:
            return text
        codes = ";".join(self.COLORS[s] for s in style.split("+"))
        return f"\x1b[{codes}m{text}\x1b[0m"

    def text(self, text: str) -> None:
        """Streamed text, written as it comes (control sequences made inert: REQ-SEC-004)."""
        if not text:
            return
        if self.markdown is not None:
            self.markdown.feed(text)
            self.at_line_start = self.markdown.at_line_start
            return
        text = terminal_safe(text)
        self.stream.write(text)
        self.stream.flush()
        self.at_line_start = text.endswith("\n")

    def answer(self, text: str) -> None:
        """A whole answer of the model: drawn as markdown on a terminal, else one plain line (or several)."""
        if self.markdown is None:
            self.line(text)
            return
        self.end_line()
        self.markdown.render(text)
        self.at_line_start = True

    def end_line(self) -> None:
        """Finish a partly written line, so the next output starts on a fresh one (an answer's last block is
        drawn first)."""
        if self.markdown is not None:
            self.markdown.finish()
            self.at_line_start = True
        if not self.at_line_start:
            self.stream.write("\n")
            self.stream.flush()
            self.at_line_start = True

    def line(self, text: str, style: str | None = None) -> None:
        """One full line (or several), on a fresh line; an open prompt is drawn again below it. The text
        may come from the model, a tool or a file: its control sequences are made inert (REQ-SEC-004)."""
        self.end_line()
        self.stream.write(self.paint(terminal_safe(text), style) + "\n")
        self.at_line_start = True
        if self.open_prompt is not None:
            self.stream.write(self.open_prompt)
            self.at_line_start = False
        self.stream.flush()

    def prompt(self, text: str, style: str | None = None) -> None:
        """A prompt, without a newline: the user types after it."""
        self.end_line()
        self.open_prompt = self.paint(terminal_safe(text), style)
        self.stream.write(self.open_prompt)
        self.stream.flush()
        self.at_line_start = False

    def typed(self, line: str) -> None:
        """The user's line was consumed: on a terminal it already echoed, from a pipe we echo it."""
        if self.echo_input and not self.at_line_start:
            self.stream.write(line + "\n")
            self.stream.flush()
        self.at_line_start = True
        self.open_prompt = None

    def close_prompt(self) -> None:
        """The prompt is no longer waiting for input (the question closed; the client is leaving)."""
        self.open_prompt = None


def isatty(stream: Any) -> bool:
    """True when ``stream`` is a terminal (False for a pipe, a file or a closed stream)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False
