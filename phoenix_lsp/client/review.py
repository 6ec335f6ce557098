"""A multi-file review in the terminal chat (issue 36, REQ-PROTO-065): an approval whose diff spans several files,
as the server asks about a bash command's captured changes (a host call named like the patch tool; arguments
``{command, files, more?}``; ``diff`` = the summary of what is not an editor edit as ``# `` lines before the first
file, then the git-style unified diff of every text file). This module is the one place of the terminal client
that reads that shape, and words it: the tool, the command, the files (status, path, +/- counts), the summary and
each file's diff, instead of the raw JSON arguments and the tool's description.

The diff is split by its hunks' own line counts, never by a line that merely looks like a file header: a file
whose text holds ``--- a/x`` and ``+++ b/y`` lines cannot add a file of its own to the list.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")


@dataclass(frozen=True)
class ReviewFile:
    path: str  # the path the change leaves (the old path for a deletion)
    status: str  # created | deleted | renamed | modified
    added: int
    removed: int
    hunks: tuple[str, ...]  # the diff's lines after the file's two header lines
    old_path: str | None = None  # a rename's old path

    @property
    def where(self) -> str:
        return f"{self.old_path} -> {self.path}" if self.old_path else self.path


@dataclass(frozen=True)
class Review:
    command: str | None
    files: tuple[ReviewFile, ...]
    summary: tuple[str, ...]  # what is not an editor edit, refusals and conflicts
    others: tuple[str, ...]  # changed paths the arguments name that have no diff here (the server's part)
    more: int  # paths the arguments leave out


def _header_path(text: str) -> str:
    path = text.split("\t")[0]
    return path if path == "/dev/null" else re.sub(r"^[ab]/", "", path, count=1)


def split_diff(diff: str) -> tuple[list[ReviewFile], list[str]]:
    """The files of a unified diff, each with its counts, and the ``# `` lines around them."""
    lines = diff.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    files: list[ReviewFile] = []
    notes: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old, new = _header_path(line[4:]), _header_path(lines[i + 1][4:])
            start, added, removed = i + 2, 0, 0
            i += 2
            while i < len(lines) and (m := _HUNK.match(lines[i])):
                old_left = 1 if m.group(1) is None else int(m.group(1))
                new_left = 1 if m.group(2) is None else int(m.group(2))
                i += 1
                # the hunk's body is exactly its counted lines (and the "\ No newline" notes among them)
                while i < len(lines) and (old_left > 0 or new_left > 0 or lines[i].startswith("\\")):
                    kind = lines[i][:1]
                    if kind == "+":
                        added, new_left = added + 1, new_left - 1
                    elif kind == "-":
                        removed, old_left = removed + 1, old_left - 1
                    elif kind != "\\":
                        old_left, new_left = old_left - 1, new_left - 1
                    i += 1
            status = ("created" if old == "/dev/null" else "deleted" if new == "/dev/null"
                      else "renamed" if old != new else "modified")
            files.append(ReviewFile(old if status == "deleted" else new, status, added, removed,
                                    tuple(lines[start:i]), old if status == "renamed" else None))
            continue
        if line.startswith("# "):
            notes.append(line[2:])
        i += 1
    return files, notes


def review_of(arguments: Mapping[str, Any], diff: str | None) -> Review | None:
    """The review an approval asks about, or None: a bash command's changes (the arguments' ``command`` and
    ``files``), or any approval whose diff spans more than one file."""
    listed = arguments.get("files")
    named = [p for p in listed if isinstance(p, str)] if isinstance(listed, list) else None
    if not diff and named is None:
        return None
    files, notes = split_diff(diff or "")
    if named is None and len(files) < 2:
        return None
    shown = {f.path for f in files} | {f.old_path for f in files if f.old_path}
    command = arguments.get("command")
    more = arguments.get("more")
    return Review(command if isinstance(command, str) else None, tuple(files), tuple(notes),
                  tuple(p for p in (named or []) if p not in shown), more if isinstance(more, int) else 0)


def review_lines(tool_name: str, review: Review) -> list[str]:
    """The approval as the terminal shows it: the tool and the command, the files, the summary, the diffs."""
    added = sum(f.added for f in review.files)
    removed = sum(f.removed for f in review.files)
    n = len(review.files)
    others = f", {len(review.others)} other change(s)" if review.others else ""
    lines = [f"[approval] {tool_name}: {n} text file{'' if n == 1 else 's'} (+{added} -{removed}){others}"
             + (" changed by the command" if review.command is not None else "")]
    if review.command is not None:
        lines.append(f"  $ {review.command}")
    lines += [f"  {f.status:<8} {f.where} +{f.added} -{f.removed}" for f in review.files]
    lines += [f"  other    {p}" for p in review.others]
    if review.more:
        lines.append(f"  ... and {review.more} more path(s)")
    if review.summary:
        lines.append("  not editor edits, accepted or discarded with the rest:")
        lines += [f"    {s}" for s in review.summary]
    for f in review.files:
        lines.append(f"  == {f.status} {f.where} ==")
        lines += [f"  {h}" for h in f.hunks]
    return lines
