"""The pids and memory cgroups of restricted commands: whether this machine lets the server make them (probed
once per process), which ones a launcher made, and emptying them (the server's backstop when a launcher died
without killing its tree).
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

CGROUP_PREFIX = "phoenix-"


def _own_cgroup(controller: str) -> Path | None:
    """The directory of this process's cgroup in a hierarchy that has `controller` (cgroup v1 with that
    controller, or v2 where the probe then checks the controller is enabled for children), or None."""
    try:
        memberships = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    v1_path = v2_path = None
    for line in memberships:
        _num, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            v1_path = path
        elif controllers == "":
            v2_path = path
    for line in mounts:
        left, _, right = line.partition(" - ")
        fields, rfields = left.split(), right.split()
        if len(fields) < 5 or len(rfields) < 3:
            continue
        root, point, fstype, options = fields[3], fields[4], rfields[0], rfields[2]
        member = v1_path if fstype == "cgroup" and controller in options.split(",") else \
            v2_path if fstype == "cgroup2" and v1_path is None else None
        if member is None:
            continue
        # /proc/self/cgroup names the cgroup from the hierarchy's root; the mount shows `root` of it.
        rel = os.path.relpath(member, root) if member.startswith(root) else None
        if rel is None or rel.startswith(".."):
            continue
        candidate = Path(point) / rel
        if candidate.is_dir():
            return candidate.resolve()
    return None


def cgroup_lock_note(mountinfo: str | None = None) -> str | None:
    """None when moving a process between cgroups never waits for an RCU grace period here (a cgroup hierarchy is
    mounted with favordynmods, which keeps the kernel's lock for it in its slow mode), else what `doctor` says:
    each Restricted command joins its cgroups, and after a pause that lock has gone back to its fast mode, so the
    join waits for a grace period (a median of 14 ms under load on a 2-core machine, against 0.3 ms back to back).
    `mountinfo`: the text of /proc/self/mountinfo (read when None)."""
    if mountinfo is None:
        try:
            mountinfo = Path("/proc/self/mountinfo").read_text()
        except OSError:
            return None
    points = []
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        fields, rfields = left.split(), right.split()
        if len(fields) < 5 or len(rfields) < 3 or rfields[0] not in ("cgroup", "cgroup2"):
            continue
        if "favordynmods" in rfields[2].split(","):
            return None
        # the pids hierarchy first (the command's first join), then cgroup v2, then any
        rank = 0 if "pids" in rfields[2].split(",") else 1 if rfields[0] == "cgroup2" else 2
        points.append((rank, fields[4]))
    if not points:
        return None
    point = min(points)[1]
    return ("each Restricted command's cgroup join waits for an RCU grace period after a pause (about 14 ms under "
            "load, 0.3 ms back to back): no cgroup hierarchy is mounted with favordynmods; as root, "
            f"`mount -o remount,favordynmods {point}` (Linux 6.1 or later) keeps the kernel's lock ready")


def _own_pids_cgroup() -> Path | None:
    return _own_cgroup("pids")


def _remove_stale_cgroups(parent: Path) -> None:
    """Empty `phoenix-<pid>` cgroups left by a launcher that was killed (rmdir refuses a non-empty one)."""
    try:
        entries = list(parent.iterdir())
    except OSError:
        return
    for entry in entries:
        pid = entry.name.removeprefix(CGROUP_PREFIX)
        if entry.name.startswith(CGROUP_PREFIX) and pid.isdigit() and not Path(f"/proc/{pid}").exists():
            with contextlib.suppress(OSError):
                entry.rmdir()


_pids_cgroup_lock = threading.Lock()


def pids_cgroup_parent() -> Path | None:
    """Where the launcher may create one pids cgroup per command, or None when it cannot.

    A pids cgroup makes the process limit a kernel rule (fork fails with EAGAIN at `pids.max`), also for
    root, whom RLIMIT_NPROC does not bind. Probed once per process (about 20 ms: the server does it in its
    warm-up thread): create a child cgroup, set pids.max, move a short shell into it; any failure means
    the watchdog alone guards the limit.
    """
    with _pids_cgroup_lock:  # one probe, even when the warm-up thread and a command ask at once
        return _probe_pids_cgroup()


def memory_cgroup_parent() -> Path | None:
    """Where the launcher may create one memory cgroup per command, or None when it cannot.

    A memory cgroup counts what RLIMIT_AS does not: shared memory (memfd, tmpfs pages) and the whole tree
    together. Probed once per process like the pids cgroup; without one, memfd_create is refused instead.
    """
    with _pids_cgroup_lock:
        return _probe_memory_cgroup()


def _probe_cgroup(parent: Path | None, limit_file: str, value: str, counter: str) -> Path | None:
    if parent is None or not os.access(parent, os.W_OK):
        return None
    _remove_stale_cgroups(parent)
    probe = parent / f"{CGROUP_PREFIX}{os.getpid()}-probe"
    try:
        probe.mkdir(mode=0o700)
    except OSError:
        return None
    try:
        (probe / limit_file).write_text(value)
        result = subprocess.run(["/bin/sh", "-c", f'echo 0 > "$1/cgroup.procs" && cat "$1/{counter}"', "sh",
                                 str(probe)], capture_output=True, timeout=10, check=False)
        works = result.returncode == 0 and result.stdout.strip() not in (b"", b"0")
    except (OSError, subprocess.SubprocessError):
        works = False
    for _ in range(100):
        try:
            probe.rmdir()
            break
        except OSError:
            time.sleep(0.005)
    return parent if works else None


@functools.cache
def _probe_pids_cgroup() -> Path | None:
    return _probe_cgroup(_own_pids_cgroup(), "pids.max", "8", "pids.current")


def _memory_files(parent: Path) -> tuple[str, str]:
    """(limit file, usage file) of the memory controller: cgroup v1 or v2 names."""
    if (parent / "memory.limit_in_bytes").exists() or (parent / "memory.usage_in_bytes").exists():
        return "memory.limit_in_bytes", "memory.usage_in_bytes"
    return "memory.max", "memory.current"


@functools.cache
def _probe_memory_cgroup() -> Path | None:
    parent = _own_cgroup("memory")
    if parent is None:
        return None
    if (parent / "cgroup.controllers").exists():  # v2: the memory controller must be on for children
        try:
            if "memory" not in (parent / "cgroup.subtree_control").read_text().split():
                return None
        except OSError:
            return None
    limit_file, usage_file = _memory_files(parent)
    return _probe_cgroup(parent, limit_file, str(64 << 20), usage_file)


def command_cgroups(launcher_pid: int) -> list[Path]:
    """The cgroups a launcher with this pid made for its command (pids, memory; one dir on cgroup v2)."""
    out: list[Path] = []
    for parent in (pids_cgroup_parent(), memory_cgroup_parent()):
        if parent is not None:
            path = parent / f"{CGROUP_PREFIX}{launcher_pid}"
            if path not in out:
                out.append(path)
    return out


def kill_command_cgroups(launcher_pid: int) -> int:
    """SIGKILL every process left in the command cgroups of launcher `launcher_pid`, then remove them.

    The server's backstop when the launcher itself was starved or killed: its tree must not outlive it.
    Returns how many processes could not be killed (0: the whole tree is gone)."""
    left = 0
    for path in command_cgroups(launcher_pid):
        procs = path / "cgroup.procs"
        for _ in range(200):
            try:
                pids = [int(p) for p in procs.read_text().split()]
            except (OSError, ValueError):
                break
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.001)
        with contextlib.suppress(OSError):
            left += len(procs.read_text().split())
        for _ in range(200):
            try:
                path.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.001)
    return left
