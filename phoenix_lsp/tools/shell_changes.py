"""What a captured command changed (REQ-BASH-029..032): the overlay's upper layer read into a frozen change set,
and that change set accepted (the whole layer moved into the real folder, or nothing) or discarded.

The layer is read after the command's process tree has ended, without touching the real folder:
- a regular file in the layer is created, or modified when its bytes differ from the real file's (a file
  changed and changed back is no change; a new mode alone is a mode change);
- a character device 0/0 is a whiteout: the real entry was deleted;
- a directory marked opaque (xattr ``user.overlay.opaque``) hides every real entry beneath it that the layer
  does not hold again: those were deleted;
- a deleted file and a created one with the same bytes are a rename (the overlay does not record renames);
- symlinks and modes are changes of their own; devices, FIFOs and sockets are refused, never recreated.
Text files outside ignored folders are `editable` (later turned into one WorkspaceEdit); the rest (binary,
too big, ignored folders such as .git or node_modules, directories, modes, symlinks) is summarised.

Conflicts: the command cannot write the real folder, so a real file whose status changed after the command
started (ctime at or after the layer's start, from the same coarse clock the file system stamps with) was
changed by someone else; so was a file the command copied up (xattr ``user.overlay.origin``) that is gone
from a real folder that changed meanwhile. Such a change is never applied: it is listed as a conflict.
Between the scan and the accept, each real file's identity (inode, size, mtime, ctime) is checked again.
Limits: a change made in the same clock tick (4 ms here) just before the command counts as a conflict (the
safe side); a change to a file the command never touched is not a conflict, it is simply kept; a file the
command copied up whose real folder was itself deleted meanwhile is not recognised.

Paths in a change set are relative, made of names read from the layer (no `/`, never `.` or `..`); every
operation on the real folder goes through directory descriptors opened without following symlinks, so an
accept never writes outside the folder, whatever the layer or the folder holds.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import stat
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import NamedTuple

from phoenix_lsp.sandbox.overlay import Layer
from phoenix_lsp.sandbox.scratch import remove_tree

#: folders whose contents are never editor edits: version control, dependencies, caches, build output
IGNORED_FOLDERS = frozenset({
    ".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".cache", "build", "dist", "target", "out", ".next", ".gradle",
})
#: a text file larger than this is summarised rather than shown as an editor edit
TEXT_LIMIT = 1024 * 1024
#: the most entries a layer may hold before the scan gives up (a bound on the walk, like the byte cap)
MAX_ENTRIES = 500_000
_OPAQUE = "user.overlay.opaque"
_ORIGIN = "user.overlay.origin"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: the name a replaced entry is set aside under, beside itself, while an accept whose layer is on another
#: file system lands
_SET_ASIDE = ".phoenix-set-aside-"


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
                 f"{_size(sum(c.size for c in self.others))}"]
        by_reason: dict[str, list[Change]] = {}
        for change in self.others:
            by_reason.setdefault(change.reason, []).append(change)
        for reason, changes in sorted(by_reason.items()):
            lines.append(f"{reason}: {len(changes)} ({_size(sum(c.size for c in changes))})")
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


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n:.1f} GiB"


def _join(rel: str, name: str) -> str:
    return f"{rel}/{name}" if rel else name


def _ignored(rel: str) -> str | None:
    for part in rel.split("/")[:-1]:
        if part in IGNORED_FOLDERS:
            return part
    return None


def _lstat_at(dir_fd: int | None, name: str) -> os.stat_result | None:
    if dir_fd is None:
        return None
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return None


def _open_dir_at(dir_fd: int | None, name: str) -> int | None:
    if dir_fd is None:
        return None
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None


def _read_at(dir_fd: int, name: str, limit: int, size: int = 0) -> bytes | None:
    """The bytes of a regular file, opened without following a symlink (never blocking on a FIFO swapped in);
    None when it is larger than limit. `size` (from a stat a moment ago) sizes the first read, so a file that
    did not change since is read in one call."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dir_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        chunks = []
        total = 0
        want = min(size, limit) + 1
        while chunk := os.read(fd, want):
            total += len(chunk)
            if total > limit:
                return None
            chunks.append(chunk)
            if len(chunk) < want:  # a short read of a regular file: its end
                break
            want = 1 << 20
        return b"".join(chunks)
    finally:
        os.close(fd)


def _same_bytes(upper_fd: int, lower_fd: int, name: str, size: int) -> bool:
    a = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=upper_fd)
    try:
        b = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=lower_fd)
    except OSError:
        os.close(a)
        return False
    try:
        if os.fstat(b).st_size != size:
            return False
        while True:
            x, y = os.read(a, 1 << 20), os.read(b, 1 << 20)
            if x != y:
                return False
            if not x:
                return True
    finally:
        os.close(a)
        os.close(b)


def _is_text(data: bytes | None) -> bool:
    if data is None or b"\0" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _digest(dir_fd: int, name: str) -> str:
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dir_fd)
    try:
        h = hashlib.blake2b(digest_size=32)
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
        return h.hexdigest()
    finally:
        os.close(fd)


def _entry_of(mode: int) -> Entry:
    if stat.S_ISDIR(mode):
        return Entry.DIRECTORY
    if stat.S_ISLNK(mode):
        return Entry.SYMLINK
    return Entry.FILE


@dataclass
class _Scan:
    layer: Layer
    changes: list[Change] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    entries: int = 0
    allocated: int = 0
    # for rename pairing: deleted real files and created files, by size
    deleted_files: dict[int, list[tuple[Change, int, str]]] = field(default_factory=dict)
    created_files: dict[int, list[tuple[Change, int, str]]] = field(default_factory=dict)
    fds: list[int] = field(default_factory=list)

    def fd(self, fd: int | None) -> int | None:
        if fd is not None:
            self.fds.append(fd)
        return fd

    def changed_meanwhile(self, st: os.stat_result | None) -> bool:
        return st is not None and st.st_ctime_ns >= self.layer.started_ns

    def deleted(self, rel: str, lower_fd: int, name: str, st: os.stat_result) -> None:
        entry = _entry_of(st.st_mode)
        if self.changed_meanwhile(st):
            self.conflicts.append(Conflict(rel, "changed in the folder while the command ran; the command "
                                                "deleted it, and it is kept"))
            return
        ignored = _ignored(rel)
        editable = entry is Entry.FILE and ignored is None and st.st_size <= TEXT_LIMIT and stat.S_ISREG(st.st_mode)
        if editable:
            editable = _is_text(_read_at(lower_fd, name, TEXT_LIMIT, st.st_size))
        change = Change(rel, ChangeKind.DELETED, entry, editable,
                        "" if editable else _reason(entry, ignored, binary=entry is Entry.FILE),
                        0, before=Identity.of(st))
        self.changes.append(change)
        if entry is Entry.FILE and stat.S_ISREG(st.st_mode):
            self.deleted_files.setdefault(st.st_size, []).append((change, lower_fd, name))


def _reason(entry: Entry, ignored: str | None, binary: bool = False, too_big: bool = False) -> str:
    if ignored is not None:
        return f"ignored folder {ignored}"
    if entry is Entry.DIRECTORY:
        return "directory"
    if entry is Entry.SYMLINK:
        return "symlink"
    if too_big:
        return f"over {TEXT_LIMIT // 1024} KiB"
    return "binary" if binary else "mode"


def scan(layer: Layer) -> ChangeSet:
    """Reads `layer` (its command's process tree has ended) into a change set. Raises LayerTooBig when the
    layer is over its cap or holds more than MAX_ENTRIES entries."""
    s = _Scan(layer)
    upper_root = os.open(layer.upper, _DIR_FLAGS)
    lower_root = os.open(layer.folder, _DIR_FLAGS)
    s.fds += [upper_root, lower_root]
    try:
        stack: list[tuple[str, int, int | None]] = [("", upper_root, lower_root)]
        while stack:
            rel, upper_fd, lower_fd = stack.pop()
            _scan_dir(s, rel, upper_fd, lower_fd, stack)
        _pair_renames(s)
    finally:
        for fd in s.fds:
            os.close(fd)
    changes = sorted(s.changes, key=lambda c: (c.path, c.kind))
    return ChangeSet(layer.folder, tuple(changes), tuple(s.refused), tuple(s.conflicts), s.allocated)


def _scan_dir(s: _Scan, rel: str, upper_fd: int, lower_fd: int | None,
              stack: list[tuple[str, int, int | None]]) -> None:
    names: set[str] = set()
    for item in os.scandir(upper_fd):
        s.entries += 1
        name = item.name
        names.add(name)
        st = item.stat(follow_symlinks=False)
        s.allocated += st.st_blocks * 512
        if s.entries > MAX_ENTRIES or s.allocated > s.layer.cap_bytes:
            raise LayerTooBig(
                f"the command wrote more than the layer allows ({_size(s.layer.cap_bytes)}, {MAX_ENTRIES} "
                "entries); its changes were not read and are discarded")
        path = _join(rel, name)
        lower = _lstat_at(lower_fd, name)
        mode = st.st_mode
        if stat.S_ISCHR(mode) and st.st_rdev == 0:  # a whiteout
            if lower is not None and lower_fd is not None:
                s.deleted(path, lower_fd, name, lower)
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            s.refused.append(Refused(path, "a device, FIFO or socket made by the command is never recreated"))
            continue
        if lower is not None and _entry_of(lower.st_mode) is not _entry_of(mode) and lower_fd is not None:
            s.deleted(path, lower_fd, name, lower)  # a file became a folder, a folder a link, ...
            lower = None
        if lower is not None and s.changed_meanwhile(lower) and not stat.S_ISDIR(mode):
            s.conflicts.append(Conflict(path, "changed in the folder while the command ran; the command's "
                                              "version is not applied"))
            continue
        if stat.S_ISDIR(mode):
            _scan_subdir(s, path, upper_fd, lower_fd, name, lower, st, stack)
        elif stat.S_ISLNK(mode):
            _scan_link(s, path, upper_fd, lower_fd, name, lower)
        else:
            _scan_file(s, path, upper_fd, lower_fd, name, lower, st)
    if lower_fd is not None and _opaque(upper_fd):
        # An opaque directory hides everything beneath it in the real folder: what it does not hold again
        # was deleted.
        for item in os.scandir(lower_fd):
            if item.name not in names:
                st = item.stat(follow_symlinks=False)
                s.deleted(_join(rel, item.name), lower_fd, item.name, st)


def _opaque(dir_fd: int) -> bool:
    try:
        return os.getxattr(f"/proc/self/fd/{dir_fd}", _OPAQUE) == b"y"
    except OSError:
        return False


def _scan_subdir(s: _Scan, path: str, upper_fd: int, lower_fd: int | None, name: str,
                 lower: os.stat_result | None, st: os.stat_result, stack: list[tuple[str, int, int | None]]) -> None:
    ignored = _ignored(path + "/")
    if lower is None:
        s.changes.append(Change(path, ChangeKind.CREATED, Entry.DIRECTORY, False, _reason(Entry.DIRECTORY, ignored),
                                0, mode=stat.S_IMODE(st.st_mode)))
    elif stat.S_IMODE(lower.st_mode) != stat.S_IMODE(st.st_mode):
        s.changes.append(Change(path, ChangeKind.MODE, Entry.DIRECTORY, False, "mode", 0,
                                before=Identity.of(lower), mode=stat.S_IMODE(st.st_mode)))
    sub_upper = s.fd(os.open(name, _DIR_FLAGS, dir_fd=upper_fd))
    assert sub_upper is not None
    sub_lower = s.fd(_open_dir_at(lower_fd, name)) if lower is not None else None
    stack.append((path, sub_upper, sub_lower))


def _scan_link(s: _Scan, path: str, upper_fd: int, lower_fd: int | None, name: str,
               lower: os.stat_result | None) -> None:
    target = os.readlink(name, dir_fd=upper_fd)
    if lower is not None and lower_fd is not None and os.readlink(name, dir_fd=lower_fd) == target:
        return
    parent = path.rsplit("/", 1)[0] if "/" in path else ""
    outside = os.path.isabs(target) or os.path.normpath(os.path.join(parent, target)).split("/")[0] == ".."
    s.changes.append(Change(path, ChangeKind.CREATED if lower is None else ChangeKind.MODIFIED, Entry.SYMLINK,
                            False, _reason(Entry.SYMLINK, _ignored(path)), len(target),
                            before=Identity.of(lower) if lower is not None else None, target=target,
                            outside=outside))


def _scan_file(s: _Scan, path: str, upper_fd: int, lower_fd: int | None, name: str,
               lower: os.stat_result | None, st: os.stat_result) -> None:
    if lower is None and lower_fd is not None and s.changed_meanwhile(os.fstat(lower_fd)) and \
            _has_origin(upper_fd, name):
        # The command copied a real file up (a rename leaves its copy with that mark too), and the real folder
        # it sat in changed meanwhile: the user deleted or moved it.
        s.conflicts.append(Conflict(path, "deleted from the folder while the command ran; the command's "
                                          "version is not applied"))
        return
    ignored = _ignored(path)
    new_mode = stat.S_IMODE(st.st_mode)
    if lower is not None and lower_fd is not None:
        mode_changed = stat.S_IMODE(lower.st_mode) != new_mode
        small = max(st.st_size, lower.st_size) <= TEXT_LIMIT
        if small:  # each side read once: for the comparison and for the text test
            after = _read_at(upper_fd, name, TEXT_LIMIT, st.st_size)
            before = _read_at(lower_fd, name, TEXT_LIMIT, lower.st_size)
            same = after == before
        else:
            after = before = None
            same = lower.st_size == st.st_size and _same_bytes(upper_fd, lower_fd, name, st.st_size)
        if same:
            if mode_changed:
                s.changes.append(Change(path, ChangeKind.MODE, Entry.FILE, False, "mode", st.st_size,
                                        before=Identity.of(lower), mode=new_mode))
            return
        editable = ignored is None and not mode_changed and small and _is_text(after) and _is_text(before)
        reason = "" if editable else (_reason(Entry.FILE, ignored, too_big=max(st.st_size, lower.st_size) >
                                              TEXT_LIMIT, binary=not mode_changed))
        s.changes.append(Change(path, ChangeKind.MODIFIED, Entry.FILE, editable, reason, st.st_size,
                                before=Identity.of(lower), mode=new_mode if mode_changed else None))
        return
    editable = ignored is None and st.st_size <= TEXT_LIMIT and \
        _is_text(_read_at(upper_fd, name, TEXT_LIMIT, st.st_size))
    reason = "" if editable else _reason(Entry.FILE, ignored, binary=True, too_big=st.st_size > TEXT_LIMIT)
    change = Change(path, ChangeKind.CREATED, Entry.FILE, editable, reason, st.st_size, mode=new_mode)
    s.changes.append(change)
    s.created_files.setdefault(st.st_size, []).append((change, upper_fd, name))


def _has_origin(dir_fd: int, name: str) -> bool:
    try:
        os.getxattr(f"/proc/self/fd/{dir_fd}/{name}", _ORIGIN, follow_symlinks=False)
        return True
    except OSError:
        return False


def _pair_renames(s: _Scan) -> None:
    """A deleted real file and a created file with the same bytes: one rename (the overlay keeps none)."""
    for size, deleted in s.deleted_files.items():
        created = s.created_files.get(size)
        if not created:
            continue
        by_digest: dict[str, list[tuple[Change, int, str]]] = {}
        for item in created:
            by_digest.setdefault(_digest(item[1], item[2]), []).append(item)
        for gone, fd, name in deleted:
            match = by_digest.get(_digest(fd, name))
            if not match:
                continue
            new, _, _ = match.pop(0)
            s.changes.remove(gone)
            s.changes.remove(new)
            editable = gone.editable and new.editable
            s.changes.append(Change(new.path, ChangeKind.RENAMED, Entry.FILE, editable,
                                    "" if editable else (new.reason or gone.reason or "binary"), new.size,
                                    old_path=gone.path, old_before=gone.before, mode=new.mode))


# ------------------------------------------------------------------------------------------ accept / discard


@dataclass(frozen=True)
class Accepted:
    """What an accept did, in order, so that it can be taken back as a whole (`undo`): each step is
    (operation, path, saved copy in the layer's before/ or None)."""

    folder: Path
    steps: tuple[tuple[str, str, str | None], ...]
    skipped: tuple[Conflict, ...]


class _Folder:
    """The real folder, reached only through directory descriptors opened without following symlinks."""

    def __init__(self, root: Path) -> None:
        self.root_fd = os.open(root, _DIR_FLAGS)
        self.fds: list[int] = [self.root_fd]

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)

    def parent(self, rel: str) -> tuple[int, str]:
        """The directory descriptor holding `rel`'s last name, and that name. Fails (ELOOP, ENOTDIR) when a
        folder on the way is a symlink or not a folder."""
        parts = rel.split("/")
        if any(p in ("", ".", "..") for p in parts):
            raise OSError(errno.EINVAL, f"not a path inside the folder: {rel!r}")
        fd = self.root_fd
        for part in parts[:-1]:
            fd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            self.fds.append(fd)
        return fd, parts[-1]


def accept(layer: Layer, changes: ChangeSet) -> Accepted:
    """Moves the whole change set into the real folder, or nothing: on any failure every step done is undone
    in reverse and AcceptFailed is raised. Conflicts found by the scan, and real entries whose identity
    changed since the scan, are skipped (listed in `skipped`), never overwritten. The real entries replaced or
    deleted are kept in the layer's before/ (for `undo`); the layer's upper directory is consumed."""
    layer.before.mkdir(exist_ok=True, mode=0o700)
    folder = _Folder(layer.folder)
    upper = _Folder(layer.upper)
    steps: list[tuple[str, str, str | None]] = []
    skipped = list(changes.conflicts)
    counter = 0

    token = uuid.uuid4().hex[:12]  # set-aside names no entry of the folder can already have

    def save(rel: str) -> str:
        nonlocal counter
        counter += 1
        key = f"{token}-{counter}"
        fd, name = folder.parent(rel)
        if layer.same_fs:
            os.rename(name, layer.before / key, src_dir_fd=fd)
            steps.append(("saved", rel, key))
        else:  # set aside beside itself (a rename); copied into the layer once the accept has landed
            os.rename(name, f"{_SET_ASIDE}{key}", src_dir_fd=fd, dst_dir_fd=fd)
            steps.append(("aside", rel, key))
        return key

    def unchanged(rel: str, before: Identity | None) -> bool:
        fd, name = folder.parent(rel)
        st = _lstat_at(fd, name)
        if before is None:
            return st is None
        return st is not None and Identity.of(st) == before

    def place(rel: str) -> None:
        ufd, uname = upper.parent(rel)
        fd, name = folder.parent(rel)
        if _lstat_at(fd, name) is not None:
            raise OSError(errno.EEXIST, f"{rel} appeared in the folder during the accept")
        if layer.same_fs:
            os.rename(uname, name, src_dir_fd=ufd, dst_dir_fd=fd)
        else:
            _copy_into(ufd, uname, fd, name)
        steps.append(("placed", rel, None))

    try:
        ordered = sorted(changes.changes, key=lambda c: (c.kind is not ChangeKind.DELETED,
                                                         -c.path.count("/") if c.kind is ChangeKind.DELETED
                                                         else c.path.count("/"), c.path))
        for change in ordered:
            if not unchanged(change.path, change.before) or (
                    change.old_path is not None and not unchanged(change.old_path, change.old_before)):
                skipped.append(Conflict(change.path, "changed in the folder since the review was made; kept"))
                continue
            if change.kind is ChangeKind.DELETED:
                save(change.path)
            elif change.kind is ChangeKind.MODE:
                fd, name = folder.parent(change.path)
                entry = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
                try:
                    old = stat.S_IMODE(os.fstat(entry).st_mode)
                    assert change.mode is not None
                    os.fchmod(entry, change.mode)
                finally:
                    os.close(entry)
                steps.append(("mode", change.path, oct(old)))
            elif change.entry is Entry.DIRECTORY:  # created
                fd, name = folder.parent(change.path)
                os.mkdir(name, change.mode if change.mode is not None else 0o755, dir_fd=fd)
                steps.append(("made", change.path, None))
            else:  # a file or symlink, created, modified or renamed here
                if change.old_path is not None:
                    save(change.old_path)
                if change.before is not None:
                    save(change.path)
                place(change.path)
    except (OSError, AssertionError) as exc:
        _undo_steps(layer, folder, upper, steps)
        folder.close()
        upper.close()
        raise AcceptFailed(f"the command's changes could not be applied ({exc}); nothing was changed in "
                           f"{layer.folder}; discard them or run the command again") from exc
    # Landed. What was set aside beside itself (the layer is on another file system) is copied into the
    # layer's before/ for an undo, then removed from the folder.
    for i, (op, rel, extra) in enumerate(steps):
        if op != "aside":
            continue
        assert extra is not None
        fd, _name = folder.parent(rel)
        src = f"/proc/self/fd/{fd}/{_SET_ASIDE}{extra}"
        if os.path.isdir(src) and not os.path.islink(src):
            shutil.copytree(src, layer.before / extra, symlinks=True)
        else:
            shutil.copy2(src, layer.before / extra, follow_symlinks=False)
        remove_tree(Path(src))
        steps[i] = ("saved", rel, extra)
    folder.close()
    upper.close()
    return Accepted(layer.folder, tuple(steps), tuple(skipped))


def _copy_into(src_fd: int, src: str, dst_fd: int, dst: str) -> None:
    """A file or symlink of the layer copied into the folder when they are on different file systems: written
    under a temporary name, then renamed into place (a reader never sees half a file)."""
    st = os.stat(src, dir_fd=src_fd, follow_symlinks=False)
    temporary = f".{dst}.phoenix-accept"
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(src, dir_fd=src_fd), temporary, dir_fd=dst_fd)
    else:
        fin = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=src_fd)
        fout = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                       stat.S_IMODE(st.st_mode), dir_fd=dst_fd)
        try:
            with os.fdopen(fin, "rb", closefd=False) as a, os.fdopen(fout, "wb", closefd=False) as b:
                shutil.copyfileobj(a, b, 1 << 20)
            os.fchmod(fout, stat.S_IMODE(st.st_mode))
        finally:
            os.close(fin)
            os.close(fout)
    os.rename(temporary, dst, src_dir_fd=dst_fd, dst_dir_fd=dst_fd)


def _undo_steps(layer: Layer, folder: _Folder, upper: _Folder | None, steps: list[tuple[str, str, str | None]]) -> None:
    for op, rel, extra in reversed(steps):
        fd, name = folder.parent(rel)
        if op == "aside":
            assert extra is not None
            os.rename(f"{_SET_ASIDE}{extra}", name, src_dir_fd=fd, dst_dir_fd=fd)
        elif op == "saved":
            assert extra is not None
            if layer.same_fs:
                os.rename(layer.before / extra, name, dst_dir_fd=fd)
            else:  # copied back under a temporary name, then renamed into place
                temporary = f"{_SET_ASIDE}{extra}.back"
                dst = f"/proc/self/fd/{fd}/{temporary}"
                if (layer.before / extra).is_dir() and not (layer.before / extra).is_symlink():
                    shutil.copytree(layer.before / extra, dst, symlinks=True)
                else:
                    shutil.copy2(layer.before / extra, dst, follow_symlinks=False)
                os.rename(temporary, name, src_dir_fd=fd, dst_dir_fd=fd)
        elif op == "placed":
            if upper is not None and layer.same_fs:
                ufd, uname = upper.parent(rel)
                os.rename(name, uname, src_dir_fd=fd, dst_dir_fd=ufd)
            elif stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                os.rmdir(name, dir_fd=fd)
            else:
                os.unlink(name, dir_fd=fd)
        elif op == "made":
            os.rmdir(name, dir_fd=fd)
        elif op == "mode":
            assert extra is not None
            entry = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
            try:
                os.fchmod(entry, int(extra, 8))
            finally:
                os.close(entry)


def undo(layer: Layer, accepted: Accepted) -> None:
    """Takes an accepted change set back as a whole: what it placed is removed, what it replaced or deleted is
    put back from the layer's before/ copies. (Checking that nobody changed those files since comes with the
    clients' undo.)"""
    folder = _Folder(accepted.folder)
    try:
        _undo_steps(layer, folder, None, list(accepted.steps))
    finally:
        folder.close()


def walk_paths(changes: ChangeSet) -> Iterator[Path]:
    """The real paths a change set names (for display and checks), never resolved through symlinks."""
    for change in changes.changes:
        yield changes.folder / change.path
        if change.old_path is not None:
            yield changes.folder / change.old_path
