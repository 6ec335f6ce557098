"""Accepting a change set whole or not at all, and taking it back (REQ-BASH-030, REQ-BASH-031)."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import uuid
from dataclasses import dataclass
from pathlib import Path

from phoenix_lsp.sandbox.overlay import Layer
from phoenix_lsp.sandbox.scratch import remove_tree
from phoenix_lsp.tools.shell_changes.files import DIR_FLAGS, lstat_at
from phoenix_lsp.tools.shell_changes.model import AcceptFailed, ChangeKind, ChangeSet, Conflict, Entry, Identity

#: the name a replaced entry is set aside under, beside itself, while an accept whose layer is on another
#: file system lands
_SET_ASIDE = ".phoenix-set-aside-"


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
        self.root_fd = os.open(root, DIR_FLAGS)
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
            fd = os.open(part, DIR_FLAGS, dir_fd=fd)
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
        st = lstat_at(fd, name)
        if before is None:
            return st is None
        return st is not None and Identity.of(st) == before

    def place(rel: str) -> None:
        ufd, uname = upper.parent(rel)
        fd, name = folder.parent(rel)
        if lstat_at(fd, name) is not None:
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
