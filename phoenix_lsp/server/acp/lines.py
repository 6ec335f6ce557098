"""The lines a client sends, before the SDK reads them (REQ-ACP-016, REQ-ACP-019).

The SDK skips a line that is not JSON (it logs it), but a line of JSON that is not an object (``[1]``, ``42``,
``null``) stops its receive loop, and with it the agent. Only lines that may be JSON-RPC messages (an object,
``{`` first) are passed on; any other is logged and skipped, as the SDK does for a line that is not JSON.

A line over the cap the LSP side has for a message (``PHOENIX_MAX_MESSAGE_BYTES``) is thrown away as it arrives,
never held whole; when its head holds a request's id, that request is answered with an error saying so. A line
nested deeper than ``safe_json.MAX_DEPTH`` or holding more tokens than ``PHOENIX_MAX_MESSAGE_TOKENS`` is skipped
before the SDK reads it (the SDK's observer deep-copies each message: a RecursionError there ended its receive
loop), and its request answered likewise (REQ-PROTO-061)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable

from ... import limits
from ..transport import ID_WINDOW, message_id, request_id

log = logging.getLogger(__name__)

#: the buffer of the reader of stdin: the most of a line read at a time
READ_LIMIT = 1024 * 1024
#: JSON-RPC's "Invalid Request", as the LSP side answers a message it refused
INVALID_REQUEST = -32600


async def _line(source: asyncio.StreamReader, cap: int, refuse: Callable[[bytes, int], None]) -> bytes | None:
    """The next line, b"" at the end; None for a line over ``cap`` bytes (its newline aside): that one is read on
    and thrown away chunk by chunk, and ``refuse(head, bytes read so far)`` is called once, when it crosses the
    cap."""
    chunks: list[bytes] = []
    size = 0
    dropped = False
    while True:
        try:
            chunk, done = await source.readuntil(b"\n"), True
        except asyncio.LimitOverrunError as exc:
            chunk, done = await source.readexactly(exc.consumed), False
        except asyncio.IncompleteReadError as exc:
            chunk, done = exc.partial, True
        size += len(chunk)
        if not dropped:
            chunks.append(chunk)
            if size - (done and chunk.endswith(b"\n")) > cap:
                dropped = True
                refuse(b"".join(chunks)[:ID_WINDOW], size)
                chunks.clear()
        if done:
            return None if dropped else b"".join(chunks)


def refusal(msg_id: int | str, size: int, cap: int) -> bytes:
    """The error answer to a request over the cap, as one line."""
    message = (f"Message refused: it is {size:,}+ bytes, over the limit of {cap:,} bytes "
               "(PHOENIX_MAX_MESSAGE_BYTES sets the limit; a longer message could exhaust the agent's memory). It "
               "was not read: send less (e.g. fewer or smaller images or attachments), or raise the limit.")
    answer = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": INVALID_REQUEST, "message": message}}
    return (json.dumps(answer, separators=(",", ":")) + "\n").encode("utf-8")


def bounds_refusal(msg_id: int | str, reason: str) -> bytes:
    """The error answer to a request over the line's bounds (nesting, tokens), as one line."""
    message = (f"Message refused: {reason}. The agent goes on serving; send the request again with less in it.")
    answer = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": INVALID_REQUEST, "message": message}}
    return (json.dumps(answer, separators=(",", ":")) + "\n").encode("utf-8")


def objects_only(source: asyncio.StreamReader, writer: asyncio.StreamWriter | None = None,
                 cap: int = 2**31 - 1, tokens: int = limits.DEFAULT_MAX_MESSAGE_TOKENS) -> asyncio.StreamReader:
    """A reader that gives the lines of ``source`` that start with ``{`` and hold at most ``cap`` bytes, nest at
    most ``safe_json.MAX_DEPTH`` levels and hold at most ``tokens`` strings, commas and brackets (REQ-PROTO-061);
    the others are logged and skipped, and a request among them is answered on ``writer``. A line over
    ``limits.OFF_LOOP_BYTES`` is measured in a thread."""
    reader = asyncio.StreamReader()
    bounds = limits.message(cap, tokens)

    def measured(line: bytes) -> str | None:
        try:
            bounds.check(line)
        except limits.Refused as exc:
            return str(exc)
        return None

    async def over(line: bytes) -> bool:
        """Whether the line is over its bounds (then it is logged, and its request answered)."""
        if len(line) > limits.OFF_LOOP_BYTES:
            reason = await asyncio.get_running_loop().run_in_executor(None, measured, line)
        else:
            reason = measured(line)
        if reason is None:
            return False
        msg_id = message_id(line)
        log.warning("a line from the ACP client was skipped (%d bytes): %s; %s", len(line), reason,
                    "its request is answered an error" if msg_id is not None else "it holds no request id")
        if msg_id is not None and writer is not None:
            writer.write(bounds_refusal(msg_id, reason))
        return True

    def refuse(head: bytes, size: int) -> None:
        msg_id = request_id(head)
        log.warning("a line from the ACP client was skipped: it is %d+ bytes, over the limit of %d "
                    "(PHOENIX_MAX_MESSAGE_BYTES); %s", size, cap,
                    "its request is answered an error" if msg_id is not None else "it holds no request id")
        if msg_id is not None and writer is not None:
            # one write of the whole line: the SDK's sender also writes each message in one call, so the two never
            # interleave on stdout
            writer.write(refusal(msg_id, size, cap))

    async def pump() -> None:
        try:
            while (line := await _line(source, cap, refuse)) != b"":
                if line is None:
                    continue
                head = line.lstrip()[:1]
                if head == b"{" and await over(line):  # before the SDK decodes it and walks it (a deep copy)
                    continue
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
