"""Taking a kept change set back (REQ-BASH-041): what may be restored, the editor's part, the server's part.

``plan`` checks every path of the set against its state after the set landed: a path that changed since (by the
user, in the editor or on disk, or by the agent) is refused by name and keeps what it holds now; the rest is
restored. It also checks every before copy against its manifest (a regular file, opened without following a
symlink, with the digest it was kept with): a copy that was altered refuses the whole undo. A text file is the
editor's to restore (one workspace edit, which the editor shows and its own undo can redo) unless a folder on its
way is the server's to restore or remove; everything else (binary files, modes, symlinks, folders, deleted
files) is restored by the server with ``restore``, whole or not at all: every step is done through directory
descriptors opened without following a symlink, and on a failure the steps done are undone in reverse.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from phoenix_lsp.tools.shell_changes.accept import _Folder
from phoenix_lsp.tools.shell_changes.edit import _beneath
from phoenix_lsp.tools.shell_changes.files import DIR_FLAGS, lstat_at, read_at
from phoenix_lsp.tools.shell_changes.kept import Entry, KeptSet, State, digest, identity
from phoenix_lsp.tools.shell_changes.model import TEXT_LIMIT

_ASIDE = ".phoenix-undo-"


class Tampered(RuntimeError):
    """A before copy is not what was kept: nothing is undone."""


@dataclass(frozen=True)
class TextRestore:
    """One text file the editor restores: ``now`` is its text today (None: absent), ``before`` the text to put
    back (None: delete it)."""

    path: str
    now: str | None
    before: str | None


@dataclass(frozen=True)
class Plan:
    kept: KeptSet
    folder: Path
    texts: tuple[TextRestore, ...]
    server: tuple[Entry, ...]
    refused: tuple[tuple[str, str], ...]  # (path, why)

    @property
    def empty(self) -> bool:
        return not self.texts and not self.server


def _current(folder: Path, rel: str) -> os.stat_result | None:
    return _beneath(folder, rel, lstat_at)


def _matches_after(folder: Path, entry: Entry, held: Mapping[Path, str], expected: set[str]) -> str | None:
    """Why ``entry``'s path is no longer as the set left it, or None when it is."""
    after = entry.after
    path = folder.joinpath(*entry.path.split("/"))
    st = _current(folder, entry.path)
    if entry.editor:
        text = held.get(path)
        if after.kind != "absent" and st is None:  # a document the editor still shows of a file gone from disk
            return "deleted since the change set landed"
        if text is not None:
            now = digest(text.encode("utf-8"))
        elif st is not None and stat.S_ISREG(st.st_mode):
            data = _beneath(folder, entry.path, lambda fd, name: read_at(fd, name, TEXT_LIMIT))
            now = digest(data) if data is not None else "?"
        else:
            now = "" if st is None else "?"
        if after.kind == "absent":
            return None if now == "" else "created again since the change set landed"
        return None if now == after.sha else "changed since the change set landed (in the editor or on disk)"
    if after.kind == "absent":
        return None if st is None else "created again since the change set landed"
    if st is None:
        return "deleted since the change set landed"
    if after.kind == "symlink":
        link = _beneath(folder, entry.path, lambda fd, name: os.readlink(name, dir_fd=fd))
        return None if stat.S_ISLNK(st.st_mode) and link == after.target else "changed since the change set landed"
    if after.kind == "dir":
        if not stat.S_ISDIR(st.st_mode):
            return "no longer a folder"
        names = _beneath(folder, entry.path, lambda fd, name: _listdir_at(fd, name)) or []
        extra = [n for n in names if f"{entry.path}/{n}" not in expected]
        return f"holds entries the change set did not make ({', '.join(sorted(extra)[:3])})" if extra else None
    return None if identity(st) == after.ident else "changed since the change set landed"


def _listdir_at(fd: int, name: str) -> list[str]:
    sub = os.open(name, DIR_FLAGS, dir_fd=fd)
    try:
        return os.listdir(sub)
    finally:
        os.close(sub)


def read_copy(kept: KeptSet, state: State) -> bytes:
    """A before copy's bytes, checked: a regular file (opened without following a symlink, beneath the set's
    folder) whose digest is the one kept. Tampered otherwise."""
    parts = state.copy.split("/")
    if not state.copy or any(p in ("", ".", "..") for p in parts):
        raise Tampered(f"the kept copy name {state.copy!r} is not one the server wrote")
    data = _beneath(kept.root / "files", state.copy, lambda fd, name: read_at(fd, name, 1 << 40, state.size))
    if data is None or hashlib.sha256(data).hexdigest() != state.sha:
        raise Tampered("a kept copy was altered or replaced since it was kept (it is not the regular file with the "
                       "bytes that were kept)")
    return data


def plan(kept: KeptSet, held: Mapping[Path, str], editor_deletes: bool = True) -> Plan:
    """What undoing ``kept`` would restore, and what it refuses (``held``: the editor's text of its open
    documents, by absolute path; ``editor_deletes``: the editor can delete a file, else the server deletes the
    text files the set created, as for an ACP client). Raises Tampered when a before copy was altered."""
    folder = Path(kept.folder)
    expected = {e.path for e in kept.entries if e.after.kind != "absent"}
    server_dirs = {e.path for e in kept.entries if not e.editor and "dir" in (e.before.kind, e.after.kind)}
    texts: list[TextRestore] = []
    server: list[Entry] = []
    refused: list[tuple[str, str]] = []
    for entry in kept.entries:
        why = _matches_after(folder, entry, held, expected)
        if why is not None:
            refused.append((entry.path, why))
            continue
        if entry.before.kind == "file":
            read_copy(kept, entry.before)  # checked now, so that nothing starts when one is altered
        ancestors = {"/".join(entry.path.split("/")[:i]) for i in range(1, entry.path.count("/") + 1)}
        if entry.editor and not ancestors & server_dirs and (editor_deletes or entry.before.kind == "file"):
            path = folder.joinpath(*entry.path.split("/"))
            now: str | None = held.get(path)
            if now is None and entry.after.kind != "absent":
                data = _beneath(folder, entry.path, lambda fd, name: read_at(fd, name, TEXT_LIMIT))
                now = data.decode("utf-8") if data is not None else None
            before = read_copy(kept, entry.before).decode("utf-8") if entry.before.kind == "file" else None
            texts.append(TextRestore(entry.path, now, before))
        else:
            server.append(entry)
    # a refused folder keeps what is beneath it (the user's entry in it stays where it is)
    blocked = {p for p, _ in refused}
    server = [e for e in server if not any(e.path.startswith(f"{b}/") for b in blocked)]
    return Plan(kept, folder, tuple(texts), tuple(server), tuple(refused))


def restore(plan: Plan) -> list[tuple[str, str, str]]:
    """The server's part put back, whole or not at all: the entries the set made are set aside beside themselves
    (deepest first), then the before copies put back (shallowest first). Returns the steps done: ``settle`` then
    removes what was set aside, or ``take_back`` undoes them all (the editor refused its part). OSError when a step
    fails: the steps done are undone."""
    folder = _Folder(plan.folder)
    token = uuid.uuid4().hex[:12]
    steps: list[tuple[str, str, str]] = []
    try:
        try:
            for entry in sorted(plan.server, key=lambda e: -e.path.count("/")):
                if entry.after.kind == "absent" or entry.before.kind == "mode":
                    continue
                fd, name = folder.parent(entry.path)
                aside = f"{_ASIDE}{token}-{len(steps)}"
                os.rename(name, aside, src_dir_fd=fd, dst_dir_fd=fd)
                steps.append(("aside", entry.path, aside))
            for entry in sorted(plan.server, key=lambda e: e.path.count("/")):
                before = entry.before
                if before.kind == "absent":
                    continue
                fd, name = folder.parent(entry.path)
                if before.kind == "mode":
                    _chmod_at(fd, name, before.mode, steps, entry.path)
                elif before.kind == "dir":
                    os.mkdir(name, 0o700, dir_fd=fd)
                    steps.append(("made", entry.path, ""))
                    os.chmod(name, before.mode, dir_fd=fd, follow_symlinks=False)
                elif before.kind == "symlink":
                    os.symlink(before.target, name, dir_fd=fd)
                    steps.append(("made", entry.path, ""))
                elif before.kind == "file":
                    _write_at(fd, name, read_copy(plan.kept, before), before.mode)
                    steps.append(("made", entry.path, ""))
        except (OSError, Tampered) as exc:
            _take_back(folder, steps)
            raise OSError(errno.EIO, f"the server's part could not be restored ({exc}); nothing of it changed") from exc
    finally:
        folder.close()
    return steps


def settle(plan: Plan, steps: list[tuple[str, str, str]]) -> None:
    """A landed ``restore``: what it set aside is removed (deepest first, as it was set aside)."""
    folder = _Folder(plan.folder)
    asides = {rel for op, rel, _ in steps if op == "aside"}
    try:
        for op, rel, aside in steps:
            if op == "aside" and not any(rel.startswith(f"{other}/") for other in asides):
                fd, _ = folder.parent(rel)
                _remove_at(fd, aside)
    finally:
        folder.close()


def _chmod_at(fd: int, name: str, mode: int, steps: list[tuple[str, str, str]], rel: str) -> None:
    entry = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
    try:
        old = stat.S_IMODE(os.fstat(entry).st_mode)
        os.fchmod(entry, mode)
    finally:
        os.close(entry)
    steps.append(("mode", rel, oct(old)))


def _write_at(fd: int, name: str, data: bytes, mode: int) -> None:
    """A file written under a temporary name in its folder, then renamed into place (never over an entry)."""
    temporary = f"{_ASIDE}{uuid.uuid4().hex[:12]}.new"
    out = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=fd)
    try:
        with os.fdopen(out, "wb", closefd=False) as f:
            f.write(data)
        os.fchmod(out, mode)
    finally:
        os.close(out)
    if lstat_at(fd, name) is not None:
        os.unlink(temporary, dir_fd=fd)
        raise OSError(errno.EEXIST, "an entry appeared where the file goes back")
    os.rename(temporary, name, src_dir_fd=fd, dst_dir_fd=fd)


def _remove_at(fd: int, name: str) -> None:
    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(name, dir_fd=fd)
        return
    sub = os.open(name, DIR_FLAGS, dir_fd=fd)
    try:
        os.fchmod(sub, 0o700)
        for child in os.listdir(sub):
            _remove_at(sub, child)
    finally:
        os.close(sub)
    os.rmdir(name, dir_fd=fd)


def _take_back(folder: _Folder, steps: list[tuple[str, str, str]]) -> None:
    for op, rel, extra in reversed(steps):
        fd, name = folder.parent(rel)
        if op == "aside":
            os.rename(extra, name, src_dir_fd=fd, dst_dir_fd=fd)
        elif op == "made":
            _remove_at(fd, name)
        elif op == "mode":
            entry = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
            try:
                os.fchmod(entry, int(extra, 8))
            finally:
                os.close(entry)


def take_back(plan: Plan, steps: list[tuple[str, str, str]]) -> None:
    """Undoes a ``restore`` not yet settled (the editor refused its part): the folder is as before the undo."""
    folder = _Folder(plan.folder)
    try:
        _take_back(folder, steps)
    finally:
        folder.close()
