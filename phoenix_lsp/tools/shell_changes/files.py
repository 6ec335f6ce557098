"""Reading the layer and the real folder through directory descriptors, never following a symlink."""

from __future__ import annotations

import errno
import hashlib
import os
import stat

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def lstat_at(dir_fd: int | None, name: str) -> os.stat_result | None:
    if dir_fd is None:
        return None
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return None


def open_dir_at(dir_fd: int | None, name: str) -> int | None:
    if dir_fd is None:
        return None
    try:
        return os.open(name, DIR_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None


def read_at(dir_fd: int, name: str, limit: int, size: int = 0) -> bytes | None:
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


def same_bytes(upper_fd: int, lower_fd: int, name: str, size: int) -> bool:
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


def is_text(data: bytes | None) -> bool:
    if data is None or b"\0" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def digest(dir_fd: int, name: str) -> str:
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dir_fd)
    try:
        h = hashlib.blake2b(digest_size=32)
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
        return h.hexdigest()
    finally:
        os.close(fd)
