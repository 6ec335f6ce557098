"""An independent LSP text-edit applier for checking the patch engine's edits, and tests of it.

It knows nothing of the engine: it splits the document the way LSP does (``\\n``, ``\\r\\n`` and ``\\r``
end a line), walks a line's code points counting UTF-16 code units, and applies edits from last to first.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

import pytest


def _line_starts(text: str) -> list[int]:
    starts = [0]
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\r" and i + 1 < n and text[i + 1] == "\n":
            i += 2
            starts.append(i)
        elif ch in "\r\n":
            i += 1
            starts.append(i)
        else:
            i += 1
    return starts


def _offset(text: str, starts: list[int], line: int, character: int) -> int:
    assert 0 <= line < len(starts), f"line {line} out of range"
    i = starts[line]
    units = 0
    while units < character:
        assert i < len(text) and text[i] not in "\r\n", f"character {character} past the end of line {line}"
        units += 2 if ord(text[i]) > 0xFFFF else 1
        i += 1
    assert units == character, "position splits a surrogate pair"
    return i


def apply_lsp_edits(text: str, edits: Iterable[dict[str, Any]]) -> str:
    """Apply LSP TextEdit JSON objects to ``text``; fails on overlap or invalid positions."""
    starts = _line_starts(text)
    spans = []
    for edit in edits:
        r = edit["range"]
        s = _offset(text, starts, r["start"]["line"], r["start"]["character"])
        e = _offset(text, starts, r["end"]["line"], r["end"]["character"])
        assert s <= e
        spans.append((s, e, edit["newText"]))
    spans.sort(key=lambda x: (x[0], x[1]))
    for (_, e1, _), (s2, _, _) in itertools.pairwise(spans):
        assert e1 <= s2, "overlapping edits"
    for s, e, t in reversed(spans):
        text = text[:s] + t + text[e:]
    return text


def _edit(sl: int, sc: int, el: int, ec: int, t: str) -> dict[str, Any]:
    return {"range": {"start": {"line": sl, "character": sc}, "end": {"line": el, "character": ec}}, "newText": t}


def test_applier_counts_utf16_units_and_all_line_endings() -> None:
    text = "a😀b\r\nc\rd\ne"
    assert apply_lsp_edits(text, [_edit(0, 3, 0, 4, "B")]) == "a😀B\r\nc\rd\ne"
    assert apply_lsp_edits(text, [_edit(1, 0, 1, 1, "C"), _edit(3, 0, 3, 1, "E")]) == "a😀b\r\nC\rd\nE"
    assert apply_lsp_edits(text, [_edit(0, 4, 1, 0, "")]) == "a😀bc\rd\ne"
    with pytest.raises(AssertionError):
        apply_lsp_edits(text, [_edit(0, 2, 0, 2, "x")])  # inside the surrogate pair
    with pytest.raises(AssertionError):
        apply_lsp_edits(text, [_edit(0, 0, 0, 2, "x"), _edit(0, 1, 0, 3, "y")])
