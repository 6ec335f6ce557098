"""Locating a patch's oldText in the original text: exactly, then ignoring indentation, trailing blanks and
line endings, then without a first or last line that newText leaves unchanged (REQ-PATCH-005); and carrying
a fuzzy match's differences, or a reindent, over to the inserted text."""

from __future__ import annotations

import re
from dataclasses import dataclass

from phoenix_lsp.tools.patch.values import Patch, Refused


@dataclass(frozen=True)
class _Match:
    start: int
    end: int
    note: str | None = None  # how a fuzzy match differed, for the model
    indent_old: str = ""  # indentation the model used ...
    indent_file: str = ""  # ... and the indentation found in the file
    crlf: bool = False  # the model wrote \n where the file has \r\n
    trim_first: bool = False  # the first line of oldText/newText was dropped
    trim_last: bool = False


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _exact(text: str, old: str) -> tuple[int, int] | None:
    """(first index, occurrences capped at 2, overlapping ones included) or None when absent."""
    first = text.find(old)
    if first < 0:
        return None
    second = text.find(old, first + 1)
    return first, 1 if second < 0 else 2


def _leading_ws(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _tolerant(text: str, old: str) -> list[_Match]:
    """Matches of ``old`` ignoring a uniform indentation change, trailing blanks and \\r\\n vs \\n."""
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in old.split("\n")]
    nonblank = [ln for ln in lines if ln.strip()]
    if not nonblank:
        return []
    indents = [_leading_ws(ln) for ln in nonblank]
    common = min(indents, key=len)
    while not all(ind.startswith(common) for ind in indents):
        common = common[:-1]
    parts: list[str] = []
    seen_first = False
    for i, ln in enumerate(lines):
        last = i == len(lines) - 1
        if not ln.strip():
            parts.append("[ \t]*" if not last else "")
            continue
        body = ln[len(common) :]
        body = body.rstrip(" \t") if not last else body
        indent = "(?P<ind>[ \t]*)" if not seen_first else "(?P=ind)"
        seen_first = True
        parts.append(indent + re.escape(body) + ("" if last else "[ \t]*"))
    pattern = re.compile("^" + r"\r?\n".join(parts), re.MULTILINE)
    found: list[_Match] = []
    for m in pattern.finditer(text):
        matched = m.group(0)
        notes = []
        if m.group("ind") != common:
            notes.append("indentation")
        if "\r\n" in matched and "\r\n" not in old:
            notes.append("line endings")
        if not notes:
            notes.append("trailing whitespace")
        found.append(
            _Match(
                m.start(),
                m.end(),
                note="matched ignoring differences in " + " and ".join(notes),
                indent_old=common,
                indent_file=m.group("ind"),
                crlf="\r\n" in matched and "\r\n" not in old,
            )
        )
        if len(found) > 1:
            break
    return found


def _locate(text: str, old: str) -> list[_Match]:
    """Unique exact match, else whitespace-tolerant matches (0, 1 or 2 = ambiguous)."""
    exact = _exact(text, old)
    if exact is not None:
        first, count = exact
        if count == 1:
            return [_Match(first, first + len(old))]
        return [_Match(first, first + len(old)), _Match(first, first)]
    return _tolerant(text, old)


def find(text: str, patch: Patch, insert: str | None) -> _Match:
    old = patch.old_text
    assert old is not None
    label = patch.label
    exact = _exact(text, old)
    if exact is not None and exact[1] > 1:
        first = exact[0]
        second = text.find(old, first + 1)
        raise Refused(
            f"{label}: oldText occurs more than once (lines {line_of(text, first)} and "
            f"{line_of(text, second)}, maybe more); it must occur exactly once. Include more surrounding "
            "lines in oldText to make it unique."
        )
    matches = _locate(text, old)
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise Refused(
            f"{label}: oldText was not found exactly, and ignoring whitespace it matches several places "
            f"(lines {line_of(text, matches[0].start)} and {line_of(text, matches[1].start)}). Copy the "
            "exact text from the file and include more surrounding lines."
        )
    trimmed = _trimmed(text, old, insert)
    if trimmed is not None:
        return trimmed
    raise Refused(
        f"{label}: old text not found in the file (also tried ignoring indentation, trailing spaces and "
        "line endings, and without its first or last line). The file may differ from what you remember: "
        "read it again (read_file) and copy oldText exactly."
    )


def _trimmed(text: str, old: str, insert: str | None) -> _Match | None:
    """Retry without the first and/or last line of oldText when newText keeps that line unchanged."""
    old_body, old_nl = (old[:-1], True) if old.endswith("\n") else (old, False)
    old_lines = old_body.split("\n")
    if len(old_lines) < 3:
        return None  # what would remain is too small to be a safe anchor
    new_lines: list[str] | None = None
    new_nl = False
    if insert is not None:
        new_body, new_nl = (insert[:-1], True) if insert.endswith("\n") else (insert, False)
        new_lines = new_body.split("\n")

    def same(old_line: str, new_line: str | None) -> bool:
        return new_line is None or old_line.strip() == new_line.strip()

    options: list[tuple[bool, bool]] = []
    if new_lines is None or len(new_lines) >= 1:
        if same(old_lines[0], new_lines[0] if new_lines else None):
            options.append((True, False))
        if (new_lines is None or new_nl == old_nl) and same(old_lines[-1], new_lines[-1] if new_lines else None):
            options.append((False, True))
        if len(old_lines) >= 4 and len(options) == 2 and (new_lines is None or len(new_lines) >= 2):
            options.append((True, True))
    for trim_first, trim_last in options:
        rest = old_lines[(1 if trim_first else 0) : (len(old_lines) - 1 if trim_last else len(old_lines))]
        if not any(ln.strip() for ln in rest):
            continue
        sub_old = "\n".join(rest) + ("\n" if old_nl and not trim_last else "")
        matches = _locate(text, sub_old)
        if len(matches) != 1:
            continue
        m = matches[0]
        which = " and ".join(w for w, on in (("first", trim_first), ("last", trim_last)) if on)
        note = f"matched without the {which} line of oldText, which newText leaves unchanged"
        if m.note:
            note += ", " + m.note
        return _Match(
            m.start, m.end, note, m.indent_old, m.indent_file, m.crlf, trim_first=trim_first, trim_last=trim_last
        )
    return None


def adapt_insert(insert: str, m: _Match, *, reindent_indentation: bool) -> str:
    """Carry a fuzzy match's differences (dropped lines, indentation, line endings) over to the new text."""
    if m.trim_first or m.trim_last:
        body, nl = (insert[:-1], True) if insert.endswith("\n") else (insert, False)
        lines = body.split("\n")
        lines = lines[(1 if m.trim_first else 0) : (len(lines) - 1 if m.trim_last else len(lines))]
        insert = "\n".join(lines) + ("\n" if nl and not m.trim_last else "")
    if reindent_indentation and m.indent_old != m.indent_file:
        out = []
        for ln in insert.split("\n"):
            if ln.strip() and ln.startswith(m.indent_old):
                ln = m.indent_file + ln[len(m.indent_old) :]
            out.append(ln)
        insert = "\n".join(out)
    if m.crlf:
        insert = re.sub(r"(?<!\r)\n", "\r\n", insert)
    return insert


def reindent(text: str, strip: str | None, add: str | None, label: str) -> str:
    out = []
    for number, ln in enumerate(text.split("\n"), start=1):
        if not ln.strip():
            out.append(ln)  # blank lines carry no indentation to adjust
            continue
        if strip:
            if not ln.startswith(strip):
                raise Refused(
                    f"{label}: reindent.strip is {strip!r} but inserted line {number} ({ln[:60]!r}) does not "
                    "start with it. Use the prefix every non-blank inserted line starts with, or omit strip."
                )
            ln = ln[len(strip) :]
        out.append((add or "") + ln)
    return "\n".join(out)
