"""An answer drawn as markdown in a terminal while it streams (issue 38): emphasis, lists, headings and code
blocks with highlighting, by ``rich``.

Each delta is written at once as it comes (the user sees the answer grow); when a block is finished (a blank
line after a paragraph, a list or a heading, or the closing fence of a code block) its raw text is erased and
the block is drawn once, rendered. So each block is rendered once, never the whole answer again per delta. A
block taller than the terminal stays as it was typed (the part scrolled away could not be erased). The text is
made inert (``terminal_safe``: REQ-SEC-004) before ``rich`` reads it, so only ``rich``'s own sequences reach the
terminal; links are not made clickable (a model's link text can say anything)."""

from __future__ import annotations

import re
from typing import TextIO

from rich.cells import cell_len
from rich.console import Console
from rich.markdown import Markdown

from ..safe_text import terminal_safe

__all__ = ["MarkdownStream"]

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
#: the colours of code blocks (rich's names a Pygments style)
CODE_THEME = "monokai"


class MarkdownStream:
    """The markdown of one answer at a time, written to a terminal ``stream`` block by block."""

    def __init__(self, stream: TextIO, color: bool) -> None:
        self.stream = stream
        self.console = Console(file=stream, force_terminal=True, no_color=not color, highlight=False,
                               emoji=False, markup=False, soft_wrap=False)
        self.block: list[str] = []  # the finished lines of the block in progress
        self.partial = ""  # the line being written
        self.fence: str | None = None  # the marker of the code block in progress
        self.shown = ""  # what was written raw since the block began (erased when it is drawn)

    @property
    def at_line_start(self) -> bool:
        return not self.partial

    def feed(self, text: str) -> None:
        """Write a delta of the answer; draw each block it finishes."""
        text = terminal_safe(text)
        while text:
            line, newline, text = text.partition("\n")
            self.stream.write(line + newline)
            self.shown += line + newline
            self.partial += line
            if newline:
                done, self.partial = self.partial, ""
                self._line(done)
        self.stream.flush()

    def finish(self) -> None:
        """The answer stopped (it ended, or a tool call or a question comes): draw what is left."""
        if self.partial:
            self.stream.write("\n")
            self.shown += "\n"
            self.block.append(self.partial)
            self.partial = ""
        if self.block:
            self._draw()
        self.fence = None
        self.shown = ""
        self.stream.flush()

    def render(self, text: str) -> None:
        """Draw a whole answer at once (a resumed conversation's history)."""
        self.stream.write(self._rendered(terminal_safe(text)))
        self.stream.flush()

    def _rendered(self, source: str) -> str:
        with self.console.capture() as captured:
            self.console.print(Markdown(source, code_theme=CODE_THEME, hyperlinks=False))
        drawn = captured.get().lstrip("\n")  # rich opens a list with an empty line
        return drawn if drawn.endswith("\n") else drawn + "\n"

    def _line(self, line: str) -> None:
        if self.fence is not None:
            self.block.append(line)
            if line.strip().startswith(self.fence) and not line.strip().strip(self.fence[0]):
                self.fence = None
                self._draw()
            return
        fence = _FENCE.match(line)
        if fence:
            self.block.append(line)
            self.fence = fence.group(1)
        elif not line.strip():
            if self.block:
                self._draw()
                self.stream.write("\n")  # the blank line between blocks
            self.shown = ""
        else:
            self.block.append(line)

    def _rows(self) -> int:
        width = max(self.console.width, 1)
        return sum(max(1, -(-cell_len(line) // width)) for line in self.shown.split("\n")[:-1])

    def _draw(self) -> None:
        """Erase the block's raw text and draw it rendered (left raw when taller than the terminal)."""
        source = "\n".join(self.block)
        rows = self._rows()
        self.block = []
        if 0 < rows < self.console.height:
            drawn = self._rendered(source)
            self.stream.write(f"\x1b[{rows}F\x1b[J")  # to the block's first row, and clear below
            self.stream.write(drawn)
        self.shown = ""
