"""The editor's sight (issue 29, specs/sight.md): what the editor knows, told to the model.

Pure helpers, no I/O: the problems an edit caused (:func:`new_problems`: the editor's diagnostics after an
edit compared with just before it, a problem that only moved with the edit's line shift is not new) and the
texts the model is given (:func:`patch_report`, :func:`problems_text`, :func:`locations_text`). The tools'
inputs live here too. The server asks the editor (``server/sight.py``) and calls these.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import Field, model_validator

from .inputs import ToolInput
from .patch import TextEdit

__all__ = [
    "EDITOR_PROBLEMS_DESCRIPTION",
    "FIND_DEFINITION_DESCRIPTION",
    "FIND_REFERENCES_DESCRIPTION",
    "EditorProblemsInput",
    "Location",
    "Problem",
    "SymbolInput",
    "line_span",
    "locations_text",
    "new_problems",
    "patch_report",
    "problems_text",
]

#: LSP's DiagnosticSeverity, as the model reads it
SEVERITY = {1: "error", 2: "warning", 3: "info", 4: "hint"}
#: the severities a patch's result reports as new: errors and warnings (hints fade code, infos chatter)
REPORTED = (1, 2)
#: the most problems or locations one text lists; the rest are counted
MAX_LISTED = 10
MAX_LOCATIONS = 50
#: a problem's message is cut to this many characters
MESSAGE_CHARS = 300


@dataclass(frozen=True, slots=True)
class Problem:
    """One diagnostic as the editor shows it: zero-based line and character (UTF-16), LSP severity."""

    line: int
    character: int
    severity: int
    message: str
    source: str = ""
    code: str = ""

    def same_kind(self, other: Problem) -> bool:
        """The same problem, wherever it is."""
        return (self.severity, self.message, self.source, self.code) == (
            other.severity, other.message, other.source, other.code)

    def describe(self) -> str:
        """``12:5 error Ruff(F821): Undefined name `x```, one-based as editors show positions."""
        origin = self.source + (f"({self.code})" if self.code else "") if self.source else self.code
        message = " ".join(self.message.split())
        if len(message) > MESSAGE_CHARS:
            message = message[:MESSAGE_CHARS] + " [...]"
        where = f"{self.line + 1}:{self.character + 1}"
        return f"{where} {SEVERITY.get(self.severity, 'problem')}{' ' + origin if origin else ''}: {message}"


@dataclass(frozen=True, slots=True)
class Location:
    """A place the editor pointed to: a path as shown to the model, zero-based line and character."""

    path: str
    line: int
    character: int
    text: str | None = None  # the line's text, when the model may read that file


def line_span(old_line: int, edits: Sequence[TextEdit]) -> tuple[int, int]:
    """Where line ``old_line`` of the text before ``edits`` may be after them: (first, last) new line.

    A line after an edit moves by the lines the edit added or removed; a line the edit touched may be any
    line of what replaced it. ``edits`` are sorted and do not overlap (as the patch tool makes them)."""
    shift = 0
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character)):
        start, end = edit.range.start.line, edit.range.end.line
        added = edit.new_text.count("\n")
        if old_line < start:
            break
        if old_line > end:
            shift += added - (end - start)
            continue
        return start + shift, start + shift + added
    return old_line + shift, old_line + shift


def new_problems(before: Iterable[Problem], after: Iterable[Problem], edits: Sequence[TextEdit]) -> list[Problem]:
    """The problems in ``after`` that were not there before the edit: each problem of ``before`` accounts for
    at most one equal problem (same severity, message, source and code) on a line its own line may have
    become (:func:`line_span`). Columns are not compared: an edit on a line moves what follows on it."""
    unmatched = [(p, line_span(p.line, edits)) for p in before]
    fresh: list[Problem] = []
    for problem in sorted(after, key=lambda p: (p.line, p.character)):
        for i, (old, (first, last)) in enumerate(unmatched):
            if old.same_kind(problem) and first <= problem.line <= last:
                del unmatched[i]
                break
        else:
            fresh.append(problem)
    return fresh


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _listed(problems: Sequence[Problem]) -> str:
    shown = [f"- {p.describe()}" for p in problems[:MAX_LISTED]]
    if len(problems) > MAX_LISTED:
        shown.append(f"- and {len(problems) - MAX_LISTED} more")
    return "\n".join(shown)


def patch_report(path: str, before: Sequence[Problem], after: Sequence[Problem], edits: Sequence[TextEdit]) -> str:
    """What a patch's result says about the problems it caused in ``path`` (REQ-SIGHT-001): the new errors
    and warnings with their source, capped; or a few words when there are none."""
    fresh = [p for p in new_problems(before, after, edits) if p.severity in REPORTED]
    if not fresh:
        return f"The editor reports no new problems in {path}."
    errors = sum(1 for p in fresh if p.severity == 1)
    counts = " and ".join(t for t in (_plural(errors, "error") if errors else "",
                                       _plural(len(fresh) - errors, "warning") if len(fresh) > errors else "") if t)
    return f"After this patch the editor reports {counts} new in {path}:\n{_listed(fresh)}"


def problems_text(files: Mapping[str, Sequence[Problem]], scope: str) -> str:
    """The editor_problems tool's answer: the problems of each file, errors first, capped."""
    files = {path: problems for path, problems in files.items() if problems}
    if not files:
        return f"The editor shows no problems in {scope}."
    total = sum(len(p) for p in files.values())
    parts = [f"The editor shows {_plural(total, 'problem')} in {scope}:"]
    listed = 0
    for path in sorted(files):
        if listed >= MAX_LISTED * 5:
            parts.append(f"[{_plural(total - listed, 'more problem')} in other files not shown: ask for one file]")
            break
        problems = sorted(files[path], key=lambda p: (p.severity, p.line, p.character))
        parts.append(f"{path}:\n{_listed(problems)}")
        listed += min(len(problems), MAX_LISTED + 1)
    return "\n".join(parts)


def locations_text(kind: Literal["definition", "references"], symbol: str, locations: Sequence[Location]) -> str:
    """find_definition's and find_references' answer: ``path:line:column`` with the line's text, capped."""
    if not locations:
        what = "definition" if kind == "definition" else "references"
        return (f"The editor's language servers found no {what} for {symbol}. Check the position (line and "
                "column of the symbol itself), or use search_files.")
    noun = "definition" if kind == "definition" else "reference"
    lines = [f"The editor found {_plural(len(locations), noun)} of {symbol}:"]
    for loc in locations[:MAX_LOCATIONS]:
        text = f"  {loc.text.strip()[:200]}" if loc.text is not None else ""
        lines.append(f"{loc.path}:{loc.line + 1}:{loc.character + 1}{text}")
    if len(locations) > MAX_LOCATIONS:
        lines.append(f"[{len(locations) - MAX_LOCATIONS} more not shown]")
    return "\n".join(lines)


def column_of(line_text: str, symbol: str) -> int | None:
    """The zero-based UTF-16 column of ``symbol``'s first occurrence on the line, or None."""
    at = line_text.find(symbol)
    if at < 0:
        return None
    return sum(2 if ord(c) > 0xFFFF else 1 for c in line_text[:at])


def read_line(text: str, line: int) -> str | None:
    lines = text.splitlines()
    return lines[line] if 0 <= line < len(lines) else None


# ------------------------------------------------------------------------------------------------ inputs


class EditorProblemsInput(ToolInput):
    path: str | None = Field(
        None, description="A file, relative to the working directory; leave out for every file the editor knows.")


class SymbolInput(ToolInput):
    path: str = Field(description="The file the symbol is in, relative to the working directory.")
    line: int = Field(ge=1, description="The symbol's line (1-based, as read_file shows it).")
    symbol: str | None = Field(
        None, min_length=1, description="The symbol's name as written on that line; its first occurrence is used.")
    column: int | None = Field(None, ge=1, description="The symbol's column (1-based), instead of its name.")

    @model_validator(mode="after")
    def _where(self) -> SymbolInput:
        if self.symbol is None and self.column is None:
            raise ValueError("give the symbol's name (symbol) or its column (column) on that line")
        return self


EDITOR_PROBLEMS_DESCRIPTION = (
    "The problems (errors, warnings) the editor shows now, from every language server and linter the user "
    "runs: for one file, or for every file the editor knows. Read-only."
)
FIND_DEFINITION_DESCRIPTION = (
    "Where a symbol is defined, answered by the editor's language servers: give the file, the line and the "
    "symbol's name (or column). Read-only."
)
FIND_REFERENCES_DESCRIPTION = (
    "Every place a symbol is used, answered by the editor's language servers: give the file, the line and the "
    "symbol's name (or column). Read-only."
)

