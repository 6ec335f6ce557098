"""A change set made into a review (REQ-BASH-032): the editor's part (the text files, each with its text before,
its text after, minimal edits and a unified diff), the server's part (everything an editor edit cannot carry,
placed with `accept`), what is dropped because the user changed it meanwhile, the diff the approval shows and
what the model is told. Every adapter (the LSP server's workspace edit, the ACP client's ``fs/write_text_file``)
builds its edit from this one translation.

A text change is dropped, never applied, when its real file is no longer the one the command saw (identity
changed since the scan) or when the editor holds a different text for it (an unsaved change of the user's):
the editor's text is compared with the bytes the command saw, so a buffer equal to the disk is not a conflict
and a buffer that differs always is.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from phoenix_lsp.sandbox.overlay import Layer
from phoenix_lsp.tools.patch.diff import unified_diff
from phoenix_lsp.tools.patch.edits import minimize, normalize, to_text_edits
from phoenix_lsp.tools.patch.values import TextEdit
from phoenix_lsp.tools.shell_changes.files import DIR_FLAGS, lstat_at, read_at
from phoenix_lsp.tools.shell_changes.model import TEXT_LIMIT, Change, ChangeKind, ChangeSet, Conflict, Identity

T = TypeVar("T")

#: the most diff text an approval carries (the store keeps it, every client shows it); past it, the files left
#: are named in the summary, not shown
DIFF_LIMIT = 1024 * 1024
#: what an LSP editor edit can carry; an ACP client writes text files only
ALL_KINDS = frozenset({ChangeKind.CREATED, ChangeKind.MODIFIED, ChangeKind.DELETED, ChangeKind.RENAMED})
WRITE_KINDS = frozenset({ChangeKind.CREATED, ChangeKind.MODIFIED})


@dataclass(frozen=True)
class TextChange:
    """One text file of the editor's part: `before` is the text the command saw (None: it creates the file),
    `after` the command's text (None: it deletes it; a rename keeps the text)."""

    change: Change
    before: str | None
    after: str | None
    edits: tuple[TextEdit, ...]
    diff: str

    @property
    def path(self) -> str:
        return self.change.path

    @property
    def kind(self) -> ChangeKind:
        return self.change.kind


@dataclass(frozen=True)
class Review:
    """What a captured command changed, split into the editor's part and the server's part."""

    layer: Layer
    changes: ChangeSet  # the whole scan, its refused entries and conflicts included
    texts: tuple[TextChange, ...]  # the editor's part
    server: ChangeSet  # the server's part (no refused entries, no conflicts: `accept` places it whole)
    dropped: tuple[Conflict, ...] = ()  # changed meanwhile, found while the review was made

    @property
    def folder(self) -> Path:
        return self.layer.folder

    @property
    def conflicts(self) -> tuple[Conflict, ...]:
        return (*self.changes.conflicts, *self.dropped)

    @property
    def empty(self) -> bool:
        """Nothing to apply (what is left is refused or in conflict)."""
        return not self.texts and not self.server.changes

    def path(self, rel: str) -> Path:
        return self.folder.joinpath(*rel.split("/"))

    def operations(self) -> set[ChangeKind]:
        """The resource operations the editor's part needs besides text edits."""
        return {t.kind for t in self.texts if t.kind is not ChangeKind.MODIFIED}

    def files(self) -> list[str]:
        """Every changed path, for the approval's arguments."""
        return sorted({c.path for c in (*(t.change for t in self.texts), *self.server.changes)})

    def summary(self, max_paths: int = 20) -> str:
        """The text files by name, then the part that is not an editor edit, refused entries and conflicts:
        counts, sizes and paths (the diff may not name a file: a new empty one has no lines)."""
        lines = [f"{len(self.texts)} text file(s) as editor edits; {len(self.server.changes)} other change(s) "
                 "placed by the server"]
        lines += [f"  {t.kind} {t.path}" + (f" (from {t.change.old_path})" if t.change.old_path else "")
                  for t in self.texts[:max_paths]]
        if len(self.texts) > max_paths:
            lines.append(f"  ... and {len(self.texts) - max_paths} more text file(s)")
        rest = ChangeSet(self.folder, self.server.changes, self.changes.refused, self.conflicts)
        lines += rest.summary(max_paths).splitlines()[1:]
        return "\n".join(lines)

    def diff(self, limit: int = DIFF_LIMIT) -> str:
        """The approval's diff: the summary as lines before the first file (a diff reader skips them), then the
        unified diff of every text file, cut at `limit` with the files left named."""
        head = "".join(f"# {line}\n" for line in self.summary().splitlines())
        parts: list[str] = []
        size = len(head)
        left: list[str] = []
        for text in self.texts:
            if size + len(text.diff) > limit:
                left.append(text.path)
                continue
            parts.append(text.diff)
            size += len(text.diff)
        tail = f"# not shown (the diff is over {limit // 1024} KiB): {', '.join(left)}\n" if left else ""
        return head + "".join(parts) + tail

    def without(self, dropped: Collection[str], why: str) -> Review:
        """The review without the text changes of `dropped` (paths), each listed as a conflict with `why`."""
        if not dropped:
            return self
        kept = tuple(t for t in self.texts if t.path not in dropped)
        conflicts = tuple(Conflict(t.path, why) for t in self.texts if t.path in dropped)
        return replace(self, texts=kept, dropped=(*self.dropped, *conflicts))


def _beneath(root: Path, rel: str, use: Callable[[int, str], T]) -> T | None:
    """``use(folder descriptor, name)`` for `rel` beneath `root`, every folder on the way opened without
    following a symlink; None when one of them is missing or not a folder."""
    parts = rel.split("/")
    fds: list[int] = []
    try:
        fd = os.open(root, DIR_FLAGS)
        fds.append(fd)
        for part in parts[:-1]:
            fd = os.open(part, DIR_FLAGS, dir_fd=fd)
            fds.append(fd)
        return use(fd, parts[-1])
    except OSError:
        return None
    finally:
        for fd in fds:
            os.close(fd)


def _read(root: Path, rel: str) -> bytes | None:
    """The bytes of `rel` beneath `root`; None when it is missing, not a regular file or over TEXT_LIMIT."""
    return _beneath(root, rel, lambda fd, name: read_at(fd, name, TEXT_LIMIT))


def _identity(root: Path, rel: str) -> Identity | None:
    """The identity of `rel` beneath `root` (not following a last symlink); None when it is missing."""
    st = _beneath(root, rel, lstat_at)
    return Identity.of(st) if st is not None else None


def _decode(data: bytes | None) -> str | None:
    try:
        return None if data is None else data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _deleted_diff(path: str, before: str) -> str:
    body = unified_diff(path, before, [(0, len(before), "")], False) if before else f"--- a/{path}\n+++ b/{path}\n"
    return body.replace(f"+++ b/{path}\n", "+++ /dev/null\n", 1)


def _text_change(layer: Layer, change: Change) -> TextChange | Conflict:
    """One editable change read into texts, or the conflict that keeps it from landing."""
    before: str | None = None
    source = change.old_path if change.kind is ChangeKind.RENAMED else change.path
    identity = change.old_before if change.kind is ChangeKind.RENAMED else change.before
    if change.kind is not ChangeKind.CREATED:
        assert source is not None
        if _identity(layer.folder, source) != identity:
            return Conflict(source, "changed in the folder since the command ran; the command's change is not "
                                    "applied")
        before = _decode(_read(layer.folder, source))
        if before is None:
            return Conflict(source, "no longer a UTF-8 text file of at most 1 MiB; the command's change is not "
                                    "applied")
    elif _identity(layer.folder, change.path) is not None:
        return Conflict(change.path, "created in the folder while the command ran; the command's file is not "
                                     "applied")
    if change.kind is ChangeKind.DELETED:
        assert before is not None
        return TextChange(change, before, None, (), _deleted_diff(change.path, before))
    after = _decode(_read(layer.upper, change.path))
    if after is None:
        return Conflict(change.path, "the command's file could not be read back from its layer; not applied")
    if change.kind is ChangeKind.RENAMED:
        diff = f"--- a/{change.old_path}\n+++ b/{change.path}\n"  # same bytes: a rename, no line changes
        return TextChange(change, before, after, (), diff)
    original = before or ""
    raw = normalize(original, minimize(original, 0, len(original), after))
    diff = unified_diff(change.path, original, raw, change.kind is ChangeKind.CREATED)
    if not diff:  # a new empty file
        diff = f"--- /dev/null\n+++ b/{change.path}\n"
    return TextChange(change, before, after, to_text_edits(original, raw), diff)


def prepare(layer: Layer, changes: ChangeSet, editor: Mapping[Path, str],
            kinds: frozenset[ChangeKind] = ALL_KINDS) -> Review:
    """The review of `changes`: each editable change of a kind in `kinds` read into texts (the editor's part),
    the rest for the server; `editor` holds the editor's text of its open documents (by absolute path): a text
    change whose file the editor holds with another text is dropped as a conflict, as is one whose real file
    changed since the scan. A text change whose path another change of the set also names (a file that became
    a folder) goes to the server's part, which places both in order."""
    others = [c for c in changes.changes if not (c.editable and c.kind in kinds)]
    named = {c.path for c in others} | {c.old_path for c in others if c.old_path}
    texts: list[TextChange] = []
    dropped: list[Conflict] = []
    for change in changes.changes:
        if not change.editable or change.kind not in kinds:
            continue
        if change.path in named or (change.old_path is not None and change.old_path in named):
            others.append(change)
            continue
        made = _text_change(layer, change)
        if isinstance(made, Conflict):
            dropped.append(made)
            continue
        texts.append(made)
    review = Review(layer, changes, tuple(texts), ChangeSet(changes.folder, tuple(others)), tuple(dropped))
    return review.without(_unsaved(review, editor), "changed in the editor (unsaved) while the command ran; "
                                                    "the command's change is not applied")


def _unsaved(review: Review, editor: Mapping[Path, str]) -> set[str]:
    """The text changes whose files the editor holds with a text other than the one the command saw (a file
    the command creates, or renames onto, must not be held at all)."""
    dropped: set[str] = set()
    for text in review.texts:
        source = text.change.old_path if text.kind is ChangeKind.RENAMED else text.path
        assert source is not None
        held = editor.get(review.path(source))
        if (text.kind is ChangeKind.CREATED and held is not None) or (held is not None and held != text.before):
            dropped.add(text.path)
        if text.kind is ChangeKind.RENAMED and editor.get(review.path(text.path)) is not None:
            dropped.add(text.path)
    return dropped


def recheck(review: Review, editor: Mapping[Path, str]) -> Review:
    """The review again just before it is applied (after the user's decision): a file changed since it was
    made, on disk or in the editor, is dropped as a conflict."""
    changed = set()
    for text in review.texts:
        source = text.change.old_path if text.kind is ChangeKind.RENAMED else text.path
        assert source is not None
        identity = text.change.old_before if text.kind is ChangeKind.RENAMED else text.change.before
        moved_onto = text.kind is ChangeKind.RENAMED and _identity(review.folder, text.path) is not None
        if moved_onto or _identity(review.folder, source) != identity:
            changed.add(text.path)
    review = review.without(changed, "changed in the folder while the review was open; the command's change is "
                                     "not applied")
    return review.without(_unsaved(review, editor), "changed in the editor while the review was open; the "
                                                    "command's change is not applied")
