"""The change set's values: what a layer changed, what is refused or in conflict, and its summary."""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import NamedTuple

#: folders whose contents are never editor edits: version control, dependencies, caches, build output
IGNORED_FOLDERS = frozenset({
    ".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".cache", "build", "dist", "target", "out", ".next", ".gradle",
})
#: a text file larger than this is summarised rather than shown as an editor edit
TEXT_LIMIT = 1024 * 1024
#: the most entries a layer may hold before the scan gives up (a bound on the walk, like the byte cap)
MAX_ENTRIES = 500_000


class ChangeKind(StrEnum):
    CREATED = "created"
    MODIFIED = "modified"
    DELETED = "deleted"
    RENAMED = "renamed"
    MODE = "mode"


class Entry(StrEnum):
    FILE = "file"
    DIRECTORY = "directory"
    SYMLINK = "symlink"


class Identity(NamedTuple):
    """What identifies the real file a change replaces, checked again just before an accept (a named tuple:
    immutable, and made thousands of times per scan)."""

    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int

    @staticmethod
    def of(st: os.stat_result) -> Identity:
        return Identity(st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@dataclass(frozen=True)
class Change:
    """One change of the layer. `path` is relative to the folder, `/`-separated, of names read from the layer.
    `before` is the identity of the real entry it replaces or deletes (None for a creation)."""

    path: str
    kind: ChangeKind
    entry: Entry
    editable: bool  # a text file an editor edit can carry
    reason: str  # why it is not editable ("" when it is): binary, too big, ignored folder, symlink, ...
    size: int  # bytes after the change (0 when deleted)
    before: Identity | None = None
    old_path: str | None = None  # renamed from
    old_before: Identity | None = None  # the identity of the renamed-from file
    mode: int | None = None  # permission bits after the change, when they changed
    target: str | None = None  # a symlink's target
    outside: bool = False  # a symlink whose target leaves the folder (created as a link, never followed)


@dataclass(frozen=True)
class Refused:
    """An entry of the layer that is not applied: a device, FIFO or socket (never recreated), or a name the
    folder cannot hold safely."""

    path: str
    why: str


@dataclass(frozen=True)
class Conflict:
    """A change that would overwrite what someone else changed in the real folder meanwhile: never applied."""

    path: str
    why: str


@dataclass(frozen=True)
class ChangeSet:
    """Everything one layer changed, read once after the command's process tree ended."""

    folder: Path
    changes: tuple[Change, ...]
    refused: tuple[Refused, ...] = ()
    conflicts: tuple[Conflict, ...] = ()
    layer_bytes: int = 0

    @property
    def editable(self) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.editable)

    @property
    def others(self) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if not c.editable)

    @property
    def empty(self) -> bool:
        return not (self.changes or self.refused or self.conflicts)

    def summary(self, max_paths: int = 20) -> str:
        """The part of the review that is not an editor edit, and what is refused or in conflict: counts,
        sizes and paths."""
        lines = [f"{len(self.editable)} text file(s) as editor edits; {len(self.others)} other change(s), "
                 f"{size_text(sum(c.size for c in self.others))}"]
        by_reason: dict[str, list[Change]] = {}
        for change in self.others:
            by_reason.setdefault(change.reason, []).append(change)
        for reason, changes in sorted(by_reason.items()):
            lines.append(f"{reason}: {len(changes)} ({size_text(sum(c.size for c in changes))})")
            lines += [f"  {c.kind} {c.path}" + (f" -> {c.target}" if c.target is not None else "")
                      for c in changes[:max_paths]]
            if len(changes) > max_paths:
                lines.append(f"  ... and {len(changes) - max_paths} more")
        lines += [f"refused: {r.path}: {r.why}" for r in self.refused]
        lines += [f"conflict: {c.path}: {c.why}" for c in self.conflicts]
        return "\n".join(lines)


class LayerTooBig(RuntimeError):
    """The layer is over its cap: it is not read, only discarded."""


class AcceptFailed(RuntimeError):
    """An accept could not land whole: everything it had done was undone, the real folder is as before."""


def size_text(n: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n:.1f} GiB"
