"""Waiting for things outside the test process: processes that must die, and the few facts no event reports.

- :func:`exited` / :func:`wait_exited` wait for processes to end on their pidfds, which the kernel makes
  readable the moment a process exits: an explicit event, no sleeping.
- :func:`eventually` is the one place that re-checks a condition at an interval, for facts that nothing
  announces: a process appearing in ``/proc`` (a sandboxed command can tell no one it started) or a file that a
  detached process writes. Every use says which fact it waits for; nothing else in the tests polls.
- :func:`watching` samples a witness while something runs, for what must *not* happen and leaves no trace
  to look at afterwards (a connection that is accepted and dropped, a tracer that attaches and detaches).

Waits on what the code under test reports (events, notifications, requests it records) use the waiters of
the harnesses instead (``Session.wait_until``, ``RecordingSink.wait_until``, ``FakeAnthropic.await_for``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

#: How often :func:`eventually` re-checks. Short: the facts it waits for appear within milliseconds.
RECHECK_S = 0.01


def _pidfds(pids: list[int]) -> dict[int, int]:
    """pid -> pidfd for each process that still exists (a gone process has no pidfd to wait on)."""
    fds: dict[int, int] = {}
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            fds[pid] = os.pidfd_open(pid)
    return fds


def wait_exited(pids: list[int], timeout: float) -> list[int]:
    """Block until every process in ``pids`` has exited (or ``timeout``); returns those still running."""
    fds = _pidfds(pids)
    try:
        deadline = time.monotonic() + timeout
        pending = dict(fds)
        while pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            ready, _, _ = select.select(list(pending.values()), [], [], remaining)
            for fd in ready:
                pending = {p: f for p, f in pending.items() if f != fd}
        return sorted(pending)
    finally:
        for fd in fds.values():
            os.close(fd)


async def exited(pids: list[int], timeout: float) -> list[int]:
    """:func:`wait_exited` on the event loop (each pidfd is a reader); returns the pids still running."""
    loop = asyncio.get_running_loop()
    fds = _pidfds(pids)
    done: dict[int, asyncio.Future[None]] = {}
    try:
        for pid, fd in fds.items():
            future: asyncio.Future[None] = loop.create_future()
            loop.add_reader(fd, lambda f=future: f.done() or f.set_result(None))
            done[pid] = future
        if done:
            await asyncio.wait(list(done.values()), timeout=timeout)
        return sorted(pid for pid, future in done.items() if not future.done())
    finally:
        for fd in fds.values():
            loop.remove_reader(fd)
            os.close(fd)


async def eventually(condition: Callable[[], T], what: str, timeout: float = 10.0) -> T:
    """``condition()``'s first truthy value; for facts that no event reports (see the module's doc)."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what}")
        await asyncio.sleep(RECHECK_S)
    return value


async def watching(awaitable: Awaitable[T], check: Callable[[], None], interval: float = 0.005) -> T:
    """Await ``awaitable`` while calling ``check()`` (an outside witness) every ``interval`` s, and once more
    after it is done; returns its result. The wait between checks ends early when ``awaitable`` finishes."""
    task = asyncio.ensure_future(awaitable)
    while not task.done():
        check()
        await asyncio.wait({task}, timeout=interval)
    check()
    return task.result()
