"""The resource limits of a restricted command, and the ``-r`` rlimit options that give them to the helper.

What an rlimit cannot count (the whole tree's tasks for root, shared memory) the cgroups of ``cgroups.py``
count, when this machine lets the server make them.
"""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Resource limits of a restricted command (per process, except `max_processes`). None = unlimited.

    Defaults leave room for real builds and test runs while stopping memory hogs, CPU burners that
    outlive the timeout, runaway files in the scratch directory and fork bombs.
    """

    address_space: int | None = 8 << 30  # bytes of virtual memory per process
    cpu_seconds: int | None = 1800  # CPU time per process
    max_processes: int | None = 1024  # live tasks (processes and threads) in the command's tree
    file_size: int | None = 1 << 30  # bytes per written file
    open_files: int | None = 1024  # descriptors per process
    memory: int | None = 4 << 30  # bytes for the whole tree, shared memory included (memory cgroup)
    disk: int | None = 1 << 30  # bytes in the scratch directory plus a background job's output file


_task_count_cache: tuple[float, int, int] = (0.0, -1, 0)


def _user_task_count(uid: int) -> int:
    """Tasks (threads included) currently owned by `uid`: RLIMIT_NPROC counts them all, per user, so the
    limit handed to the command is this count plus the allowance. Cached for two seconds."""
    global _task_count_cache
    now = time.monotonic()
    stamp, cached_uid, count = _task_count_cache
    if cached_uid == uid and now - stamp < 2.0:
        return count
    count = 0
    with os.scandir("/proc") as it:
        for entry in it:
            if not entry.name.isdigit():
                continue
            try:
                if entry.stat().st_uid != uid:
                    continue
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
                count += int(fields[17])  # num_threads
            except (OSError, IndexError, ValueError):
                continue
    _task_count_cache = (now, uid, count)
    return count


def rlimit_args(limits: Limits) -> list[str]:
    """`-r resource:soft:hard` arguments for the helper. Soft = hard (except CPU, see below) so the command
    cannot raise them."""
    pairs: list[tuple[int, int | None]] = [
        (resource.RLIMIT_AS, limits.address_space),
        (resource.RLIMIT_CPU, limits.cpu_seconds),
        (resource.RLIMIT_FSIZE, limits.file_size),
        (resource.RLIMIT_NOFILE, limits.open_files),
    ]
    uid = os.getuid()
    if limits.max_processes is not None and uid != 0:
        # The kernel exempts uid 0 from RLIMIT_NPROC; for root a pids cgroup (when one can be made) or else
        # the helper's process-count watchdog is the fork-bomb stop (both also apply to everyone else).
        pairs.append((resource.RLIMIT_NPROC, _user_task_count(uid) + limits.max_processes))
    args: list[str] = []
    for res, value in pairs:
        if value is None:
            continue
        _soft, hard = resource.getrlimit(res)
        # Never above the current hard limit (an unprivileged process cannot raise it).
        new = value if hard == resource.RLIM_INFINITY else min(value, hard)
        new_hard = new
        if res == resource.RLIMIT_CPU:
            # Soft limit -> SIGXCPU (a clear "CPU time limit" report); the hard limit 2 s later -> SIGKILL
            # for a program that ignores SIGXCPU.
            new_hard = new + 2 if hard == resource.RLIM_INFINITY else min(new + 2, hard)
        args += ["-r", f"{res}:{new}:{new_hard}"]
    return args
