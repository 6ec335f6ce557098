"""What the launcher's watch loop measures: the processes of its tree (a walk of /proc), the threads alive
on the machine (the cheap test before that walk) and the disk use of the command's scratch directory."""

from __future__ import annotations

import contextlib
import os
import stat

from .options import Options

_QUOTA_MAX_ENTRIES = 1_000_000


def descendants(self_pid: int) -> list[int]:
    parent_of: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            parent_of[int(name)] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
    children: dict[int, list[int]] = {}
    for pid, ppid in parent_of.items():
        children.setdefault(ppid, []).append(pid)
    out: list[int] = []
    todo = [self_pid]
    while todo:
        for pid in children.get(todo.pop(), []):
            if pid != self_pid:
                out.append(pid)
                todo.append(pid)
    return out


def machine_threads() -> int:
    """Threads alive on the machine (one read of /proc/loadavg): the cheap test before a full walk."""
    try:
        with open("/proc/loadavg") as f:
            return int(f.read().split()[3].split("/")[1])
    except (OSError, IndexError, ValueError):
        return -1


def _tree_bytes(root: str) -> int:
    """Bytes allocated under `root`, walked without recursion and never through a symlink; -1 when the
    tree has more than _QUOTA_MAX_ENTRIES entries (counted as over the quota)."""
    total = entries = 0
    stack = [root]
    while stack:
        directory = stack.pop()
        try:
            it = os.scandir(directory)
        except OSError:
            continue
        with it:
            for entry in it:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                total += st.st_blocks * 512
                entries += 1
                if entries > _QUOTA_MAX_ENTRIES:
                    return -1
                if stat.S_ISDIR(st.st_mode):
                    stack.append(entry.path)
    return total


def disk_usage(o: Options) -> int:
    """The scratch directory plus our stdout when it is a regular file (a background job's log)."""
    used = _tree_bytes(o.quota_dir)
    if used < 0:
        return -1
    with contextlib.suppress(OSError):
        st = os.fstat(1)
        if stat.S_ISREG(st.st_mode):
            used += st.st_blocks * 512
    return used
