"""The command's process tree as the launcher (its subreaper) owns it: reaped as it exits, killed whole."""

from __future__ import annotations

import contextlib
import os
import signal
import time

from .cgroup import Cgroup
from .kernel import WALL
from .measure import descendants


class Tree:
    def __init__(self, child: int, cgroups: list[Cgroup]) -> None:
        self.child = child
        self.cgroups = cgroups
        self.status: int | None = None

    def reap(self) -> int:
        """Reap what has exited; -1 when no child is left at all."""
        count = 0
        while True:
            try:
                pid, st = os.waitpid(-1, os.WNOHANG | WALL)
            except ChildProcessError:
                return -1
            if pid == 0:
                return count
            count += 1
            if pid == self.child and self.status is None:
                self.status = st

    def kill_all(self, self_pid: int) -> None:
        if self.status is None:
            with contextlib.suppress(OSError):
                os.killpg(self.child, signal.SIGKILL)
        for cgroup in self.cgroups:
            cgroup.kill_all()
        while True:
            reaped = self.reap()
            if reaped < 0:
                return
            pids = descendants(self_pid)
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            if not pids and reaped == 0:
                try:
                    pid, st = os.waitpid(-1, WALL)
                except ChildProcessError:
                    return
                if pid == self.child and self.status is None:
                    self.status = st
            elif pids:
                time.sleep(0.0001)
