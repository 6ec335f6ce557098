"""A private /tmp for a restricted command (REQ-BASH-027): whether this system allows one, and what it shows.

The helper (``helper.c``'s private_tmp(), ``-T``) makes it: a mount namespace of its own (or a user namespace
then a mount namespace) whose /tmp is empty but for the directories named here.
"""

from __future__ import annotations

import functools
import platform
import subprocess
import sys
from pathlib import Path

#: what a probe process does to find out whether a command can get a private /tmp (helper.c's private_tmp())
#: how a probe enters a mount namespace of its own as helper.c does (a user namespace too when it is not root),
#: with its mounts private; the probes of the private /tmp and of the overlay (overlay.py) go on from here
NAMESPACE_PROBE = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x00020000) != 0:
    uid, gid = os.geteuid(), os.getegid()
    if libc.unshare(0x10000000 | 0x00020000) != 0:
        sys.exit("unshare: " + os.strerror(ctypes.get_errno()))
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)
if libc.mount(None, b"/", None, 16384 | (1 << 18), None) != 0:
    sys.exit("mount --make-rprivate /: " + os.strerror(ctypes.get_errno()))
"""
_PRIVATE_TMP_PROBE = NAMESPACE_PROBE + """
if libc.mount(b"tmpfs", b"/tmp", b"tmpfs", 6, b"mode=1777,size=1m") != 0:
    sys.exit("mount tmpfs /tmp: " + os.strerror(ctypes.get_errno()))
"""


@functools.cache
def private_tmp() -> str | None:
    """None when a restricted command can get a private /tmp here (a mount namespace of its own, or a user
    namespace then a mount namespace), else why not. Tried once per process, in a throw-away process."""
    if platform.system() != "Linux":
        return f"mount namespaces are a Linux feature and this is {platform.system()}"
    try:
        done = subprocess.run([sys.executable, "-I", "-S", "-c", _PRIVATE_TMP_PROBE], capture_output=True,
                              text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"the probe could not run ({exc})"
    if done.returncode == 0:
        return None
    why = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1][:200]
    return f"this system does not let the server make a mount namespace ({why})"


def private_tmp_keep(scratch: Path, cwd: Path) -> list[str]:
    """The directories a private /tmp shows (helper -T): the scratch directory, the top folder under /tmp of a
    working directory that lies there (so that the workspace keeps its path; its other files and FIFOs stay in
    sight then, which is the price of a workspace in /tmp), and likewise of the server's own interpreter and
    package when they are installed there (a checkout or virtual environment in /tmp: the agent route's script
    engine runs that interpreter and imports that package inside the sandbox)."""
    keep = [str(scratch)]
    for top in (*_tmp_tops((_resolved(cwd),)), *_own_tmp_tops(sys.executable, sys.prefix)):
        if top not in keep:
            keep.append(top)
    return keep


@functools.cache
def _own_tmp_tops(executable: str, prefix: str) -> tuple[str, ...]:
    """The top folders under /tmp of the server's interpreter and package: they do not move while it runs,
    so they are resolved once per interpreter (four path resolutions were ~0.1 ms of every restricted spawn)."""
    return _tmp_tops((Path(executable), _resolved(Path(executable)), _resolved(Path(prefix)),
                      _resolved(Path(__file__).parents[2])))


def _tmp_tops(paths: tuple[Path | None, ...]) -> tuple[str, ...]:
    tops: list[str] = []
    for path in paths:
        parts = path.parts if path is not None else ()
        if len(parts) >= 3 and parts[:2] == ("/", "tmp") and str(Path(*parts[:3])) not in tops:
            tops.append(str(Path(*parts[:3])))
    return tuple(tops)


def _resolved(path: Path) -> Path | None:
    try:
        return path.resolve()
    except OSError:
        return None
