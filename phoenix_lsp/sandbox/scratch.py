"""The scratch directory of a restricted command: the only place it may write (its TMPDIR), made before it
starts and removed, whatever it left there, once it has ended.
"""

from __future__ import annotations

import contextlib
import errno as errno_mod
import logging
import os
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)

def make_scratch(restricted: bool) -> Path | None:
    if not restricted:
        return None
    return Path(tempfile.mkdtemp(prefix="phoenix-lsp-scratch-"))


def remove_tree(root: Path) -> bool:
    """Delete `root` and everything in it, whatever the command left there; True when it is gone.

    Iterative (a 100,000-level tree does not hit Python's recursion limit), descriptor-relative (paths
    longer than PATH_MAX do not matter, and a directory swapped for a symlink is unlinked, never
    followed), and chmod-aware: a directory the command made without read or search permission for us
    (``mkdir -m 300``) is given u+rwx first. At most one directory descriptor per level is open at a time
    for the walk down; each is closed before its parent is revisited.
    """
    with contextlib.suppress(OSError):
        os.rmdir(root)  # the common case, an empty directory: one syscall
        return True
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

    def open_dir(name: str, parent: int | None) -> int:
        try:
            return os.open(name, flags, dir_fd=parent)
        except PermissionError:
            os.chmod(name, 0o700, dir_fd=parent, follow_symlinks=False) if parent is not None else \
                os.chmod(name, 0o700)
            return os.open(name, flags, dir_fd=parent)

    try:
        top = open_dir(str(root), None)
    except FileNotFoundError:
        return True
    except OSError as exc:
        if exc.errno in (errno_mod.ENOTDIR, errno_mod.ELOOP):
            with contextlib.suppress(OSError):
                os.unlink(root)
        return not os.path.lexists(root)
    # Each level: (fd of the directory, name of it in its parent). Children are handled one at a time:
    # descend into the first subdirectory found, unlink files on the way; a directory found empty is
    # removed from its parent and the walk goes back up.
    stack: list[tuple[int, str]] = [(top, "")]
    try:
        while stack:
            fd, _name = stack[-1]
            descended = False
            try:
                with os.scandir(fd) as it:
                    entries = list(it)
            except PermissionError:
                os.fchmod(fd, 0o700)
                with os.scandir(fd) as it:
                    entries = list(it)
            for entry in entries:
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    is_dir = False
                if not is_dir:
                    try:
                        os.unlink(entry.name, dir_fd=fd)
                    except FileNotFoundError:
                        pass
                    except PermissionError:  # the directory itself lacks write permission for us
                        os.fchmod(fd, 0o700)
                        os.unlink(entry.name, dir_fd=fd)
                    continue
                try:
                    child = open_dir(entry.name, fd)
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    if exc.errno in (errno_mod.ENOTDIR, errno_mod.ELOOP):  # swapped for a file or link
                        with contextlib.suppress(FileNotFoundError):
                            os.unlink(entry.name, dir_fd=fd)
                        continue
                    raise
                stack.append((child, entry.name))
                descended = True
                break
            if descended:
                continue
            stack.pop()
            os.close(fd)
            if stack:
                parent_fd = stack[-1][0]
                try:
                    os.rmdir(_name, dir_fd=parent_fd)
                except FileNotFoundError:
                    pass
                except PermissionError:
                    os.fchmod(parent_fd, 0o700)
                    os.rmdir(_name, dir_fd=parent_fd)
        os.rmdir(root)
    except OSError as exc:
        log.warning("could not remove %s completely (%s); remove it by hand", root, exc)
    finally:
        for fd, _ in stack:
            with contextlib.suppress(OSError):
                os.close(fd)
    return not os.path.lexists(root)


def remove_scratch(scratch: Path | None) -> None:
    if scratch is not None:
        remove_tree(scratch)
