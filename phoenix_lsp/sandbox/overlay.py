"""Capturing an Unrestricted command's changes to the workspace in an overlay (REQ-BASH-028): whether this
system can, where the layer lives, and the launcher options that mount it.

The helper (``helper.c``'s mount_namespace(), ``-O/-U/-W``) mounts ``overlay`` on the workspace folder itself,
the real folder below and a layer of the server's above, in the same namespace step as the private /tmp
(REQ-BASH-027), so that the command, its children and its working directory see the merged folder and the
real folder is not touched. What the layer holds is read by ``phoenix_lsp.tools.shell_changes``.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .private_tmp import NAMESPACE_PROBE
from .scratch import remove_later

#: the largest layer a command may write (bytes allocated in the upper directory); past it the launcher kills
#: the command (its disk quota, `killed disk-quota`) and the scan refuses the layer
DEFAULT_LAYER_CAP = 2 * 1024 * 1024 * 1024
#: the file in a layer's directory the server holds an exclusive flock on for the layer's whole life (until it
#: is removed): a sweep (layer_sweep.py) removes only layers whose hold it can take, i.e. no live process holds
HOLD_NAME = "held"
#: the clock file times are stamped from (Linux's CLOCK_REALTIME_COARSE; Python names it from 3.13 on)
_CLOCK_REALTIME_COARSE = 5

#: what a probe process does to find out whether an overlay can be mounted here (helper.c's mount_namespace())
_OVERLAY_PROBE = NAMESPACE_PROBE + """
base = sys.argv[1]
lower, upper, work = (os.path.join(base, n) for n in ("lower", "upper", "work"))
data = f"lowerdir={lower},upperdir={upper},workdir={work},userxattr,volatile".encode()
if libc.mount(b"overlay", lower.encode(), b"overlay", 0, data) != 0:
    sys.exit("mount overlay (userxattr, volatile): " + os.strerror(ctypes.get_errno()))
os.unlink(os.path.join(lower, "probe"))
if os.path.exists(os.path.join(lower, "probe")):
    sys.exit("the overlay did not hide a deleted file")
"""


@functools.cache
def overlay_support(base: Path | None = None) -> str | None:
    """None when a command's changes can be captured in an overlay here, else why not (for `doctor` and the
    chat's one-time note). Tried once per process, in a throw-away process, with a layer in `base` (the
    server's data directory) or the system's temporary directory."""
    if platform.system() != "Linux":
        return f"OverlayFS is a Linux feature and this is {platform.system()}"
    release = platform.release().split(".")
    try:
        major, minor = int(release[0]), int(release[1].split("-")[0])
    except (IndexError, ValueError):
        major, minor = 0, 0
    if (major, minor) < (5, 11):
        return (f"Linux {platform.release()} cannot mount an overlay in a user namespace (5.11 or later can, "
                "with the userxattr option)")
    if base is not None:
        base.mkdir(parents=True, exist_ok=True, mode=0o700)
    with tempfile.TemporaryDirectory(prefix="phoenix-overlay-probe-", dir=base) as tmp:
        for name in ("lower", "upper", "work"):
            os.mkdir(os.path.join(tmp, name))
        Path(tmp, "lower", "probe").write_bytes(b"")
        try:
            done = subprocess.run([sys.executable, "-I", "-S", "-c", _OVERLAY_PROBE, tmp], capture_output=True,
                                  text=True, timeout=10, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            return f"the overlay probe could not run ({exc})"
        if not Path(tmp, "lower", "probe").exists():
            return "the overlay probe changed the real folder: the overlay is not to be trusted here"
    if done.returncode == 0:
        return None
    why = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1][:200]
    return f"this system does not let the server mount an overlay in a namespace of its own ({why})"


@dataclass
class _Start:
    ns: int | None = None


@dataclass(frozen=True)
class Layer:
    """The upper and work directories of one captured command (or of a turn's commands, stacked later).
    `started_ns` is the wall clock (coarse, as file times are) the command started in: a file of the real folder
    whose status changed since was changed by someone else (the command cannot write it)."""

    folder: Path  # the workspace folder, as the command sees it (absolute, resolved)
    root: Path  # the layer's own directory: upper/, work/ and, after an accept, before/
    cap_bytes: int
    #: the coarse clock's reading when the layer was made: its command starts in a later tick (the launcher's -w)
    called_ns: int
    same_fs: bool  # the layer is on the folder's file system: accepting moves files with rename(2)
    _start: _Start = field(default_factory=_Start, compare=False, repr=False)

    @property
    def started_ns(self) -> int:
        """The first file time that counts as changed while the command ran: the launcher's reading of the coarse
        clock just before it exec'd the command (mark_started), a later tick than `called_ns`. Until a launcher
        reported one (none ran, or it failed before exec), the tick after `called_ns` at the latest: every
        change from `called_ns`'s reading on counts, so a change in that very tick just before counts too (the safe
        side)."""
        start = self._start.ns
        return start if start is not None else self.called_ns + 1

    def mark_started(self, clock_ns: int) -> None:
        """Its command started after the coarse clock read `clock_ns` (the launcher's `clock` line). The first
        report stands: a later command over the same layer does not move its start."""
        if self._start.ns is None:
            self._start.ns = clock_ns

    @property
    def upper(self) -> Path:
        return self.root / "upper"

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def before(self) -> Path:
        return self.root / "before"


#: the hold of each layer this process made and has not removed yet, by the layer's directory (REQ-BASH-042): the
#: descriptor of its hold file, flocked exclusive; let go once, by release()
_holds: dict[Path, int] = {}
_holds_lock = threading.Lock()


def layers_dir(folder: Path, data_dir: Path) -> Path:
    """Where a folder's layers are made: `<data_dir>/layers` when that is on the folder's file system (an
    accept is then a rename), else a hidden `.phoenix-layers` beside the folder when its parent is writable
    and on the same file system, else `<data_dir>/layers` all the same (an accept then copies)."""
    preferred = data_dir / "layers"
    preferred.mkdir(parents=True, exist_ok=True, mode=0o700)
    device = folder.stat().st_dev
    if preferred.stat().st_dev == device:
        return preferred
    sibling = folder.parent / ".phoenix-layers"
    try:
        sibling.mkdir(exist_ok=True, mode=0o700)
        if sibling.stat().st_dev == device and not sibling.is_symlink():
            return sibling
    except OSError:
        pass
    return preferred


def make_layer(folder: Path, data_dir: Path, cap_bytes: int = DEFAULT_LAYER_CAP) -> Layer:
    """A fresh, empty layer for `folder` (made 0700: only the server reads what the command wrote). Its command
    starts in a later tick of the coarse clock than the call's (overlay_args' -w): the launcher waits for that tick
    (half a tick on average, 2 ms at 250 Hz) last before its exec, so that the wait overlaps the layer's making, the
    launcher's start and the mount instead of adding to them."""
    called = time.clock_gettime_ns(_CLOCK_REALTIME_COARSE)
    folder = folder.resolve()
    parent = layers_dir(folder, data_dir)
    root = parent / uuid.uuid4().hex
    with making(parent, fcntl.LOCK_SH):  # a sweep waits until the layer is held
        root.mkdir(mode=0o700)
        hold = os.open(root / HOLD_NAME, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        fcntl.flock(hold, fcntl.LOCK_EX)
    try:
        (root / "upper").mkdir(mode=0o755)
        (root / "work").mkdir(mode=0o700)
        same_fs = root.stat().st_dev == folder.stat().st_dev
    except BaseException:
        os.close(hold)
        raise
    with _holds_lock:
        _holds[root] = hold
    return Layer(folder=folder, root=root, cap_bytes=cap_bytes, called_ns=called, same_fs=same_fs)


@contextlib.contextmanager
def making(parent: Path, how: int) -> Iterator[int]:
    """The layers directory `parent`'s making lock, a flock on the directory itself, held `how` (shared: a layer is
    being made; exclusive: a sweep reads which layers are held, so it never sees a layer made but not yet held).
    Yields the directory's descriptor (opened without following a symlink)."""
    top = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        fcntl.flock(top, how)
        yield top
    finally:
        os.close(top)


def release(layer: Layer) -> None:
    """Let go of the layer's hold (once it is removed): a sweep may take what is left of it."""
    with _holds_lock:
        hold = _holds.pop(layer.root, None)
    if hold is not None:
        os.close(hold)


def overlay_args(layer: Layer) -> list[str]:
    """The launcher options that mount `layer` over its folder, the disk quota that bounds it, and the clock
    reading its command must start after (-w; the launcher reports the tick it started in, `mark_started`).

    Why a later tick (REQ-BASH-031): every file changed before the layer was made has a time at or below `called_ns`
    (a time stamped from the fine clock, multigrain timestamps, is below the next tick too), every file changed
    after the command started has one at or above the reported tick. Starting in the same tick would count a file
    written just before the command (an editor's save, a test's set-up) as changed meanwhile."""
    return ["-O", str(layer.folder), "-U", str(layer.upper), "-W", str(layer.work),
            "-Q", f"{layer.cap_bytes}:{layer.upper}", "-w", str(layer.called_ns)]


def discard(layer: Layer, wait: bool = False) -> None:
    """Throws the layer away: the real folder stays as it was. The layer is renamed out of the way at once and
    removed by the sandbox's janitor thread (scratch.remove_later; removing a layer's directories cost ~10 ms of
    each command on a loaded disk), or here with `wait`. The overlay's work directory holds directories of mode
    000 that a removal needs opened first (remove_tree and _remove_layer open them so)."""
    root = layer.root
    if not wait:
        trash = root.with_name(f".discarded-{root.name}")
        try:
            os.rename(root, trash)
        except OSError:
            trash = root
        remove_later(trash, functools.partial(release, layer))
        return
    try:
        _remove_layer(root)
    finally:
        release(layer)


def _remove_layer(root: Path) -> None:
    for path in (root / "work" / "work", root / "work" / "incompat", root / "work" / "incompat" / "volatile"):
        if path.is_dir() and not path.is_symlink():
            os.chmod(path, 0o700)
    shutil.rmtree(root, ignore_errors=True)
