"""The engine worker's channel, host side: the lines it writes on its output, read within a time budget and
a size bound, and the replies written to its FIFO within a time limit. Anything that is not a line of the
protocol is a ``Violation``."""

from __future__ import annotations

import contextlib
import os
import select
import time
from collections.abc import Callable

#: the longest protocol line accepted from the worker
MAX_LINE_BYTES = 16 << 20


class Violation(Exception):
    """The worker broke the protocol."""


def read_line(fd: int, buffer: bytearray, budget_s: float,
               limit: Callable[[], float] | None = None) -> tuple[bytes | None, float]:
    """The next line from the worker (None at end of file) and the budget left. ``limit`` (the run's say:
    how long to wait before asking it again; it raises to end the unit) is asked before every wait."""
    while True:
        end = buffer.find(b"\n")
        if end >= 0:
            line = bytes(buffer[:end])
            del buffer[: end + 1]
            return line, budget_s
        if len(buffer) > MAX_LINE_BYTES:
            raise Violation(f"a line over {MAX_LINE_BYTES} bytes")
        if budget_s <= 0:
            raise TimeoutError
        wait = budget_s if limit is None else max(0.0, min(budget_s, limit()))
        before = time.monotonic()
        ready, _, _ = select.select([fd], [], [], wait)
        budget_s -= time.monotonic() - before
        if not ready:
            continue
        try:
            data = os.read(fd, 1 << 16)
        except BlockingIOError:
            continue
        if not data:
            return (bytes(buffer) if buffer else None), budget_s
        buffer += data


def write_all(fd: int, data: bytes, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    view = memoryview(data)
    while view:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        _, ready, _ = select.select([], [fd], [], left)
        if ready:
            with contextlib.suppress(BlockingIOError):
                view = view[os.write(fd, view):]
