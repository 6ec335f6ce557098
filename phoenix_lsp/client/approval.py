"""An approval as the terminal chat asks it (issue 38, REQ-TERM-004): the tool, the file or the command, and the
diff, which is what the user decides on; the whole call (every argument as sent, and what the tool says it does)
when the user asks for it with ``w``; and an approved change's diff drawn once, not again when the edit is
written.

The tool's description is written for the model (a built-in tool's instructions, an MCP server's own words), so
it is not the question; the raw JSON of a patch says what its diff already shows. Nothing is ever cut: what the
user approves is what they saw (REQ-PERM-023)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

__all__ = ["WHOLE_HINT", "ApprovedDiffs", "approval_lines", "whole_call_lines"]

#: the line under each approval that says how to see the whole call
WHOLE_HINT = "  w: the whole call (every argument as sent, and what the tool says it does)"

#: the arguments a tool's diff shows: not listed beside it
_SHOWN_BY_DIFF = {"patch": {"path", "patches"}}


def _value(value: Any) -> str:
    """One argument's value whole, on one line: JSON (a string quoted, its line breaks written ``\\n``)."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def approval_lines(name: str, arguments: dict[str, Any], diff: str | None) -> list[str]:
    """The question: ``[approval] patch a.txt`` and its diff; ``[approval] bash`` and the whole command;
    any other tool with each argument on a line of its own (``title: "..."``); then :data:`WHOLE_HINT`."""
    path = arguments.get("path")
    head = f"[approval] {name}" + (f" {path}" if isinstance(path, str) and path else "")
    lines = [head]
    listed = dict(arguments)
    command = listed.get("command")
    if name == "bash" and isinstance(command, str):
        del listed["command"]
        first, *rest = command.split("\n") or [""]
        lines.append(f"  $ {first}")
        lines += [f"    {line}" for line in rest]  # indented: a line of the command never looks like a header
    if diff:
        for key in _SHOWN_BY_DIFF.get(name, set()):
            listed.pop(key, None)
    elif isinstance(path, str) and path:
        listed.pop("path")  # in the head already
    lines += [f"  {key}: {_value(value)}" for key, value in listed.items()]
    if diff:
        lines += ["  " + line for line in diff.splitlines()]
    lines.append(WHOLE_HINT)
    return lines


def whole_call_lines(name: str, description: str, arguments: dict[str, Any]) -> list[str]:
    """The whole call, on request: what the tool says it does (its own words, whole) and every argument as
    sent, as indented JSON."""
    lines = [f"[call] {name}, as the model sent it"]
    if description.strip():
        lines.append("  what the tool says it does:")
        lines += [f"    {line}" for line in description.strip().splitlines()]
    lines.append("  arguments:")
    lines += [f"    {line}" for line in json.dumps(arguments, indent=2, ensure_ascii=False).splitlines()]
    return lines


def _changes(diff: str) -> Counter[str]:
    """The lines a unified diff removes and adds, whatever its context lines and headers."""
    return Counter(line for line in diff.splitlines()
                   if line[:1] in "+-" and not line.startswith(("+++", "---")))


class ApprovedDiffs:
    """The changes the user approved after seeing their diff, until the edit that makes one is written: that
    edit is then not drawn again. Matched by the lines removed and added, so only the same change matches."""

    def __init__(self) -> None:
        self._approved: list[Counter[str]] = []

    def add(self, diff: str) -> None:
        changes = _changes(diff)
        if changes:
            self._approved = [*self._approved[-15:], changes]  # bounded: a few edits wait at most

    def take(self, diff: str) -> bool:
        """Whether ``diff`` makes a change the user approved (forgotten then: it is written once)."""
        changes = _changes(diff)
        if changes and changes in self._approved:
            self._approved.remove(changes)
            return True
        return False
