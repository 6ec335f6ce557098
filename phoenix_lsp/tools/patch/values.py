"""The values of the patch engine: LSP positions, ranges and text edits, a prepared or refused call, and one
validated patch of a call."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Position:
    """An LSP position: zero-based line and character offset in UTF-16 code units."""

    line: int
    character: int


@dataclass(frozen=True)
class Range:
    """An LSP range in the coordinates of the original text (end exclusive)."""

    start: Position
    end: Position


@dataclass(frozen=True)
class TextEdit:
    """One LSP text edit against the original text."""

    range: Range
    new_text: str

    def to_json(self) -> dict[str, Any]:
        """The edit as LSP JSON (``{"range": ..., "newText": ...}``)."""
        s, e = self.range.start, self.range.end
        return {
            "range": {
                "start": {"line": s.line, "character": s.character},
                "end": {"line": e.line, "character": e.character},
            },
            "newText": self.new_text,
        }


@dataclass(frozen=True)
class PreparedPatch:
    """What a successful patch call changes.

    ``edits`` are minimal, sorted, non-overlapping (not even touching) edits against the original text;
    applying them yields ``new_text``. ``clipboards`` is the conversation's clipboard state after the call:
    the server keeps it only once the editor has applied the edit, so a failed call changes nothing.
    """

    new_text: str
    edits: tuple[TextEdit, ...]
    creates_file: bool
    diff: str
    message: str
    warnings: tuple[str, ...]
    clipboards: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PatchError:
    """A refused patch call: ``message`` is for the model (what happened, why, what to do next)."""

    message: str


@dataclass(frozen=True)
class Patch:
    """One validated patch of a call (``patches[index]``), its reindent flattened."""

    index: int
    operation: str
    old_text: str | None
    new_text: str | None
    to_clipboard: str | None
    from_clipboard: str | None
    strip: str | None
    add: str | None
    has_reindent: bool

    @property
    def label(self) -> str:
        return f"patches[{self.index}] ({self.operation})"


class Refused(Exception):
    """Internal: carries a PatchError message out of nested helpers."""
