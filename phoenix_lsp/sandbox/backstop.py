"""The server's backstop (REQ-BASH-018, REQ-BASH-025): when a launcher was killed (or stopped, then killed)
before it could kill its command's tree, the server kills the command's process group and cgroups itself,
before reaping the launcher whose pid names them; whatever still holds the output pipe after that is killed
too.
"""

from __future__ import annotations

import contextlib
import os
import signal

from phoenix_lsp.sandbox import cgroups


def pipe_holders(pipe_inode: int, exclude: int) -> list[int]:
    """Processes (other than `exclude`, this server) that hold a descriptor on the pipe `pipe_inode`: what
    keeps a command's output open after its launcher is gone. Only this user's processes are visible
    unless we are root, which is exactly the set a command can have started."""
    link = f"pipe:[{pipe_inode}]"
    out: list[int] = []
    with contextlib.suppress(OSError), os.scandir("/proc") as it:
        for entry in it:
            if not entry.name.isdigit() or int(entry.name) == exclude:
                continue
            try:
                fds = os.listdir(f"/proc/{entry.name}/fd")
            except OSError:
                continue
            for fd in fds:
                try:
                    if os.readlink(f"/proc/{entry.name}/fd/{fd}") == link:
                        out.append(int(entry.name))
                        break
                except OSError:
                    continue
    return out


def kill_pipe_holders(pipe_inode: int) -> int:
    """SIGKILL every process that still holds the command's output pipe; how many were found."""
    holders = pipe_holders(pipe_inode, os.getpid())
    for pid in holders:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return len(holders)


def kill_leftovers(launcher_pid: int, command_pid: int | None) -> bool:
    """The server's backstop when the launcher died without killing the tree (it was SIGKILLed after not
    answering SIGTERM, e.g. starved of CPU, or killed by anyone): kill the command's process group and
    every process in its cgroups. True when nothing is left (always the case with a cgroup; without one,
    processes that left the process group cannot be found here and may survive: the caller also kills
    whatever still holds the output pipe). Called before the launcher is reaped, so its pid, which names
    the cgroups, cannot have been reused meanwhile."""
    if command_pid:
        with contextlib.suppress(OSError):
            os.killpg(command_pid, signal.SIGKILL)
    if not any(path.exists() for path in cgroups.command_cgroups(launcher_pid)):
        return False
    return cgroups.kill_command_cgroups(launcher_pid) == 0
