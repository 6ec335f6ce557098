"""The command's own cgroups, made by the launcher under the parents the server names (-g, -G)."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time


def _write(path: str, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


class Cgroup:
    """One of the command's own cgroups: pids (the kernel refuses a fork past pids.max, for root too) or
    memory (the whole tree's memory, shared memory included)."""

    def __init__(self, parent: str, self_pid: int, max_procs: int = 0, memory: int = 0) -> None:
        self.path = os.path.join(parent, f"phoenix-{self_pid}")
        with contextlib.suppress(FileExistsError):
            os.mkdir(self.path, 0o700)
        try:
            if max_procs:
                _write(os.path.join(self.path, "pids.max"), str(max_procs))
            if memory:
                self.set_memory(memory)
        except OSError:
            self.remove()
            raise

    def set_memory(self, memory: int) -> None:
        """The memory limit, with swap limited too so shared memory cannot escape by being swapped out."""
        v1 = os.path.join(self.path, "memory.limit_in_bytes")
        if os.path.exists(v1):
            _write(v1, str(memory))
            memsw = os.path.join(self.path, "memory.memsw.limit_in_bytes")
            if os.path.exists(memsw):
                _write(memsw, str(memory))
            return
        _write(os.path.join(self.path, "memory.max"), str(memory))
        swap = os.path.join(self.path, "memory.swap.max")
        if os.path.exists(swap):
            with contextlib.suppress(OSError):
                _write(swap, "0")

    def memory_limit_hits(self) -> int:
        failcnt = self._read("memory.failcnt").strip()
        if failcnt.isdigit():
            memsw = self._read("memory.memsw.failcnt").strip()
            return int(failcnt) + (int(memsw) if memsw.isdigit() else 0)
        for line in self._read("memory.events").splitlines():
            key, _, value = line.partition(" ")
            if key == "max" and value.strip().isdigit():
                return int(value)
        return 0

    def _read(self, name: str) -> str:
        try:
            with open(os.path.join(self.path, name)) as f:
                return f.read()
        except OSError:
            return ""

    def limit_hit(self) -> bool:
        """True once the kernel has refused a fork here ("max N" in pids.events, N > 0)."""
        for line in self._read("pids.events").splitlines():
            key, _, value = line.partition(" ")
            if key == "max" and value.strip().isdigit() and int(value) > 0:
                return True
        return False

    def kill_all(self) -> None:
        for _ in range(64):
            pids = [int(p) for p in self._read("cgroup.procs").split() if p.isdigit()]
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)

    def remove(self) -> None:
        # The last task leaves the cgroup a moment after it is reaped: retry briefly.
        for _ in range(200):
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError as exc:
                if exc.errno != errno.EBUSY:
                    return
                time.sleep(0.001)
