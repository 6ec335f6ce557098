"""Reading a layer into a change set (REQ-BASH-029, REQ-BASH-031): see the package's docstring."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

from phoenix_lsp.sandbox.overlay import Layer
from phoenix_lsp.tools.shell_changes.files import (
    DIR_FLAGS,
    digest,
    is_text,
    lstat_at,
    open_dir_at,
    read_at,
    same_bytes,
)
from phoenix_lsp.tools.shell_changes.model import (
    IGNORED_FOLDERS,
    MAX_ENTRIES,
    TEXT_LIMIT,
    Change,
    ChangeKind,
    ChangeSet,
    Conflict,
    Entry,
    Identity,
    LayerTooBig,
    Refused,
    size_text,
)

_OPAQUE = "user.overlay.opaque"
_ORIGIN = "user.overlay.origin"


def _join(rel: str, name: str) -> str:
    return f"{rel}/{name}" if rel else name


def _ignored(rel: str) -> str | None:
    for part in rel.split("/")[:-1]:
        if part in IGNORED_FOLDERS:
            return part
    return None


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
            editable = is_text(read_at(lower_fd, name, TEXT_LIMIT, st.st_size))
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
    upper_root = os.open(layer.upper, DIR_FLAGS)
    lower_root = os.open(layer.folder, DIR_FLAGS)
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
                f"the command wrote more than the layer allows ({size_text(s.layer.cap_bytes)}, {MAX_ENTRIES} "
                "entries); its changes were not read and are discarded")
        path = _join(rel, name)
        lower = lstat_at(lower_fd, name)
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
    sub_upper = s.fd(os.open(name, DIR_FLAGS, dir_fd=upper_fd))
    assert sub_upper is not None
    sub_lower = s.fd(open_dir_at(lower_fd, name)) if lower is not None else None
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
            after = read_at(upper_fd, name, TEXT_LIMIT, st.st_size)
            before = read_at(lower_fd, name, TEXT_LIMIT, lower.st_size)
            same = after == before
        else:
            after = before = None
            same = lower.st_size == st.st_size and same_bytes(upper_fd, lower_fd, name, st.st_size)
        if same:
            if mode_changed:
                s.changes.append(Change(path, ChangeKind.MODE, Entry.FILE, False, "mode", st.st_size,
                                        before=Identity.of(lower), mode=new_mode))
            return
        editable = ignored is None and not mode_changed and small and is_text(after) and is_text(before)
        reason = "" if editable else (_reason(Entry.FILE, ignored, too_big=max(st.st_size, lower.st_size) >
                                              TEXT_LIMIT, binary=not mode_changed))
        s.changes.append(Change(path, ChangeKind.MODIFIED, Entry.FILE, editable, reason, st.st_size,
                                before=Identity.of(lower), mode=new_mode if mode_changed else None))
        return
    editable = ignored is None and st.st_size <= TEXT_LIMIT and \
        is_text(read_at(upper_fd, name, TEXT_LIMIT, st.st_size))
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
            by_digest.setdefault(digest(item[1], item[2]), []).append(item)
        for gone, fd, name in deleted:
            match = by_digest.get(digest(fd, name))
            if not match:
                continue
            new, _, _ = match.pop(0)
            s.changes.remove(gone)
            s.changes.remove(new)
            editable = gone.editable and new.editable
            s.changes.append(Change(new.path, ChangeKind.RENAMED, Entry.FILE, editable,
                                    "" if editable else (new.reason or gone.reason or "binary"), new.size,
                                    old_path=gone.path, old_before=gone.before, mode=new.mode))
