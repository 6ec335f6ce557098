"""The confined reader: the one door through which phoenix-lsp reads a file for the model or for itself
(REQ-READ-001..006, issue 24).

Every file whose path a user, a repository or a model can influence is read here: project instructions,
attachments, ``read_file`` and ``search_files``, artifacts, ``ui_settings.json``, transcripts. The rules:

- **beneath a root, never out by a symlink**: the path is resolved beneath one of the caller's roots with
  ``openat2(2)`` and ``RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`` (Linux >= 5.6), else by a walk that opens one
  component at a time with ``O_NOFOLLOW`` and follows a symlink only while it stays beneath the root. A
  symlink that stays inside is followed; one that leads out (an absolute target, ``..`` above the root, a
  ``/proc`` magic link) is refused.
- **one open, then the descriptor only**: the file is opened once (``O_NONBLOCK``, so a FIFO never blocks;
  ``O_NOCTTY``), then ``fstat`` and ``read`` use that descriptor; nothing is looked up by name again, so a
  racing process that swaps a directory for a symlink changes nothing that was checked.
- **regular files only**, and **the cap counts the bytes read** (procfs reports a size of 0).
- **the deny-read list** the kernel sandbox enforces (:class:`~phoenix_lsp.sandbox.denylist.DenyCheck`) is
  checked against the path the kernel says the descriptor has (``/proc/self/fd/N``), plus :data:`NEVER_READ`
  (procfs, sysfs and devices) always.
- **never on the event loop**: async callers use ``asyncio.to_thread``. A synchronous caller that runs on
  the loop (a plain-editor command) has its read done by a worker thread, waited for at most
  :data:`LOOP_WAIT_S`; past that the read is refused, so the loop (every request, every conversation) never
  waits longer on a slow or hostile file.

A refusal is a :class:`ReadRefused` with a :data:`Reason`; each caller turns it into its own message (what,
why, what next). ``str()`` of one is a complete message for callers that have nothing to add.

Over 300 lines: the one door for reads; the openat2 path, the walk fallback and the capped read stay in one file so
the whole rule is reviewed and mutation-tested as one.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import ctypes
import errno
import functools
import os
import platform
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal, NamedTuple

from .sandbox.denylist import DenyCheck

__all__ = ["LOOP_WAIT_S", "NEVER_READ", "FileRead", "ReadRefused", "Reason", "Root", "mechanism", "read", "use_walk"]

Reason = Literal["outside", "denied", "missing", "not_regular", "too_large", "loop", "unreadable"]

#: Read by nothing, whatever the deny-read list says: process and kernel state (``/proc/self/environ`` is the
#: server's own environment), and devices. None of them is a file of a project.
NEVER_READ: tuple[str, ...] = ("/proc", "/sys", "/dev")

#: The longest a read asked for on the event loop's thread is waited for (done by a worker meanwhile).
LOOP_WAIT_S = 2.0

_MAX_LINKS = 40  # as the kernel's own limit on symlinks in one lookup
_LOOKUP_TRIES = 8  # openat2 lookups a racing rename may make the kernel ask to retry (EAGAIN)
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC

# openat2(2): the syscall number is 437 on every architecture that has it (x86_64 and the generic table).
_SYS_OPENAT2 = 437
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


class ReadRefused(Exception):
    """A file was not read. ``reason`` says which rule refused it; ``path`` is the path asked for; ``entry``
    the deny-read entry (for ``denied``); ``limit`` the cap (for ``too_large``)."""

    def __init__(self, reason: Reason, path: str, message: str, *, entry: str | None = None,
                 limit: int | None = None, cause: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.path = path
        self.entry = entry
        self.limit = limit
        self.cause = cause  # the system's words for an ``unreadable`` file (e.g. "Permission denied")


class FileRead(NamedTuple):
    """What was read: the bytes, and the real path of the file they came from (the kernel's name for the
    descriptor, so symlinks inside the root are resolved)."""

    data: bytes
    real: str


_force_walk = False
_openat2_works: bool | None = None


def use_walk(on: bool) -> None:
    """Use the ``O_NOFOLLOW`` walk even where ``openat2`` exists (tests prove both ways)."""
    global _force_walk
    _force_walk = on


def mechanism() -> Literal["openat2", "walk"]:
    """How paths are resolved here: ``openat2`` (the kernel confines the lookup) or ``walk``."""
    global _openat2_works
    if _force_walk:
        return "walk"
    if _openat2_works is None:
        _openat2_works = _probe_openat2()
    return "openat2" if _openat2_works else "walk"


_syscall_fn: Callable[..., int] | None = None
_hows: dict[tuple[int, int], _OpenHow] = {}  # one per set of flags; never changed once made, so threads may share them


def _syscall() -> Callable[..., int]:
    global _syscall_fn
    if _syscall_fn is None:
        fn = ctypes.CDLL(None, use_errno=True).syscall
        fn.restype = ctypes.c_long
        fn.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]
        _syscall_fn = fn
    return _syscall_fn


def _openat2(dir_fd: int, path: str, flags: int, resolve: int) -> int:
    """openat2(2) beneath `dir_fd`, never through a magic link; `resolve` adds RESOLVE_* flags."""
    how = _hows.get((flags, resolve))
    if how is None:
        how = _hows[(flags, resolve)] = _OpenHow(flags, 0, _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS | resolve)
    fd: int = _syscall()(_SYS_OPENAT2, dir_fd, os.fsencode(path), ctypes.addressof(how), ctypes.sizeof(how))
    if fd < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), path)
    return fd


def _probe_openat2() -> bool:
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "aarch64"):
        return False
    try:
        root = os.open("/", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        os.close(_openat2(root, ".", os.O_PATH | os.O_CLOEXEC, 0))
        return True
    except OSError:  # ENOSYS (an older kernel), EPERM (a seccomp filter): walk instead
        return False
    finally:
        os.close(root)


@functools.lru_cache(maxsize=4)
def _prefixes(directories: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(d.rstrip("/") + "/" for d in directories)


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


class Root:
    """A directory beneath which files are read (an open ``O_PATH`` descriptor of it, so one root serves many
    reads, as a search does). Use as a context manager, or call :meth:`close`."""

    def __init__(self, directory: Path | str, *, deny: DenyCheck | None = None) -> None:
        self.real = os.path.realpath(directory)
        self.lexical = os.path.normpath(os.path.abspath(directory))
        self.deny = deny
        self._verdicts: dict[str, str | None] = {}
        self._fd = os.open(self.real, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)

    def __enter__(self) -> Root:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def holds(self, path: str) -> str | None:
        """`path` (absolute) relative to this root, or None when it is not beneath it by its spelling."""
        located = self._locate(path)
        return None if located is None else located[0]

    def _locate(self, path: str) -> tuple[str, str] | None:
        """(`path` relative to the root, the same beneath the real root), or None when it is not beneath it."""
        normal = os.path.normpath(path)
        if not os.path.isabs(normal):
            normal = os.path.normpath(os.path.join(self.real, normal))
        for base in (self.real, self.lexical):
            if _within(normal, base):
                relative = normal[len(base):].lstrip("/") or "."
                return relative, normal if base is self.real else os.path.join(self.real, relative)
        return None

    def read(self, path: str | os.PathLike[str], *, max_bytes: int) -> FileRead:
        """The bytes of the regular file at `path` (absolute, or relative to the root), at most `max_bytes`;
        raises :class:`ReadRefused`."""
        asked = os.fspath(path)
        if not _on_loop():
            return self._read(asked, max_bytes)
        twin = copy.copy(self)  # its own descriptor: the worker may outlive this call (and a close of self)
        twin._fd = os.dup(self._fd)
        twin._verdicts = {}

        def work() -> FileRead:
            with twin:
                return twin._read(asked, max_bytes)

        return _off_loop(asked, work)

    def _read(self, asked: str, max_bytes: int) -> FileRead:
        located = self._locate(asked)
        if located is None:
            raise ReadRefused("outside", asked, f"{asked} is outside {self.lexical}, so it was not read: only files "
                              "beneath it may be read. Use a path inside it.")
        relative, spelt = located
        if not os.path.isabs(asked):
            relative = asked  # as given: a '..' in it is for the kernel (or the walk) to judge, not normpath
        self._check_never(asked, spelt)  # early: a device is not even opened
        fd, direct = self._open(asked, relative)
        try:
            # A lookup that followed no symlink and no '..' opened exactly the path as spelt beneath the real root;
            # any other asks the kernel where the descriptor leads.
            real = spelt if direct else _real_path(fd, asked)
            if not _within(real, self.real):  # cannot happen after a confined lookup; never trusted anyway
                raise ReadRefused("outside", asked, f"{asked} leads outside {self.lexical} (to {real}), so it was "
                                  "not read. Use a file whose real location is inside it.")
            self._check_never(asked, real)
            self._check_denied(asked, real)
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise ReadRefused("not_regular", asked, f"{asked} is not a regular file (a directory, device, FIFO "
                                  "or socket), so it was not read: only regular files are read.")
            return FileRead(_read_capped(fd, asked, info.st_size, max_bytes), real)
        finally:
            os.close(fd)

    @staticmethod
    def _check_never(asked: str, real: str) -> None:
        if not real.startswith(_prefixes(NEVER_READ)) and real not in NEVER_READ:
            return
        never = next(n for n in NEVER_READ if _within(real, n))
        raise ReadRefused("denied", asked, f"{asked} is in {never} (process, kernel and device state, never a "
                          "project's file), so it was not read.", entry=never)

    def denied(self, real: str) -> str | None:
        """The deny-read entry covering the real path `real` (None: not denied), remembered for this root, so
        a caller that checks a path before reading it (a search counting what it skips) pays once."""
        if self.deny is None:
            return None
        if real not in self._verdicts:
            entry = self.deny.entry_for(real, resolved=True)
            self._verdicts[real] = None if entry is None else str(entry)
        return self._verdicts[real]

    def _check_denied(self, asked: str, real: str) -> None:
        if (entry := self.denied(real)) is not None:
            raise ReadRefused("denied", asked, f"{asked} is on the deny-read list ({entry}: credentials and "
                              "phoenix-lsp's own data), so it was not read: what is read may go to the model "
                              "provider.", entry=str(entry))

    def _open(self, asked: str, relative: str) -> tuple[int, bool]:
        """The descriptor, and whether the lookup was direct (it followed no symlink)."""
        try:
            if mechanism() == "openat2":
                # Most paths have no symlink: then where the file is needs no second question. Without symlinks
                # a '..' goes where its spelling says, so the path as normalised is the path opened.
                try:
                    return _openat2(self._fd, relative, _OPEN_FLAGS, _RESOLVE_NO_SYMLINKS), True
                except OSError as exc:
                    if exc.errno != errno.ELOOP:  # ELOOP: a symlink on the way; follow it beneath the root
                        raise
                tries = 0
                while True:
                    try:
                        return _openat2(self._fd, relative, _OPEN_FLAGS, 0), False
                    except BlockingIOError:  # EAGAIN: a rename raced the lookup; the kernel asks to try again
                        tries += 1
                        if tries == _LOOKUP_TRIES:
                            raise
            return _walk(self._fd, relative), False
        except OSError as exc:
            raise _refusal(exc, asked, self.lexical) from None


def _refusal(exc: OSError, asked: str, root: str) -> ReadRefused:
    code = exc.errno
    if code == errno.EXDEV:
        return ReadRefused("outside", asked, f"{asked} leads outside {root} (through a symlink or '..'), so it was "
                           "not read: only files beneath it may be read. Use a path whose real location is inside "
                           "it.")
    if code == errno.ELOOP:
        return ReadRefused("loop", asked, f"{asked} goes through a symlink loop or a /proc link, so it was not "
                           "read. Fix or remove the link, or use another path.")
    if code in (errno.ENOENT, errno.ENOTDIR):
        return ReadRefused("missing", asked, f"{asked} does not exist, so it was not read. Check the path.")
    if code in (errno.ENXIO, errno.EISDIR):
        return ReadRefused("not_regular", asked, f"{asked} is not a regular file, so it was not read: only regular "
                           "files are read.")
    cause = exc.strerror or str(exc)
    return ReadRefused("unreadable", asked, f"{asked} could not be read ({cause}). Check its permissions.",
                       cause=cause)


def _walk(root_fd: int, relative: str) -> int:
    """Open `relative` beneath `root_fd` one component at a time, never following a symlink out: the
    fallback for kernels without ``openat2``. Raises OSError (EXDEV when the path leads out)."""
    parts = [p for p in relative.split("/") if p not in ("", ".")]
    stack = [os.dup(root_fd)]  # the directories walked through; stack[-1] is the current one
    links = 0
    try:
        while parts:
            name = parts.pop(0)
            if name == "..":
                if len(stack) == 1:
                    raise OSError(errno.EXDEV, "leads above the root", relative)
                os.close(stack.pop())
                continue
            last = not parts
            flags = (_OPEN_FLAGS if last else os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC) | os.O_NOFOLLOW
            try:
                fd = os.open(name, flags, dir_fd=stack[-1])
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                try:  # a symlink (O_NOFOLLOW refused it): where does it lead?
                    target = os.readlink(name, dir_fd=stack[-1])
                except OSError:
                    raise exc from None  # not a symlink: a file where a directory was expected
                links += 1
                if links > _MAX_LINKS:
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), relative) from None
                if target.startswith("/"):
                    raise OSError(errno.EXDEV, "an absolute symlink leads out", relative) from None
                parts[:0] = [p for p in target.split("/") if p not in ("", ".")]
                continue
            if last:
                return fd
            stack.append(fd)
        return os.open(".", _OPEN_FLAGS, dir_fd=stack[-1])  # the root itself (or where '..' led)
    finally:
        for fd in stack:
            os.close(fd)


def _real_path(fd: int, asked: str) -> str:
    try:
        real = os.readlink(f"/proc/self/fd/{fd}")
    except OSError as exc:
        raise ReadRefused("unreadable", asked, f"{asked} was not read: where it really is cannot be told "
                          f"({exc.strerror}; is /proc mounted?).") from None
    return real.removesuffix(" (deleted)")


def _read_capped(fd: int, asked: str, size_hint: int, max_bytes: int) -> bytes:
    """Read to the end, counting the bytes read (not trusting ``st_size``), refusing past `max_bytes`."""
    chunks: list[bytes] = []
    total = 0
    want = min(max(size_hint, 0), max_bytes) + 1  # one more than expected, so the end is seen at once
    while True:
        try:
            chunk = os.read(fd, want)
        except OSError as exc:
            cause = exc.strerror or str(exc)
            raise ReadRefused("unreadable", asked, f"{asked} could not be read ({cause}).", cause=cause) from None
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        if total > max_bytes:
            raise ReadRefused("too_large", asked, f"{asked} has more than {max_bytes:,} bytes, the most read here, "
                              "so it was not read.", limit=max_bytes)
        want = min(1 << 16, max_bytes + 1 - total)
    return b"".join(chunks)


def _on_loop() -> bool:
    return asyncio._get_running_loop() is not None  # the running loop of this thread, without raising


_workers: concurrent.futures.ThreadPoolExecutor | None = None


def _off_loop(asked: str, work: Callable[[], FileRead]) -> FileRead:
    """Run `work` in a worker thread, waiting for it at most LOOP_WAIT_S (the caller is on the event loop)."""
    global _workers
    if _workers is None:
        _workers = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="confined-read")
    future = _workers.submit(work)
    try:
        return future.result(timeout=LOOP_WAIT_S)
    except concurrent.futures.TimeoutError:
        raise ReadRefused("unreadable", asked, f"{asked} was not read: reading it took longer than {LOOP_WAIT_S:g} s "
                          "(a slow or hung file system?). Try again, or check the disk.",
                          cause=f"it took longer than {LOOP_WAIT_S:g} s") from None


def read(path: str | os.PathLike[str], roots: Sequence[Path | str], *, max_bytes: int,
         deny: DenyCheck | None = None) -> FileRead:
    """Read the regular file at the absolute `path` beneath the first of `roots` that holds it (by spelling);
    raises :class:`ReadRefused` (``outside`` when no root holds it)."""
    asked = os.fspath(path)
    if _on_loop():
        return _off_loop(asked, lambda: _read_beneath(asked, roots, max_bytes, deny))
    return _read_beneath(asked, roots, max_bytes, deny)


def _read_beneath(asked: str, roots: Sequence[Path | str], max_bytes: int, deny: DenyCheck | None) -> FileRead:
    normal = os.path.normpath(asked)
    for directory in roots:
        if not any(_within(normal, base) for base in (os.path.normpath(os.path.abspath(directory)),
                                                       os.path.realpath(directory))):
            continue
        try:
            root = Root(directory, deny=deny)
        except OSError as exc:  # the root itself is gone or no directory: nothing beneath it can be read
            raise _refusal(exc, asked, str(directory)) from None
        with root:
            return root._read(asked, max_bytes)
    shown = ", ".join(str(r) for r in roots) or "no directory"
    raise ReadRefused("outside", asked, f"{asked} is outside {shown}, so it was not read: only files beneath it "
                      "may be read. Use a path inside it.")
