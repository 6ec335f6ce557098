"""The lines a client sends, before the SDK reads them (REQ-ACP-016).

The SDK skips a line that is not JSON (it logs it), but a line of JSON that is not an object (``[1]``, ``42``,
``null``) stops its receive loop, and with it the agent. Only lines that may be JSON-RPC messages (an object,
``{`` first) are passed on; any other is logged and skipped, as the SDK does for a line that is not JSON."""

from __future__ import annotations

import asyncio
import logging

log = logging.getLogger(__name__)


async def _line(source: asyncio.StreamReader) -> bytes:
    """The next line, however long (the reader's limit only sizes its buffer), b"" at the end."""
    chunks: list[bytes] = []
    while True:
        try:
            chunks.append(await source.readuntil(b"\n"))
            return b"".join(chunks)
        except asyncio.LimitOverrunError as exc:
            chunks.append(await source.readexactly(exc.consumed))
        except asyncio.IncompleteReadError as exc:
            chunks.append(exc.partial)
            return b"".join(chunks)


def objects_only(source: asyncio.StreamReader) -> asyncio.StreamReader:
    """A reader that gives the lines of ``source`` that start with ``{``; the others are logged and skipped."""
    reader = asyncio.StreamReader()

    async def pump() -> None:
        try:
            while line := await _line(source):
                head = line.lstrip()[:1]
                if head in (b"{", b""):
                    reader.feed_data(line)
                else:
                    log.warning("a line from the ACP client was skipped: it is not a JSON-RPC message (a JSON "
                                "object; it starts %r, %d bytes)", head, len(line))  # its text is not logged
        finally:
            reader.feed_eof()

    _pumps.add(task := asyncio.ensure_future(pump()))
    task.add_done_callback(_pumps.discard)
    return reader


_pumps: set[asyncio.Future[None]] = set()
