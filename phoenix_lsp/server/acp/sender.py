"""Updates sent in the order they were made.

The runtime tells the adapter about events synchronously; the SDK sends asynchronously. Each send waits for the
one before it, so a client sees a tool call before its updates, the text before the prompt's answer, and a
replayed history before the ``session/load`` answer (REQ-ACP-012)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)


class Sender:
    """One chain of sends per connection."""

    def __init__(self, spawn: Callable[[Any], asyncio.Task[Any]]) -> None:
        self.spawn = spawn
        self.last: asyncio.Task[Any] | None = None

    def send(self, make: Callable[[], Awaitable[Any]]) -> None:
        """Send what ``make()`` sends once everything sent before is out."""
        self.last = self.spawn(self._after(self.last, make))

    async def _after(self, before: asyncio.Task[Any] | None, make: Callable[[], Awaitable[Any]]) -> None:
        if before is not None:
            with contextlib.suppress(BaseException):
                await asyncio.shield(before)
        try:
            await make()
        except Exception as exc:  # the client went away, or refused an update: the conversation goes on
            log.warning("an update could not be sent to the ACP client (%s)", exc)

    async def drained(self) -> None:
        """Wait until everything sent so far is out."""
        while self.last is not None and not self.last.done():
            last = self.last
            with contextlib.suppress(BaseException):
                await asyncio.shield(last)
