"""The "before" copies of a conversation's accepted change sets, kept for an undo (REQ-BASH-040).

Each accepted change set (a bash command's reviewed changes, a patch) is kept as one folder of the server's data
directory, ``undo/<conversation>/<set id>/``: ``manifest.json`` names every path the set changed with its state
before and after, and ``files/`` holds the bytes of what was there before (a replaced or deleted file, a deleted
folder's tree). Folders are 0700 and files 0600 (they are the user's files: only the server reads them), and
nothing of them is ever logged. Per conversation the ``limits.UNDO_SETS`` most recent sets are kept, together at
most ``limits.UNDO_BYTES`` on disk (measured on disk, not believed from the manifests): the oldest set is dropped
first, anything in the folder that is not a kept set is removed, and a set that alone is over the bytes is not
kept (its review said so before it was accepted).

The conversation's folder is named by a digest of its id and a set's by twelve hex digits the server drew: no id a
client sends becomes a path without matching that form. A manifest is bounded before it is decoded.

Over 300 lines: a kept set's format is written (the draft) and read back (the head, the manifest, the bound) in
this one file, so that the writer and the readers cannot drift apart.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from phoenix_lsp import limits
from phoenix_lsp.tools.shell_changes.files import DIR_FLAGS

#: a kept set's head: a few names and numbers
_HEAD = limits.Bounds("a kept change set's head", 64 * 1024, 1_000)
#: a change set's id: twelve hex digits the server drew (``latest`` names the newest in a request)
SET_ID = re.compile(r"[0-9a-f]{12}")
LATEST = "latest"
Kind = Literal["absent", "file", "symlink", "dir", "mode"]


class NotKept(LookupError):
    """No kept change set of that id (never kept, dropped by the bound, already undone, or no such form)."""


@dataclass(frozen=True)
class State:
    """One path's state, before or after a change set. A file before names its copy (``copy``, relative to the
    set's ``files/``) and its digest; a file after is known by its digest (``sha``, a text the editor wrote) or
    by its identity on disk (``ident``: inode, size, mtime and mode, a file the server placed). ``mode`` (kind
    "mode") is a change of permissions alone: before holds the old bits."""

    kind: Kind
    mode: int = 0
    sha: str = ""
    size: int = 0
    target: str = ""
    copy: str = ""
    ident: str = ""


ABSENT = State("absent")


@dataclass(frozen=True)
class Entry:
    """One path of the set (relative to its folder, ``/``-separated), and whether the editor carries it back
    (a text file) or the server does."""

    path: str
    before: State
    after: State
    editor: bool = False


@dataclass(frozen=True)
class KeptSet:
    id: str
    label: str  # what made it: "bash: <command>" or "patch <path>"
    folder: str  # the workspace folder the paths are relative to
    seq: int  # when it was kept (ns): the newest is undone by "latest", the oldest dropped first
    size: int  # bytes of its before copies
    entries: tuple[Entry, ...] = field(default_factory=tuple)
    root: Path = Path()  # its folder in the data directory

    def copy_path(self, state: State) -> Path:
        return self.root / "files" / state.copy


def identity(st: os.stat_result) -> str:
    """A placed entry as the undo checks it: inode, size, mtime and mode. Not ctime: an undo the editor refused
    renames entries back into place, which moves their ctime and nothing else, and they are still the set's."""
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{stat.S_IMODE(st.st_mode)}"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def conversation_dir(data_dir: Path, conversation_id: str) -> Path:
    """The folder of one conversation's kept sets (named by a digest: an id never becomes a path)."""
    return data_dir / "undo" / hashlib.sha256(conversation_id.encode()).hexdigest()[:32]


def _private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)


class Draft:
    """A change set being kept: its before copies written (or moved in from an accepted layer), then committed."""

    def __init__(self, data_dir: Path, conversation_id: str) -> None:
        self.home = conversation_dir(data_dir, conversation_id)
        _private_dir(self.home)
        self.id = secrets.token_hex(6)
        self.root = self.home / f".new-{self.id}"
        self.root.mkdir(mode=0o700)
        (self.root / "files").mkdir(mode=0o700)
        self.size = 0
        self.count = 0

    def _name(self) -> str:
        self.count += 1
        return str(self.count)

    def keep_bytes(self, data: bytes, mode: int = 0o644) -> State:
        """A file's bytes before, written as a copy of the set (0600)."""
        name = self._name()
        fd = os.open(self.root / "files" / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        self.size += len(data)
        return State("file", mode=mode, sha=digest(data), size=len(data), copy=name)

    def adopt(self, source: Path) -> list[tuple[str, State]]:
        """A replaced or deleted entry (a file, a symlink, a folder's tree) moved in from an accepted layer's
        ``before/`` (a rename; a copy when the layer is on another file system): its states before, by path
        relative to the entry ("" for the entry itself)."""
        name = self._name()
        target = self.root / "files" / name
        try:
            os.rename(source, target)
        except OSError:
            if source.is_dir() and not source.is_symlink():
                shutil.copytree(source, target, symlinks=True)
            else:
                shutil.copy2(source, target, follow_symlinks=False)
        found: list[tuple[str, State]] = []
        for rel, path in _walk(target):
            st = path.lstat()
            copy = f"{name}/{rel}" if rel else name
            if stat.S_ISLNK(st.st_mode):
                found.append((rel, State("symlink", target=os.readlink(path))))
            elif stat.S_ISDIR(st.st_mode):
                found.append((rel, State("dir", mode=stat.S_IMODE(st.st_mode))))
                os.chmod(path, 0o700)
            elif stat.S_ISREG(st.st_mode):
                found.append((rel, State("file", mode=stat.S_IMODE(st.st_mode), sha=_file_digest(path),
                                         size=st.st_size, copy=copy)))
                os.chmod(path, 0o600)
                self.size += st.st_size
            if len(found) > limits.UNDO_ENTRIES:
                raise OSError(f"over {limits.UNDO_ENTRIES} entries")
        return found

    def commit(self, label: str, folder: Path, entries: list[Entry]) -> str | None:
        """The set kept (its id), the oldest sets dropped to stay within the bound; None when the set alone is
        over the bytes (then nothing of it is kept)."""
        if self.size > limits.UNDO_BYTES or not entries:
            self.abandon()
            return None
        head = {"id": self.id, "label": label, "folder": str(folder), "seq": time.time_ns(), "size": self.size,
                "count": len(entries)}
        manifest = [[e.path, astuple(e.before), astuple(e.after), e.editor] for e in entries]
        for name, data in (("head.json", head), ("manifest.json", manifest)):
            fd = os.open(self.root / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(json.dumps(data, separators=(",", ":")))  # the C encoder (json.dump's is Python's)
        os.rename(self.root, self.home / self.id)
        enforce(self.home, keep=self.id)
        return self.id

    def abandon(self) -> None:
        remove(self.root)


def _walk(root: Path) -> Iterator[tuple[str, Path]]:
    """root itself ("") and everything beneath it, parents first, never following a symlink."""
    yield "", root
    if not root.is_dir() or root.is_symlink():
        return
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        for name in sorted(dirnames) + sorted(filenames):
            path = base / name
            yield str(path.relative_to(root)).replace(os.sep, "/"), path


def _file_digest(path: Path) -> str:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        h = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
        return h.hexdigest()
    finally:
        os.close(fd)


def remove(path: Path) -> None:
    """A kept set's folder (or anything else in a conversation's folder) removed, never following a symlink."""
    with contextlib.suppress(FileNotFoundError):
        if path.is_symlink() or not path.is_dir():
            path.unlink()
            return
        for dirpath, dirnames, _ in os.walk(path):
            for name in dirnames:
                sub = Path(dirpath, name)
                if not sub.is_symlink():
                    with contextlib.suppress(OSError):
                        os.chmod(sub, 0o700)
        shutil.rmtree(path, ignore_errors=True)


def _disk_use(path: Path) -> int:
    """Bytes under ``path`` as the disk holds them (lstat, never following a symlink)."""
    total = 0
    try:
        st = path.lstat()
    except OSError:
        return 0
    total += st.st_blocks * 512
    if stat.S_ISDIR(st.st_mode):
        for dirpath, dirnames, filenames in os.walk(path):
            for name in [*dirnames, *filenames]:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
    return total


def enforce(home: Path, keep: str | None = None) -> None:
    """The bound of one conversation's folder: anything that is not a kept set is removed, then the oldest sets
    are dropped until at most ``UNDO_SETS`` are left using at most ``UNDO_BYTES`` of disk (the set just kept,
    ``keep``, last of all)."""
    kept: list[tuple[int, Path]] = []
    for child in home.iterdir():
        manifest = _read_head(child)
        if manifest is None:
            remove(child)
            continue
        kept.append((manifest.seq, child))
    kept.sort(key=lambda item: (item[1].name == keep, item[0]))  # oldest first, the new one last
    uses = {path: _disk_use(path) for _, path in kept}
    while kept and (len(kept) > limits.UNDO_SETS or sum(uses[p] for _, p in kept) > limits.UNDO_BYTES):
        _, oldest = kept.pop(0)
        remove(oldest)


def _read_json(root: Path, name: str, bounds: limits.Bounds) -> Any:
    """``name`` in a kept set's folder, read without following a symlink (the folder's either), bounded before it
    is decoded; None when it does not read."""
    try:
        fd_dir = os.open(root, DIR_FLAGS)
    except OSError:
        return None
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=fd_dir)
    except OSError:
        os.close(fd_dir)
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        raw = os.read(fd, bounds.max_bytes + 1)
        bounds.check(raw)
        return json.loads(raw)
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
        os.close(fd_dir)


def _read_head(root: Path) -> KeptSet | None:
    """A kept set's head (its id, label, folder, time, size; no entries); None when the folder is not a kept set
    (a stray file, a draft, a head that does not read, or one the server did not write: it writes no empty set,
    nor one from the future)."""
    if not SET_ID.fullmatch(root.name):
        return None
    data = _read_json(root, "head.json", _HEAD)
    try:
        if (not isinstance(data, dict) or data["id"] != root.name or int(data["count"]) < 1
                or int(data["seq"]) > time.time_ns()):
            return None
        return KeptSet(id=root.name, label=str(data["label"]), folder=str(data["folder"]), seq=int(data["seq"]),
                       size=int(data["size"]), root=root)
    except (KeyError, TypeError, ValueError):
        return None


def _read_manifest(root: Path) -> KeptSet | None:
    """A kept set with its entries (the manifest bounded before it is decoded, every path relative and made of
    names); None when it is not a kept set."""
    head = _read_head(root)
    if head is None:
        return None
    data = _read_json(root, "manifest.json", limits.UNDO_MANIFEST)
    if not isinstance(data, list):
        return None
    try:
        entries = tuple(Entry(path=str(path), before=_state(before), after=_state(after), editor=bool(editor))
                        for path, before, after, editor in data)
    except (TypeError, ValueError):
        return None
    if not entries or any(not _relative(e.path) for e in entries):
        return None
    return KeptSet(head.id, head.label, head.folder, head.seq, head.size, entries, root)


def astuple(state: State) -> list[object]:
    """A state as the manifest holds it: its fields in order (2,000 entries are written in milliseconds)."""
    return [state.kind, state.mode, state.sha, state.size, state.target, state.copy, state.ident]


def _state(fields: list[Any]) -> State:
    kind, mode, sha, size, target, copy, ident = fields
    if kind not in ("absent", "file", "symlink", "dir", "mode"):
        raise ValueError(f"no such kind of entry: {kind!r}")
    return State(kind, int(mode), str(sha), int(size), str(target), str(copy), str(ident))


def _relative(path: str) -> bool:
    parts = path.split("/")
    return bool(path) and all(p not in ("", ".", "..") for p in parts) and "\0" not in path


def kept_sets(data_dir: Path, conversation_id: str) -> list[KeptSet]:
    """The conversation's kept sets, newest first."""
    home = conversation_dir(data_dir, conversation_id)
    if not home.is_dir() or home.is_symlink():
        return []
    found = [m for child in home.iterdir() if (m := _read_head(child)) is not None]
    return sorted(found, key=lambda m: m.seq, reverse=True)


def load(data_dir: Path, conversation_id: str, set_id: str) -> KeptSet:
    """The kept set ``set_id`` (or the newest, for ``latest``); NotKept when there is none of that id."""
    if set_id == LATEST:
        sets = kept_sets(data_dir, conversation_id)
        if not sets:
            raise NotKept("this conversation has no accepted change set kept for an undo")
        set_id = sets[0].id
    if not SET_ID.fullmatch(set_id):
        raise NotKept(f"{set_id[:40]!r} is not a change set id (twelve hex digits, or 'latest')")
    found = _read_manifest(conversation_dir(data_dir, conversation_id) / set_id)
    if found is None:
        raise NotKept(f"no change set {set_id} is kept for this conversation (never kept, dropped as the oldest, "
                      "or already undone)")
    return found
