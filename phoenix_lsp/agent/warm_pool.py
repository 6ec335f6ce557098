"""Warm engine workers (REQ-AGENT-037): a worker started ahead of need, sandboxed and limited exactly as a cold
one would be for its unit (the same launcher, environment and ``Limits``), that has already imported
pydantic-monty and waits for ONE unit. Every worker still runs one unit and ends, so no state can pass from one
unit to another; only the start is paid earlier, off the node's path."""

from __future__ import annotations

import atexit
import logging
import threading
import time

from ..sandbox import spawn
from ..sandbox.limits import Limits
from .contracts import Budgets
from .worker_process import STARTUP_GRACE_S, WATCHDOG_GRACE_S, Worker, limits_for

log = logging.getLogger(__name__)

#: idle warm workers kept per set of limits, by default (a plan's nodes each take one, a moment apart, and a
#: replacement takes longer to start than that on a loaded machine: three cover the usual plan; about 33 MB each),
#: and how many sets of limits are kept warm
WARM_WORKERS = 3
MAX_KEYS = 2


class WarmPool:
    """Workers started ahead of need (REQ-AGENT-037), one server's: each sandboxed and limited exactly as a
    cold worker for the same limits, each handed out once and ended with its unit, so nothing of one unit,
    run or conversation reaches another. ``take`` gives an idle worker for these limits (or waits for one that
    is starting) and starts its replacement in the background; ``None`` means "start one cold". A worker that
    fails to become ready stops the warming of its limits (the cold start then says what is wrong).

    Thread-safe. Idle workers die with the server (the launcher's stdin is its lifeline) or at ``close``."""

    def __init__(self, size: int = WARM_WORKERS, startup_s: float = STARTUP_GRACE_S) -> None:
        self.size = size
        self._startup_s = startup_s
        self._cond = threading.Condition()
        self._idle: dict[tuple[bool, Limits], list[Worker]] = {}
        self._starting: dict[tuple[bool, Limits], int] = {}
        self._broken: set[tuple[bool, Limits]] = set()
        self._closed = False
        self._threads: list[threading.Thread] = []
        self.hits = 0  # units given a warm worker
        self.misses = 0  # units that found none (started cold)
        atexit.register(self.close)  # their scratch directories too, when the server ends without closing it

    def warm(self, restricted: bool, limits: Limits) -> None:
        """Start workers for these limits until `size` are idle or starting (in the background)."""
        key = (restricted, limits)
        stale: list[Worker] = []
        with self._cond:
            if self._closed or key in self._broken:
                return
            if key not in self._idle:  # limits of their own: only the last MAX_KEYS sets are kept warm
                self._idle[key] = []
                for old in list(self._idle)[:-MAX_KEYS]:
                    stale += self._idle.pop(old)
            wanted = self.size - len(self._idle.get(key, ())) - self._starting.get(key, 0)
            self._starting[key] = self._starting.get(key, 0) + max(0, wanted)
        for worker in stale:
            worker.end()
        for _ in range(max(0, wanted)):
            thread = threading.Thread(target=self._start, args=(key,), name="agent-warm-worker", daemon=True)
            with self._cond:
                self._threads = [t for t in self._threads if t.is_alive()] + [thread]
            thread.start()

    def warm_for(self, budgets: Budgets, restricted: bool = True) -> None:
        """Warm workers for units with these budgets (the budgets file's node defaults: most units)."""
        self.warm(restricted, limits_for(budgets))

    def take(self, restricted: bool, limits: Limits) -> Worker | None:
        """An idle warm worker for these limits, or one that is starting (waited for), else None."""
        key = (restricted, limits)
        worker: Worker | None = None
        unusable: list[Worker] = []
        with self._cond:
            while not self._closed:
                idle = self._idle.get(key, [])
                while idle and worker is None:
                    candidate = idle.pop(0)
                    if candidate.idle():  # its own process looked at: a worker dead is never handed out
                        worker = candidate
                    else:
                        unusable.append(candidate)
                if worker is not None or not self._starting.get(key):
                    break
                self._cond.wait(self._startup_s)
            if worker is None:
                self.misses += 1
            else:
                self.hits += 1
        for candidate in unusable:  # outside the lock: ending one waits for its launcher
            candidate.end()
        self.warm(restricted, limits)  # its replacement (or, after a miss, one for the next such unit)
        return worker

    def retire(self, worker: Worker) -> None:
        """End a worker whose unit is over (its answer read, or it failed) in the background: its tree is killed
        and its scratch directory removed off the unit's path (``close`` waits for it)."""
        thread = threading.Thread(target=worker.end, name="agent-worker-end", daemon=True)
        with self._cond:
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def wait_warm(self, budgets: Budgets, timeout_s: float, restricted: bool = True, count: int = 1) -> bool:
        """Wait until `count` workers for units with these budgets are idle (False: not in time)."""
        key = (restricted, limits_for(budgets))
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while len(self._idle.get(key, ())) < count:
                left = deadline - time.monotonic()
                if left <= 0 or self._closed or key in self._broken:
                    return False
                self._cond.wait(left)
            return True

    def idle_count(self) -> int:
        with self._cond:
            return sum(len(workers) for workers in self._idle.values())

    def close(self) -> None:
        """End every idle worker, and those still starting once they are up (waited for)."""
        atexit.unregister(self.close)
        with self._cond:
            self._closed = True
            workers = [w for ws in self._idle.values() for w in ws]
            self._idle.clear()
            threads = list(self._threads)
            self._cond.notify_all()
        for worker in workers:
            worker.end()
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(self._startup_s + WATCHDOG_GRACE_S)

    def _start(self, key: tuple[bool, Limits]) -> None:
        worker: Worker | None = None
        try:
            worker = Worker.start(key[0], key[1], None)
            ok = worker.ready(self._startup_s)
        except (OSError, spawn.SandboxUnavailable) as exc:
            log.warning("agent: a warm engine worker could not be started (%s); units start cold", exc)
            ok = False
        with self._cond:
            self._starting[key] -= 1
            keep = ok and not self._closed and worker is not None
            if keep and worker is not None:
                self._idle.setdefault(key, []).append(worker)
            elif not self._closed:
                self._broken.add(key)
            self._cond.notify_all()
        if not keep and worker is not None:
            if not ok:
                log.warning("agent: a warm engine worker did not become ready; units with its limits start cold")
            worker.end()
