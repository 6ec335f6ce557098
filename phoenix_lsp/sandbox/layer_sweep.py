"""Leftover layers swept (issue 36, REQ-BASH-042): a server killed while a command ran leaves its layer behind
(``<data dir>/layers/<hex>``, ``.phoenix-layers/<hex>`` beside a folder, ``.discarded-<hex>`` waiting for a
janitor that died with it). A live layer is held: its server keeps an exclusive flock on the layer's ``held``
file for the layer's whole life (``overlay.make_layer`` takes it, ``overlay.release`` lets it go once the layer
is removed). The kernel drops a flock when its holder dies, whatever pid comes next, so a layer whose hold can
be taken belongs to no live server and is removed.

The sweep walks one level of one layers directory, through a descriptor opened without following a symlink:
an entry that is a symlink (or not a directory) is unlinked, never followed; a layer is removed by
``scratch.remove_tree`` (descriptor-relative, a symlink inside is unlinked, never followed). Entries the server
does not make (other names) are left alone. The before copies kept for an undo live in ``<data dir>/undo``,
which the sweep never walks: their own bound (``tools/shell_changes/kept.py``) removes them.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import re
import stat
import threading
from pathlib import Path

from .overlay import HOLD_NAME, making
from .scratch import remove_tree

log = logging.getLogger(__name__)

#: the names the server gives a layer (uuid4().hex) and a layer thrown away, waiting for removal
_LAYER_NAME = re.compile(r"(?:\.discarded-)?[0-9a-f]{32}")
_swept: set[Path] = set()
_swept_lock = threading.Lock()


def sweep(parent: Path) -> list[str]:
    """Remove the layers in the layers directory `parent` that no live process holds; returns their names.
    Waits while a layer is being made (a made layer is held before the making lock is let go)."""
    gone: list[str] = []
    taken: list[tuple[str, int]] = []  # layers whose hold this sweep took, with it: no other sweep takes them
    try:
        with making(parent, fcntl.LOCK_EX) as top:
            with os.scandir(top) as it:
                names = [e.name for e in it if _LAYER_NAME.fullmatch(e.name)]
            for name in names:
                hold = _take(top, name)
                if hold is None:
                    continue
                if hold < 0:  # a symlink or another kind of file under a layer's name: unlinked, not followed
                    with contextlib.suppress(OSError):
                        os.unlink(name, dir_fd=top)
                        gone.append(name)
                    continue
                taken.append((name, hold))
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            log.warning("the layers in %s could not be swept (%s)", parent, exc.strerror or type(exc).__name__)
    for name, hold in taken:
        try:
            if remove_tree(parent / name):
                gone.append(name)
        finally:
            os.close(hold)
    return gone


def _take(top: int, name: str) -> int | None:
    """The hold of the layer `name` in the directory `top`, taken (a descriptor to close once it is removed);
    -1 when the entry is no directory (a symlink planted there); None when a live process holds it."""
    try:
        st = os.stat(name, dir_fd=top, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if not stat.S_ISDIR(st.st_mode):
        return -1
    try:
        layer = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=top)
    except OSError:
        return -1
    try:
        try:
            held = os.stat(HOLD_NAME, dir_fd=layer, follow_symlinks=False)
        except FileNotFoundError:
            held = None
        if held is None or not stat.S_ISREG(held.st_mode):
            # no hold file (made before holds existed, or its maker died between the two steps, which the making
            # lock rules out for a live one) or a planted non-file: nobody holds it. A descriptor of the layer's
            # own directory stands for the hold, so that the caller closes something either way.
            return os.dup(layer)
        hold = os.open(HOLD_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=layer)
        try:
            fcntl.flock(hold, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(hold)
            return None
        return hold
    finally:
        os.close(layer)


def sweep_later(parent: Path) -> None:
    """Sweep the layers directory `parent` once per process, in a background thread (off the initialize path and
    off a command's start): at the server's start for its data directory, at a folder's first capture for the
    folder's layers directory."""
    with _swept_lock:
        if parent in _swept:
            return
        _swept.add(parent)
    if not parent.is_dir():
        return
    threading.Thread(target=_sweep_logged, args=(parent,), name="phoenix-layer-sweep", daemon=True).start()


def _sweep_logged(parent: Path) -> None:
    try:
        gone = sweep(parent)
    except Exception:  # a sweep that fails leaves leftovers, never the server in trouble
        log.exception("sweeping the leftover layers failed")
        return
    if gone:
        log.info("removed %d leftover layer(s) of servers that are gone", len(gone))
